"""GEMM and GEMM + row sum (PipeThreader's MatMul+Sum) templates.

Both kernels share one main loop (:func:`_gemm_mainloop`): a tile of ``A`` and
one of ``B`` are copied to shared memory and multiplied into an fp32 fragment
inside a plain ``T.Pipelined`` loop over ``K``; they differ only in what they
do with the accumulator afterwards. With ``trans_B`` the kernels read ``B`` as
``[N, K]`` (PyTorch's ``linear`` weight) and multiply by its transpose: the tile
is copied as it lies and ``T.gemm(transpose_B=True)`` reads it K-major.
"""
# No ``from __future__ import annotations``: T.prim_func evaluates the
# parameter annotations against the builder's locals (shapes, dtype).
from typing import Any, Mapping

import tilelang.language as T
import torch

from .base import FAST_MATH, Template, TemplateError, operand, priced, size

__all__ = ["GEMM", "GEMM_ROWSUM", "GEMM_SWIGLU", "GEMM_ROPE"]

_DTYPES = ("float16", "bfloat16")
_ACCUM = "float32"
# The largest output tile: a 256x160 fp32 accumulator, 160 registers a thread on two consumer warpgroups (cuBLAS's
# tile at 2500 tokens; ptxas fits the consumers in 168 without spills). A 256x192 tile (192 a thread) measured
# 1.2-1.4x slower than 128x256 on the layer GEMMs of one H200 (benchmarks/results/2026-11-26-h200-layer-gemms),
# though the model priced it faster.
_MAX_TILE = 256 * 160
# A tensor map addresses rows, and starts boxes, only on 16-byte boundaries (a box starting off one stops the
# kernel with an illegal instruction), and stores a row from a 32-byte boundary (a sector) at 1.5x the rate it
# stores it from a 16-byte one (benchmarks/results/2026-11-28-h200-row-groups): rows of 2-byte elements 16 apart
# lie on sectors, 8 apart on 16-byte boundaries.
_BYTES, _ALIGN, _GROUPS = 2, 16, (16, 8)


def _b_shape(N: int, K: int, trans_B: bool) -> tuple[int, int]:
    """``B``'s shape: ``[K, N]``, or ``[N, K]`` when it is multiplied transposed."""
    return (N, K) if trans_B else (K, N)


def _gemm_mainloop(K: int, dtype: str, trans_B: bool, block_M: int, block_N: int, block_K: int, num_stages: int,
                   gate_rows: int = 0, swap_ab: bool = False, lead: int = 0):
    """The shared tile program, a macro every kernel inlines: ``C_l = A[rows m0.., columns a0..] @ op(B)[columns
    n0..]`` (of a fused gate/up weight, rows ``n0..`` of each half).
    With ``gate_rows`` (a fused gate/up weight ``[2N, K]``, ``N = gate_rows``, read as it lies) the tile of ``B``
    is the gate projection's ``block_N / 2`` rows of block column ``bx`` stacked on the up projection's same rows,
    so one gemm computes both halves side by side in ``C_l``. With ``swap_ab`` (``trans_B`` only) the gemm
    computes the tile transposed, ``C_l[block_N, block_M] = B_s @ A_s^T``: ``A``'s rows (a layer's tokens) become
    the tensor core's N side, any multiple of 16, so a tile can cover a token count tightly.
    With ``lead`` (``B`` as ``[K, N]``) the K tiles start ``k0 < 0`` (at most ``lead`` columns) before ``A``'s row,
    at a column TMA can start a box on: the tiles' columns outside ``[0, K)``, a neighbouring row's, are zeroed in
    shared memory before the gemm (``B``'s rows there are TMA's zeros)."""
    half = block_N // 2
    steps = T.ceildiv(K + lead, block_K)

    @T.macro
    def mainloop(A, B, C_l, m0, n0, a0, k0=0):
        A_s = T.alloc_shared((block_M, block_K), dtype)
        B_s = T.alloc_shared(_b_shape(block_N, block_K, trans_B), dtype)
        T.clear(C_l)
        for k in T.Pipelined(steps, num_stages=num_stages):
            T.copy(A[m0, a0 + k0 + k * block_K], A_s)
            if gate_rows:
                T.copy(B[n0, k * block_K], B_s[0:half, :])
                T.copy(B[gate_rows + n0, k * block_K], B_s[half:block_N, :])
            elif trans_B:
                T.copy(B[n0, k * block_K], B_s)
            else:
                T.copy(B[k0 + k * block_K, n0], B_s)
            if lead and (k0 + k * block_K < 0 or k0 + (k + 1) * block_K > K):
                for i, j in T.Parallel(block_M, block_K):
                    if k0 + k * block_K + j < 0 or k0 + k * block_K + j >= K:
                        A_s[i, j] = T.cast(0, dtype)
            if swap_ab:
                T.gemm(B_s, A_s, C_l, transpose_B=True)
            else:
                T.gemm(A_s, B_s, C_l, transpose_B=trans_B)

    return mainloop


def _operand(shape: tuple, dtype: str, row_stride: int) -> Any:
    """A global operand's type: rows packed, or (``row_stride``) ``row_stride`` elements apart, as in a view of
    a wider tensor's columns or rows copied to 16-byte boundaries, where TMA can address them."""
    return operand(shape, dtype, (row_stride, 1) if row_stride else ())


def build_gemm(
    M: int, N: int, K: int, dtype: str, trans_B: bool,
    block_M: int, block_N: int, block_K: int, threads: int, num_stages: int, swap_ab: int = 0,
    dynamic_M: bool = False, lda: int = 0, ldb: int = 0, row_group: int = 0,
):
    """``C = A @ B`` (``A @ B^T`` with ``trans_B``) with fp32 accumulation; ``C`` is stored in the input
    dtype through shared memory (transposed back there when ``swap_ab`` computed the tile transposed).
    ``dynamic_M``: one kernel for every row count, priced at ``M``. ``lda``, ``ldb``: the row strides of ``A``
    and ``B`` in elements (0: packed rows). ``row_group``: how many rows apart a tile takes its rows where
    ``C``'s rows start off 16-byte boundaries (:func:`_row_group`; 0 chooses, 1 keeps consecutive rows)."""
    rows = size("M", M, dynamic_M)
    a_type, b_type = _operand((rows, K), dtype, lda), _operand(_b_shape(N, K, trans_B), dtype, ldb)
    group = _row_group(M, N, K, trans_B, dynamic_M, lda, block_K, swap_ab, row_group, ldb)
    if group > 1:
        return _gemm_row_groups(M, N, K, dtype, trans_B, block_M, block_N, block_K, threads, num_stages, lda, group,
                                a_type, b_type)
    mainloop = _gemm_mainloop(K, dtype, trans_B, block_M, block_N, block_K, num_stages, swap_ab=bool(swap_ab))
    to_shared = _to_shared(block_M, block_N, bool(swap_ab))

    @T.prim_func
    def gemm(A: a_type, B: b_type, C: T.Tensor((rows, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(rows, block_M), threads=threads) as (bx, by):
            C_l = T.alloc_fragment(_accumulator(block_M, block_N, swap_ab), _ACCUM)
            C_s = T.alloc_shared((block_M, block_N), dtype)
            mainloop(A, B, C_l, by * block_M, bx * block_N, 0)
            to_shared(C_l, C_s)
            T.copy(C_s, C[by * block_M, bx * block_N])

    return priced(gemm, {"M": M} if dynamic_M else {})


def _row_group(M: int, N: int, K: int, trans_B: bool, dynamic_M: bool, lda: int, block_K: int, swap_ab: int,
               row_group: int = 0, ldb: int = 0) -> int:
    """How many rows apart ``build_gemm``'s tiles take their rows (:func:`_gemm_row_groups`; 1: consecutive rows):
    ``row_group`` where pinned and it fits, else 16, else 8, where ``M`` is static and whole groups of that many,
    and either ``C``'s rows start off 16-byte boundaries (no tensor map addresses them one by one), ``B`` lies
    ``[N, K]`` (a tile's first column is a row of it, which TMA can start anywhere) and ``A``'s rows lie on
    16-byte boundaries in a whole number of K tiles (a last, partial tile of a row would read the next), or
    ``A``'s rows start off 16-byte boundaries, ``B`` lies ``[K, N]`` (its tile's first row moves with the
    residue's columns, before row 0 on the first step: TMA's zeros) and ``B``'s and ``C``'s rows on 16-byte
    boundaries."""
    a_off, c_off = (lda or K) * _BYTES % _ALIGN, N * _BYTES % _ALIGN
    if trans_B:
        serves = c_off and not a_off and K % block_K == 0
    else:
        serves = a_off and not c_off and not (ldb or N) * _BYTES % _ALIGN
    if row_group == 1 or not serves or dynamic_M or swap_ab:
        return 1
    fits = [group for group in _GROUPS if M % group == 0 and row_group in (0, group)]
    return fits[0] if fits else 1


def _gemm_row_groups(M: int, N: int, K: int, dtype: str, trans_B: bool, block_M: int, block_N: int, block_K: int,
                     threads: int, num_stages: int, lda: int, group: int, a_type: Any, b_type: Any):
    """``C = A @ op(B)`` where the rows of ``C`` (an odd vocabulary: GPT-2's 50257; ``trans_B``) or of ``A`` (an odd
    K; ``B`` as ``[K, N]``) start off 16-byte boundaries, where no tensor map addresses them one by one.
    Rows ``group`` apart lie ``2 group`` row lengths of bytes apart, so ``A`` and ``C`` are read and written
    through views ``[M / group, group K]`` and ``[M / group, group N]`` whose row ``g`` holds rows ``group g ..``
    side by side, and a block computes the rows ``group g + q`` of one residue ``q`` (consecutive rows of the
    views), the misaligned operand's columns starting at that residue's first boundary of ``2 group`` bytes:
    ``C``'s plus whole tiles, so its staged tile is one TMA store away, as a tile-multiple GEMM's is, where TileLang
    would store every element from a thread (each residue's columns before that boundary, which block column 0
    computes, and its last, partial tile are stored an element a thread); ``A``'s less ``group`` columns, so the
    K tiles start before the row (:func:`_gemm_mainloop`'s ``lead``)."""
    groups, a_row = M // group, lda or K
    mainloop = _gemm_mainloop(K, dtype, trans_B, block_M, block_N, block_K, num_stages, lead=0 if trans_B else group)
    extra = 1 if trans_B else 0  # the C case's block column 0: the columns before each residue's boundary

    @T.prim_func
    def gemm(A: a_type, B: b_type, C: T.Tensor((M, N), dtype)):
        A_g = T.decl_buffer((groups, group * a_row), dtype, data=A.data)
        C_g = T.decl_buffer((groups, group * N), dtype, data=C.data)
        with T.Kernel(T.ceildiv(N, block_N) + extra, T.ceildiv(groups, block_M) * group, threads=threads) as (bx, by):
            C_l = T.alloc_fragment((block_M, block_N), _ACCUM)
            C_s = T.alloc_shared((block_M, block_N), dtype)
            q, g0 = by % group, by // group * block_M
            if trans_B:
                lead = (group - q * N % group) % group  # columns of row group * g + q before its first boundary
                n0 = T.if_then_else(bx == 0, 0, lead + (bx - 1) * block_N)
                mainloop(A_g, B, C_l, g0, n0, q * a_row)
            else:
                lead = (group - q * a_row % group) % group
                n0 = bx * block_N
                mainloop(A_g, B, C_l, g0, n0, q * a_row, lead - group)
            T.copy(C_l, C_s)
            if (bx > 0 or not trans_B) and n0 + block_N <= N:
                T.copy(C_s, C_g[g0, q * N + n0])
            else:
                for i, j in T.Parallel(block_M, block_N):
                    if g0 + i < groups and n0 + j < N and (bx > 0 or not trans_B or j < lead):
                        C_g[g0 + i, q * N + n0 + j] = C_s[i, j]

    return gemm


def _accumulator(block_M: int, block_N: int, swap_ab: int) -> tuple[int, int]:
    """The fp32 fragment's shape: ``[block_M, block_N]``, transposed for a swapped tile."""
    return (block_N, block_M) if swap_ab else (block_M, block_N)


def _to_shared(block_M: int, block_N: int, swap_ab: bool):
    """A macro: the accumulator ``C_l`` rounded into the ``[block_M, block_N]`` shared tile ``C_s`` (transposed
    back from a swapped tile's ``[block_N, block_M]``)."""

    @T.macro
    def to_shared(C_l, C_s):
        if swap_ab:
            for i, j in T.Parallel(block_N, block_M):
                C_s[j, i] = C_l[i, j]
        else:
            T.copy(C_l, C_s)

    return to_shared


def build_gemm_rope(
    M: int, K: int, heads: int, kv_heads: int, head_dim: int, seqlen: int, dtype: str,
    block_M: int, block_N: int, block_K: int, threads: int, num_stages: int, swap_ab: int = 0,
    dynamic_M: bool = False,
):
    """An attention layer's fused QKV projection with its rotary embedding: ``C = A @ W^T`` for ``W [N, K]`` (the
    query heads' rows, then the key heads', then the value heads'), the query and key heads rotated in the
    epilogue (``x cos + rotate_half(x) sin``, HF's pairing of a head's halves, at position ``row % seqlen``), so
    ``C`` viewed ``[batch, seqlen, heads + 2 kv_heads, head_dim]`` is what packed attention reads and no rotated
    copy reaches global memory. The projection is rounded to the input dtype in shared memory before the
    rotation, as ``rope(F.linear(...))`` rounds it; the rotation reads it there and stores to ``C`` directly (a
    rotated element needs its partner's old value, so it cannot be written back in place), in rows of 16 bytes.
    ``dynamic_M``: one kernel for every row count and sequence length (both kernel arguments), priced at ``M`` and
    ``seqlen``."""
    rows, positions = size("M", M, dynamic_M), size("seqlen", seqlen, dynamic_M)
    D, half = head_dim, head_dim // 2
    N, rotated = (heads + 2 * kv_heads) * head_dim, (heads + kv_heads) * head_dim
    mainloop = _gemm_mainloop(K, dtype, True, block_M, block_N, block_K, num_stages, swap_ab=bool(swap_ab))
    to_shared = _to_shared(block_M, block_N, bool(swap_ab))

    @T.prim_func
    def gemm_rope(A: T.Tensor((rows, K), dtype), W: T.Tensor((N, K), dtype), cos: T.Tensor((positions, D), dtype),
                  sin: T.Tensor((positions, D), dtype), C: T.Tensor((rows, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(rows, block_M), threads=threads) as (bx, by):
            C_l = T.alloc_fragment(_accumulator(block_M, block_N, swap_ab), _ACCUM)
            C_s = T.alloc_shared((block_M, block_N), dtype)
            mainloop(A, W, C_l, by * block_M, bx * block_N, 0)
            to_shared(C_l, C_s)
            for i, j in T.Parallel(block_M, block_N):
                if by * block_M + i < rows:
                    d, pos = j % D, (by * block_M + i) % positions
                    x = T.Cast(_ACCUM, C_s[i, j])
                    partner = T.Cast(_ACCUM, C_s[i, j - d + (d + half) % D]) * T.if_then_else(d < half, -1.0, 1.0)
                    turned = x * T.Cast(_ACCUM, cos[pos, d]) + partner * T.Cast(_ACCUM, sin[pos, d])
                    C[by * block_M + i, bx * block_N + j] = T.Cast(dtype, T.if_then_else(bx * block_N < rotated,
                                                                                          turned, x))

    return priced(gemm_rope, {"M": M, "seqlen": seqlen} if dynamic_M else {})


def build_gemm_rowsum(
    M: int, N: int, K: int, dtype: str, trans_B: bool,
    block_M: int, block_N: int, block_K: int, threads: int, num_stages: int,
):
    """``C = A @ B`` and ``S += rowsum(C)`` (fp32), fused after the main loop.

    Each block reduces its fp32 accumulator along N and adds the ``block_M``
    partial sums into ``S`` with ``T.atomic_add``: the grid keeps all
    ``M/block_M * N/block_N`` blocks in parallel, so ``S`` is an in/out
    parameter that must be zero on entry (TileLang allocates ``out_idx``
    outputs with ``torch.empty``), and only ``C`` is in ``out_idx``.
    """
    mainloop = _gemm_mainloop(K, dtype, trans_B, block_M, block_N, block_K, num_stages)
    b_shape = _b_shape(N, K, trans_B)

    @T.prim_func
    def gemm_rowsum(
        A: T.Tensor((M, K), dtype), B: T.Tensor(b_shape, dtype),
        S: T.Tensor((M,), _ACCUM), C: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            C_l = T.alloc_fragment((block_M, block_N), _ACCUM)
            C_s = T.alloc_shared((block_M, block_N), dtype)
            S_l = T.alloc_fragment((block_M,), _ACCUM)
            S_s = T.alloc_shared((block_M,), _ACCUM)
            mainloop(A, B, C_l, by * block_M, bx * block_N, 0)
            T.reduce_sum(C_l, S_l, dim=1)
            T.copy(S_l, S_s)
            T.atomic_add(S[by * block_M:(by + 1) * block_M], S_s)
            T.copy(C_l, C_s)
            T.copy(C_s, C[by * block_M, bx * block_N])

    return gemm_rowsum


def build_gemm_swiglu(
    M: int, N: int, K: int, dtype: str,
    block_M: int, block_N: int, block_K: int, threads: int, num_stages: int, swap_ab: int = 0,
    dynamic_M: bool = False,
):
    """``C = silu(A @ W_gate^T) * (A @ W_up^T)`` for the fused weight ``W = [W_gate; W_up]`` (``[2N, K]``, as a
    gated MLP's gate/up projection lies). A block computes ``block_N / 2`` output columns: one gemm of its ``A``
    tile with the gate's and the up projection's rows of those columns stacked into one ``B`` tile, then the
    gated product of the two halves (through shared memory: TileLang's fragments take one index pattern per
    loop), so the ``[M, 2N]`` projection never reaches global memory. Gate and up are rounded to the input
    dtype before the gating, as ``F.silu(gate) * up`` over ``F.linear``'s output rounds them. A half that is not
    a power of two (112 columns) or a swapped tile (``swap_ab``: the tokens on the tensor core's N side, the
    accumulator transposed) keeps the halves in shared memory as ``[2, block_M, half]``: TileLang 0.1.15 cannot
    TMA-store a column slice of a swizzled ``[block_M, 224]`` tile (a layout divisibility check).
    ``dynamic_M``: one kernel for every row count, priced at ``M``."""
    half = block_N // 2
    split = bool(half & (half - 1)) or bool(swap_ab)
    mainloop = _gemm_mainloop(K, dtype, True, block_M, block_N, block_K, num_stages, gate_rows=N,
                              swap_ab=bool(swap_ab))
    rows = size("M", M, dynamic_M)

    @T.prim_func
    def gemm_swiglu(A: T.Tensor((rows, K), dtype), W: T.Tensor((2 * N, K), dtype), C: T.Tensor((rows, N), dtype)):
        with T.Kernel(T.ceildiv(N, half), T.ceildiv(rows, block_M), threads=threads) as (bx, by):
            C_l = T.alloc_fragment(_accumulator(block_M, block_N, swap_ab), _ACCUM)
            C_s = T.alloc_shared((2, block_M, half) if split else (block_M, block_N), dtype)
            mainloop(A, W, C_l, by * block_M, bx * half, 0)
            if swap_ab:
                for i, j in T.Parallel(block_N, block_M):
                    C_s[i // half, j, i % half] = C_l[i, j]
            elif split:
                for i, j in T.Parallel(block_M, block_N):
                    C_s[j // half, i, j % half] = C_l[i, j]
            if split:
                for i, j in T.Parallel(block_M, half):
                    C_s[0, i, j] = C_s[0, i, j] / (1.0 + T.exp(-C_s[0, i, j])) * C_s[1, i, j]
                T.copy(C_s[0, :, :], C[by * block_M:(by + 1) * block_M, bx * half:(bx + 1) * half])
            else:
                T.copy(C_l, C_s)
                for i, j in T.Parallel(block_M, half):
                    C_s[i, j] = C_s[i, j] / (1.0 + T.exp(-C_s[i, j])) * C_s[i, j + half]
                T.copy(C_s[:, 0:half], C[by * block_M, bx * half])

    return priced(gemm_swiglu, {"M": M} if dynamic_M else {})


# swap_ab: token tiles (the tensor core's N side) that a layer's token counts fill tightly with few tiles: 777 in
# 4 x 208, 5 x 160 or 7 x 112, 2500 in 12 x 224 (multiples of 16: wgmma takes N in multiples of 8, but TileLang
# 0.1.15 splits an N of 200 or 216 into n8 wgmmas; powers of two are tiles of the plain orientation)
_SWAP_ROWS = (112, 160, 208, 224)


def _check(problem: Mapping[str, Any], tile: Mapping[str, Any]) -> None:
    """Reject dtypes the kernels do not take and non-positive sizes; any M, N, K fits any tile (ragged edge
    tiles are zero-filled on load and clipped on store by TileLang's copies)."""
    if problem["dtype"] not in _DTYPES:
        raise TemplateError(f"gemm: parameter 'dtype' must be one of {_DTYPES}, got {problem['dtype']!r}")
    for flag in ("trans_B", "dynamic_M"):
        if not isinstance(problem.get(flag, True), bool):
            raise TemplateError(f"gemm: parameter {flag!r} must be a bool, got {problem[flag]!r}")
    b_cols = problem["K"] if problem.get("trans_B") else problem["N"]
    for key, cols in (("lda", problem["K"]), ("ldb", b_cols)):
        stride = problem.get(key, 0)
        if not isinstance(stride, int) or isinstance(stride, bool) or (stride and stride < cols):
            raise TemplateError(f"gemm: parameter {key!r} (a row stride in elements, 0 for packed rows) must be 0 "
                                f"or at least the row's {cols} elements, got {stride!r}")
    params = {**problem, **tile}
    for key in ("M", "N", "K", "block_M", "block_N", "block_K", "threads"):
        if not isinstance(params[key], int) or isinstance(params[key], bool) or params[key] <= 0:
            raise TemplateError(f"gemm: parameter {key!r} must be a positive int, got {params[key]!r}")
    if tile["threads"] % 32:
        raise TemplateError(f"gemm: parameter 'threads' must be a multiple of 32, got {tile['threads']}")
    if tile.get("swap_ab") not in (None, 0, 1):
        raise TemplateError(f"gemm: parameter 'swap_ab' must be 0 or 1, got {tile['swap_ab']!r}")
    if tile.get("swap_ab"):
        if problem.get("dynamic_M"):
            raise TemplateError("gemm: 'swap_ab' fits a tile to a known token count; with 'dynamic_M' the count is "
                                "a kernel argument")
        if not problem.get("trans_B", True):  # gemm_swiglu's fused weight has no trans_B: it lies [2N, K]
            raise TemplateError("gemm: 'swap_ab' multiplies B as it lies ([N, K]): it needs trans_B")
        if tile["block_N"] % 64 or tile["block_M"] not in _SWAP_ROWS:
            raise TemplateError(f"gemm: a swapped tile needs block_N a multiple of 64 (the tensor core's M side) "
                                f"and block_M one of {_SWAP_ROWS} (its N side), got {tile['block_M']}x"
                                f"{tile['block_N']}")
    elif tile["block_M"] % 64:
        raise TemplateError(f"gemm: parameter 'block_M'={tile['block_M']} must be a multiple of 64 (the tensor "
                            "core's M side) unless the tile is swapped (swap_ab)")
    group = tile.get("row_group", 0)
    if group not in (0, 1, *_GROUPS):
        raise TemplateError(f"gemm: parameter 'row_group' must be 0 (chosen), 1 (consecutive rows) or one of "
                            f"{_GROUPS}, got {group!r}")
    if group in _GROUPS and _row_group(params["M"], params["N"], params["K"], bool(params.get("trans_B")),
                                       bool(params.get("dynamic_M")), params.get("lda", 0), params["block_K"],
                                       params.get("swap_ab", 0), group, params.get("ldb", 0)) != group:
        raise TemplateError(f"gemm: 'row_group'={group} takes a tile's rows {group} apart, which needs a static M "
                            f"that is a multiple of {group}, no swap_ab, and either C's rows off 16-byte boundaries "
                            f"with trans_B and A's rows on them in whole K tiles (block_K dividing K), or A's rows "
                            f"off 16-byte boundaries with B as [K, N] and B's and C's rows on them")
    if tile["block_M"] * tile["block_N"] > _MAX_TILE:
        raise TemplateError(f"gemm: parameters 'block_M' x 'block_N' = {tile['block_M']}x{tile['block_N']} hold more "
                            f"than {_MAX_TILE} fp32 accumulators (160 registers a thread over two warpgroups)")


def _rope_dims(problem: Mapping[str, Any]) -> tuple[int, int, int]:
    """``(n_q, n_kv, N)``: the query, the key (and value) and all columns of a QKV projection."""
    n_q, n_kv = problem["heads"] * problem["head_dim"], problem["kv_heads"] * problem["head_dim"]
    return n_q, n_kv, n_q + 2 * n_kv


def _check_rope(problem: Mapping[str, Any], tile: Mapping[str, Any]) -> None:
    """The GEMM's checks on ``A @ W^T``, and tiles that each hold whole heads of one of Q, K or V (a head's halves
    pair in the rotation; a tile is stored into one output); ``M`` is a whole number of sequences."""
    for key in ("heads", "kv_heads", "head_dim", "seqlen"):
        if not isinstance(problem[key], int) or isinstance(problem[key], bool) or problem[key] <= 0:
            raise TemplateError(f"gemm_rope: parameter {key!r} must be a positive int, got {problem[key]!r}")
    n_q, n_kv, N = _rope_dims(problem)
    _check({"M": problem["M"], "N": N, "K": problem["K"], "dtype": problem["dtype"], "trans_B": True,
            "dynamic_M": problem.get("dynamic_M", False)}, tile)
    if problem["head_dim"] % 2:
        raise TemplateError(f"gemm_rope: parameter 'head_dim' must be even, got {problem['head_dim']}")
    if problem["M"] % problem["seqlen"]:
        raise TemplateError(f"gemm_rope: M={problem['M']} must be batch x seqlen (seqlen={problem['seqlen']})")
    if tile["block_N"] % problem["head_dim"] or n_kv % tile["block_N"]:
        raise TemplateError(f"gemm_rope: parameter 'block_N'={tile['block_N']} must be a multiple of head_dim="
                            f"{problem['head_dim']} dividing the key heads' {n_kv} columns (a tile holds whole heads, "
                            "all rotated or none)")


def _randn(shape: tuple[int, ...], dtype: str, device: Any, generator: torch.Generator | None,
           scale: float = 1.0) -> torch.Tensor:
    """Normal values of standard deviation ``scale`` drawn on the generator's device, then cast and moved."""
    where = generator.device if generator is not None else device
    return (torch.randn(shape, generator=generator, device=where) * scale).to(device=device,
                                                                              dtype=getattr(torch, dtype))


def _make_gemm_inputs(problem: Mapping[str, Any], device: Any, generator: torch.Generator | None) -> tuple:
    """Random ``A[M, K]`` and ``B[K, N]`` (``[N, K]`` with ``trans_B``) in the problem dtype; with ``lda`` or
    ``ldb``, views of the first columns of wider random tensors."""
    M, N, K, dtype = problem["M"], problem["N"], problem["K"], problem["dtype"]
    a_shape, b_shape = (M, K), _b_shape(N, K, problem["trans_B"])
    return tuple(_randn((rows, stride or cols), dtype, device, generator)[:, :cols]
                 for (rows, cols), stride in ((a_shape, problem.get("lda", 0)), (b_shape, problem.get("ldb", 0))))


def _make_rowsum_inputs(problem: Mapping[str, Any], device: Any, generator: torch.Generator | None) -> tuple:
    """``A``, ``B`` as for GEMM plus the zeroed fp32 accumulator ``S[M]`` the kernel adds into."""
    return (*_make_gemm_inputs(problem, device, generator), torch.zeros(problem["M"], device=device))


def _make_swiglu_inputs(problem: Mapping[str, Any], device: Any, generator: torch.Generator | None) -> tuple:
    """Random ``A[M, K]`` and fused weight ``W[2N, K]`` in the problem dtype, scaled by ``1/sqrt(K)`` so the
    gate's pre-activations are O(1) (standard normals would put most of them deep in SiLU's flat tails)."""
    M, N, K, dtype = problem["M"], problem["N"], problem["K"], problem["dtype"]
    W = _randn((2 * N, K), dtype, device, generator, scale=K ** -0.5)
    return _randn((M, K), dtype, device, generator), W


def _swiglu_reference(A: torch.Tensor, W: torch.Tensor, **problem: Any) -> torch.Tensor:
    """``silu(A @ W_gate^T) * (A @ W_up^T)`` in float32."""
    gate, up = (A.float() @ W.float().T).chunk(2, dim=-1)
    return torch.nn.functional.silu(gate) * up


def _rope_tables(seqlen: int, head_dim: int, device: Any, dtype: str, theta: float = 500000.0) -> tuple:
    """``cos``, ``sin [seqlen, head_dim]`` of positions ``0..seqlen-1`` (LLaMA-3's ``theta``), in ``dtype``."""
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim)
    angles = torch.outer(torch.arange(seqlen, device=device, dtype=torch.float32), inv_freq).repeat(1, 2)
    return angles.cos().to(getattr(torch, dtype)), angles.sin().to(getattr(torch, dtype))


def _make_rope_inputs(problem: Mapping[str, Any], device: Any, generator: torch.Generator | None) -> tuple:
    """Random ``A[M, K]``, ``W[N, K]`` (scaled by ``1/sqrt(K)``: O(1) projections) and the rotary tables."""
    M, K, dtype = problem["M"], problem["K"], problem["dtype"]
    W = _randn((_rope_dims(problem)[2], K), dtype, device, generator, scale=K ** -0.5)
    return (_randn((M, K), dtype, device, generator), W,
            *_rope_tables(problem["seqlen"], problem["head_dim"], device, dtype))


def _rope_reference(A: torch.Tensor, W: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, **problem: Any
                    ) -> torch.Tensor:
    """``A @ W^T`` in float32 with the query and key heads rotated at position ``row % seqlen`` (the tables' rows:
    the sizes of a dynamic problem only price its kernel)."""
    n_q, n_kv, _ = _rope_dims(problem)
    D, M = problem["head_dim"], A.shape[0]
    C = (A.float() @ W.float().T).reshape(M, -1, D)
    pos = torch.arange(M, device=A.device) % cos.shape[0]
    c, s = cos.float()[pos][:, None], sin.float()[pos][:, None]
    qk = C[:, :(n_q + n_kv) // D]
    x1, x2 = qk.chunk(2, dim=-1)
    return torch.cat((qk * c + torch.cat((-x2, x1), dim=-1) * s, C[:, (n_q + n_kv) // D:]), dim=1).reshape(M, -1)


def _gemm_reference(A: torch.Tensor, B: torch.Tensor, **problem: Any) -> torch.Tensor:
    """``A @ B`` (``A @ B^T`` with ``trans_B``) in float32."""
    return A.float() @ (B.float().T if problem.get("trans_B") else B.float())


def _rowsum_reference(A: torch.Tensor, B: torch.Tensor, S: torch.Tensor, **problem: Any) -> tuple:
    """``(C, S)`` in float32 for a zero ``S`` on entry; ``S``'s current value is ignored so the
    reference stays right when computed after the kernel has added into it."""
    C = _gemm_reference(A, B, **problem)
    return C, C.sum(dim=1)


def _gemm_flops(problem: Mapping[str, Any]) -> float:
    """Multiply-adds of ``A @ B``."""
    return 2.0 * problem["M"] * problem["N"] * problem["K"]


def _rope_flops(problem: Mapping[str, Any]) -> float:
    """The projection's multiply-adds and three operations per rotated element."""
    n_q, n_kv, N = _rope_dims(problem)
    return 2.0 * problem["M"] * N * problem["K"] + 3.0 * problem["M"] * (n_q + n_kv)


def _rowsum_flops(problem: Mapping[str, Any]) -> float:
    """GEMM flops plus one add per element of ``C`` for the row sums."""
    return _gemm_flops(problem) + problem["M"] * problem["N"]


def _swiglu_flops(problem: Mapping[str, Any]) -> float:
    """Both halves' multiply-adds (``2 x 2MNK``) and the gate's SiLU and product (about 4 per output)."""
    return 4.0 * problem["M"] * problem["N"] * problem["K"] + 4.0 * problem["M"] * problem["N"]


_PROBLEM = {"M": 4096, "N": 4096, "K": 4096, "dtype": "float16", "trans_B": False}
_DYNAMIC = {"dynamic_M": False}  # True: a symbolic row count, M only prices it (the ops' token buckets)
_STRIDES = {"lda": 0, "ldb": 0}  # A's and B's row strides in elements; 0: packed rows
_TILE = {"block_M": 128, "block_N": 128, "block_K": 64, "threads": 128}
_TILE_SPACE = {"block_M": (64, 128, 256), "block_N": (64, 128, 160, 192, 224, 256), "block_K": (32, 64),
               "threads": (128, 256)}

GEMM = Template(
    name="gemm",
    builder=build_gemm,
    reference=_gemm_reference,
    problem={**_PROBLEM, **_DYNAMIC, **_STRIDES},
    tile={**_TILE, "swap_ab": 0, "row_group": 0},
    # row_group: 0, the template's choice (a pin, 1, 8 or 16, for experiments)
    tile_space={**_TILE_SPACE, "block_M": (*_TILE_SPACE["block_M"], *_SWAP_ROWS), "swap_ab": (0, 1), "row_group": (0,)},
    make_inputs=_make_gemm_inputs,
    flops=_gemm_flops,
    out_idx=(2,),
    check=_check,
    doc="C[M,N] = A[M,K] @ B[K,N], or A @ B[N,K]^T with trans_B (fp16/bf16 in and out, fp32 accumulation).",
)

GEMM_ROWSUM = Template(
    name="gemm_rowsum",
    builder=build_gemm_rowsum,
    reference=_rowsum_reference,
    problem=dict(_PROBLEM),
    tile=dict(_TILE),
    tile_space=dict(_TILE_SPACE),
    make_inputs=_make_rowsum_inputs,
    flops=_rowsum_flops,
    out_idx=(3,),
    inout_idx=(2,),
    check=_check,
    doc="C = A @ B and S[M] += rowsum(C) in fp32 (S is in/out, zero on entry; call kernel(A, B, S) -> C).",
)

GEMM_SWIGLU = Template(
    name="gemm_swiglu",
    builder=build_gemm_swiglu,
    reference=_swiglu_reference,
    problem={"M": 4096, "N": 14336, "K": 4096, "dtype": "float16", **_DYNAMIC},
    tile={**_TILE, "swap_ab": 0},
    # block_N: the B tile's rows, gate's and up's; the block's output is block_N / 2 columns wide
    tile_space={"block_M": (64, 128, *_SWAP_ROWS), "block_N": (128, 224, 256), "block_K": (32, 64),
                "threads": (128, 256), "swap_ab": (0, 1)},
    make_inputs=_make_swiglu_inputs,
    flops=_swiglu_flops,
    out_idx=(2,),
    check=_check,
    pass_configs=FAST_MATH,
    doc="C[M,N] = silu(A @ W[:N]^T) * (A @ W[N:]^T) for a fused gate/up weight W[2N,K] (fp16/bf16, fp32 accumulation).",
)

GEMM_ROPE = Template(
    name="gemm_rope",
    builder=build_gemm_rope,
    reference=_rope_reference,
    problem={"M": 4096, "K": 4096, "heads": 32, "kv_heads": 8, "head_dim": 128, "seqlen": 4096, "dtype": "float16",
             **_DYNAMIC},
    tile={**_TILE, "swap_ab": 0},
    tile_space={**_TILE_SPACE, "block_M": (*_TILE_SPACE["block_M"], *_SWAP_ROWS), "block_N": (64, 128, 256),
                "swap_ab": (0, 1)},
    make_inputs=_make_rope_inputs,
    flops=_rope_flops,
    out_idx=(4,),
    check=_check_rope,
    doc="C = A @ W^T for a fused QKV weight W [(heads + 2 kv_heads) head_dim, K], query and key heads rotated (RoPE, "
        "HF's halves, position row % seqlen) from cos/sin [seqlen, head_dim] tables (fp16/bf16, fp32 accumulation); "
        "dynamic_M: M and seqlen kernel arguments.",
)
