"""Mamba2 SSD chunk kernels: ``chunk_state`` and ``chunk_scan`` (Dao & Gu 2024, "Transformers are SSMs").

The state-space dual (SSD) layer splits the sequence into chunks of ``chunk``
positions. Within chunk ``c`` (positions ``l = 0..chunk-1``, absolute
``t = c*chunk + l``), with ``dA_cumsum[b,h,c,l]`` the running sum of ``A_h * dt``
inside the chunk (so non-increasing, since ``A < 0`` and ``dt > 0``):

* ``chunk_state``: the state a chunk leaves behind, from its own inputs only::

      states[b,c,h,p,n] = sum_l x[b,t,h,p] * dt[b,h,c,l]
                                * exp(dA_cumsum[b,h,c,L-1] - dA_cumsum[b,h,c,l]) * B[b,t,g(h),n]

* ``chunk_scan``: the chunk's output, intra-chunk (a causally masked, decayed
  ``C B^T`` "attention") plus the inter-chunk term from the state entering the
  chunk (``prev_states``, the output of mamba's state passing) plus the D skip::

      y[b,t,h,p] = sum_{s<=l} cb[b,c,g(h),l,s] * exp(dA_cumsum[..,l] - dA_cumsum[..,s]) * dt[..,s] * x[b,c*L+s,h,p]
                 + exp(dA_cumsum[b,h,c,l]) * sum_n C[b,t,g(h),n] * prev_states[b,c,h,p,n]
                 + D[h] * x[b,t,h,p]                                   (when has_d)

  where ``cb[b,c,g,l,s] = sum_n C[b,c*L+l,g,n] * B[b,c*L+s,g,n]`` is an *input*, as in
  mamba_ssm's ``_chunk_scan_fwd`` (its combined forward computes it with
  ``_bmm_chunk_fwd(..., output_dtype=torch.float32)``).

Groups: head ``h`` reads ``B``/``C``/``cb`` of group ``g(h) = h // (heads // groups)``.

The kernels and the references follow mamba_ssm 2.3.2's ``_chunk_state_fwd`` /
``_chunk_scan_fwd`` (no ``seq_idx``, no ``z``, ``D`` per head): argument order,
dtypes (x/B/C/prev_states in fp16/bf16; dt, dA_cumsum, cb and D in float32 as
mamba produces them; states out in float32, y out in x's dtype) and the guard
``exp(min(dA_cumsum[i] - dA_cumsum[j], 0))`` on the intra-chunk decays, which is
the plain SSD decay for a non-increasing ``dA_cumsum`` and keeps masked
entries finite otherwise. Like mamba, the decayed factor is rounded to the
input dtype before its tensor-core GEMM (``x * dt * decay`` in chunk_state,
the masked ``cb * decay * dt`` in chunk_scan); accumulation is float32.

Any sequence length: ``nchunks = ceil(seqlen / chunk)`` and the last chunk may be partial, as in
mamba_ssm: ``dt`` is 0 past the sequence's end (so ``dA_cumsum`` stays flat there and the last chunk's
state stops at its last position), and the kernels' copies zero-fill the rows of ``x``, ``B``, ``C`` past
the end and clip the stores of ``out`` there (the inputs are never padded by a copy). Any ``headdim`` and
(for ``chunk_state``) ``dstate``: the tiles over them are zero-filled and clipped likewise.

I/O contract (``nchunks = ceil(seqlen / chunk)``; ``dtype`` is float16 or bfloat16):

* ``chunk_state(B, x, dt, dA_cumsum) -> states`` (``out_idx=(4,)``):
  ``B [batch, seqlen, groups, dstate]`` dtype, ``x [batch, seqlen, heads, headdim]`` dtype,
  ``dt``, ``dA_cumsum [batch, heads, nchunks, chunk]`` float32;
  ``states [batch, nchunks, heads, headdim, dstate]`` float32.
* ``chunk_scan(cb, x, dt, dA_cumsum, C, prev_states[, D]) -> out`` (``out_idx=(-1,)``, the last
  parameter: ``D`` is a parameter only when ``has_d``): ``cb [batch, nchunks, groups, chunk, chunk]``
  float32 (``cb_dtype``; or the input dtype), ``x`` as above, ``dt``/``dA_cumsum`` as above,
  ``C [batch, seqlen, groups, dstate]`` dtype,
  ``prev_states [batch, nchunks, heads, headdim, dstate]`` dtype, ``D [heads]`` float32;
  ``out [batch, seqlen, heads, headdim]`` dtype.

The inputs of ``make_inputs`` are the positional arguments of mamba_ssm's
``_chunk_state_fwd(B, x, dt, dA_cumsum)`` and ``_chunk_scan_fwd(cb, x, dt, dA_cumsum, C, states[, D])``.
Neither kernel carries a schedule: one plain ``T.Pipelined`` loop each.
"""
# No ``from __future__ import annotations``: T.prim_func evaluates the
# parameter annotations against the builder's locals (shapes, dtype).
import math
from dataclasses import dataclass
from typing import Any, Mapping

import tilelang.language as T
import torch

from .base import FAST_MATH, Template, TemplateError, check_strides, named, operand, priced, size, strided

__all__ = ["CHUNK_STATE", "CHUNK_SCAN", "n_chunks"]

_DTYPES = ("float16", "bfloat16")
_ACCUM = "float32"
_LOG2E = 1.44269504  # exp(v) = exp2(v * log2(e)): exp2 is the SFU instruction


def _per_head(name: str, block_H: int, alloc: Any, *args: Any) -> list:
    """``block_H`` buffers of one allocation, named ``name`` (one head) or ``name_j``."""
    return [named(name if block_H == 1 else f"{name}_{j}", alloc, *args) for j in range(block_H)]


def n_chunks(seqlen: int, chunk: int) -> int:
    """Chunks of a sequence, the last one partial when ``chunk`` does not divide ``seqlen``."""
    return -(-seqlen // chunk)


def _lengths(seqlen: int, chunk: int, dynamic: bool) -> tuple:
    """The kernel's sequence length and chunk count: ``seqlen``'s, or two symbolic sizes (kernel arguments)
    that the ops check against each other (``nchunks = ceil(seqlen / chunk)``): a chunk count written as an
    expression of the length leaves TVM to solve the length from ``cb``, chunk_scan's first argument, which it
    cannot (TileLang 0.1.15)."""
    if dynamic:
        return size("seqlen", seqlen, True), size("nchunks", n_chunks(seqlen, chunk), True)
    return seqlen, n_chunks(seqlen, chunk)


def _view(shape: tuple, dtype: str, strides: tuple) -> Any:
    """The global type of a ``[batch, seqlen, heads or groups, last]`` tensor: packed, or a view at ``strides``
    (batch, sequence and head strides in elements: some columns of a fused projection, as Mamba2's ``x``, ``B``
    and ``C`` lie in its convolved in-projection), which TMA reads where it lies."""
    return operand(shape, dtype, (*strides, 1) if strides else ())


def _hints(seqlen: int, chunk: int, dynamic: bool) -> dict:
    """The symbolic sizes of :func:`_lengths` priced at ``seqlen``."""
    return {"seqlen": seqlen, "nchunks": n_chunks(seqlen, chunk)} if dynamic else {}


@dataclass(frozen=True)
class _Blk:
    """Where a block works: batch ``b``, column tile ``t``, chunk ``c``, first head ``h`` and its B/C group
    ``g``, as expressions of ``blockIdx.x = b * tiles + t`` and ``blockIdx.z = c * (heads / block_H) + h /
    block_H`` (heads vary fastest, so consecutive blocks of one group reuse the same B/C/cb tiles from L2). A
    block takes ``block_H`` consecutive heads of one group (``h .. h + block_H - 1``). The batch rides on
    ``blockIdx.x`` because ``blockIdx.z`` stops at 65535 (batch 64 x 16 chunks x 64 heads is 65536).

    The kernels hand this object to their ``T.macro`` and write ``blk.h`` etc. inline: a
    PrimExpr macro argument or ``h = ...`` in the kernel becomes a let, and pt-tvm's plan
    rewriting keeps only the tile ops and loops of the kernel body.
    """

    b: Any
    t: Any
    c: Any
    h: Any
    g: Any

    @staticmethod
    def of(bx, bz, tiles: int, heads: int, groups: int, block_H: int = 1) -> "_Blk":
        blocks = heads // block_H
        h = bz % blocks * block_H
        return _Blk(bx // tiles, bx % tiles, bz // blocks, h, h // (heads // groups))


def build_chunk_state(
    batch: int, seqlen: int, heads: int, headdim: int, dstate: int, chunk: int, groups: int, dtype: str,
    block_M: int, block_N: int, block_K: int, threads: int, num_stages: int, block_H: int = 1,
    dynamic_seqlen: bool = False, x_strides: tuple = (), B_strides: tuple = (),
):
    """``states[b,c,h] = (x * dt * decay)^T @ B`` per chunk: a ``block_M x block_N`` tile of
    ``(headdim, dstate)`` of ``block_H`` heads per block, a pipelined loop over the chunk in ``block_K`` positions.

    Each step stages ``x`` (``block_K x block_M``), ``B`` (``block_K x block_N``), ``dt`` and
    ``dA_cumsum`` in shared memory, computes the ``block_K`` row weights
    ``dt * exp(min(dA_last - dA_cumsum, 0))`` (one exp per position), writes the weighted,
    transposed ``x`` into a register fragment (the GEMM's A operand) and accumulates
    ``x_w @ B`` in float32. ``dynamic_seqlen``: one kernel for every sequence length, priced at ``seqlen``.
    ``x_strides``, ``B_strides``: views (:func:`_view`), ``()`` packed.

    ``block_H`` heads of one group share the block's ``B`` tile, which every head otherwise reads again from L2
    (the 64 heads of Mamba2-1.3B's one group: twice a head's ``x`` bytes each); the heads are unrolled in Python,
    each with its own buffers, and their state tiles leave one after the other through one staging tile.
    """
    L, nchunks = _lengths(seqlen, chunk, dynamic_seqlen)
    packed = tuple(range(block_H))  # a Python iterable: the builder unrolls a loop over it
    B_type = _view((batch, L, groups, dstate), dtype, B_strides)
    x_type = _view((batch, L, heads, headdim), dtype, x_strides)

    @T.macro
    def tile_program(B, x, dt, dA_cumsum, states, by, blk):
        """The block ``(blk.t, by)`` of ``states[blk.b, blk.c, blk.h:blk.h + block_H]``."""
        x_shared = _per_head("x_shared", block_H, T.alloc_shared, (block_K, block_M), dtype)
        B_shared = T.alloc_shared((block_K, block_N), dtype)
        dt_shared = _per_head("dt_shared", block_H, T.alloc_shared, (block_K,), _ACCUM)
        dA_shared = _per_head("dA_shared", block_H, T.alloc_shared, (block_K,), _ACCUM)
        weight = _per_head("weight", block_H, T.alloc_fragment, (block_K,), _ACCUM)
        xw = _per_head("xw", block_H, T.alloc_fragment, (block_M, block_K), dtype)
        acc = _per_head("acc", block_H, T.alloc_fragment, (block_M, block_N), _ACCUM)
        acc_shared = T.alloc_shared((block_M, block_N), _ACCUM)

        for j in packed:
            T.clear(acc[j])
        for k in T.Pipelined(chunk // block_K, num_stages=num_stages):
            for j in packed:
                T.copy(x[blk.b, blk.c * chunk + k * block_K:blk.c * chunk + (k + 1) * block_K, blk.h + j,
                         by * block_M:(by + 1) * block_M], x_shared[j])
            T.copy(B[blk.b, blk.c * chunk + k * block_K:blk.c * chunk + (k + 1) * block_K, blk.g,
                     blk.t * block_N:(blk.t + 1) * block_N], B_shared)
            for j in packed:
                T.copy(dt[blk.b, blk.h + j, blk.c, k * block_K:(k + 1) * block_K], dt_shared[j])
                T.copy(dA_cumsum[blk.b, blk.h + j, blk.c, k * block_K:(k + 1) * block_K], dA_shared[j])
                for i in T.Parallel(block_K):
                    weight[j][i] = dt_shared[j][i] * T.exp2(
                        T.min(dA_cumsum[blk.b, blk.h + j, blk.c, chunk - 1] - dA_shared[j][i], 0.0) * _LOG2E)
                for i, n in T.Parallel(block_M, block_K):
                    xw[j][i, n] = x_shared[j][n, i] * weight[j][n]
                T.gemm(xw[j], B_shared, acc[j])
        for j in packed:
            T.copy(acc[j], acc_shared)
            T.copy(acc_shared, states[blk.b, blk.c, blk.h + j, by * block_M:(by + 1) * block_M,
                                      blk.t * block_N:(blk.t + 1) * block_N])

    @T.prim_func
    def chunk_state(
        B: B_type,
        x: x_type,
        dt: T.Tensor((batch, heads, nchunks, chunk), _ACCUM),
        dA_cumsum: T.Tensor((batch, heads, nchunks, chunk), _ACCUM),
        states: T.Tensor((batch, nchunks, heads, headdim, dstate), _ACCUM),
    ):
        tiles = T.ceildiv(dstate, block_N)
        with T.Kernel(tiles * batch, T.ceildiv(headdim, block_M), nchunks * heads // block_H,
                      threads=threads) as (bx, by, bz):
            tile_program(B, x, dt, dA_cumsum, states, by, _Blk.of(bx, bz, tiles, heads, groups, block_H))

    return priced(chunk_state, _hints(seqlen, chunk, dynamic_seqlen))


def build_chunk_scan(
    batch: int, seqlen: int, heads: int, headdim: int, dstate: int, chunk: int, groups: int, has_d: bool,
    dtype: str, block_M: int, block_N: int, block_K: int, threads: int, num_stages: int, block_H: int = 1,
    dynamic_seqlen: bool = False, cb_dtype: str = _ACCUM, x_strides: tuple = (), C_strides: tuple = (),
):
    """``y`` for ``block_M`` rows of a chunk and ``block_N`` of ``headdim`` of ``block_H`` heads per block.

    Before the loop, per head: ``acc = (C_rows @ prev_states^T) * exp(dA_cumsum_rows)`` (the whole
    ``dstate`` in one GEMM). The pipelined loop walks the key blocks of the chunk up to
    the causal diagonal (``ceil((m+1)*block_M / block_K)`` steps): it stages the ``cb``
    tile (``cb_dtype``) once for the block's heads, and per head ``dA_cumsum`` and ``dt`` of the keys, builds the
    masked, decayed, ``dt``-weighted scores in a register fragment (input dtype, the GEMM's A operand),
    stages ``x`` of the keys and accumulates ``scores @ x``. After it: ``+ D[h] * x_rows``
    (``has_d``), then the store in ``x``'s dtype.

    ``block_H`` heads of one group share the block's ``C`` and ``cb`` tiles: the group's float32 ``cb`` is
    otherwise read again by every head (64 heads of Mamba2-1.3B's one group read 64 times its bytes from L2).
    The heads are unrolled in Python, each with its own buffers.

    The decay before the loop reads ``dA_cumsum`` from global memory, not ``dA_m_shared``: TileLang's warp
    specialization makes the copy of a buffer the loop reads a TMA load that only the loop waits for, so a
    read of it before the loop would race that load (docs/NOTES-parity.md). ``dynamic_seqlen``: one kernel for
    every sequence length, priced at ``seqlen``. ``cb_dtype``: float32 as mamba passes ``cb``, or the input dtype,
    half the bytes that every head reads again (the scores are rounded to it for their GEMM in either case).
    ``x_strides``, ``C_strides``: views (:func:`_view`), ``()`` packed; ``out`` is packed.
    """
    L, nchunks = _lengths(seqlen, chunk, dynamic_seqlen)
    packed = tuple(range(block_H))  # a Python iterable: the builder unrolls a loop over it
    # Where some blocks' rows lie past the sequence's end, the rows of C and x loaded before and after the loop
    # read the last row instead (a row reaches only its own output row, clipped at the store): a copy there
    # guards each vector load with a branch, which serializes the block's loads (at 4000 tokens the kernel ran
    # 6% slower than at 4096 with the same tiles, its warps stalled on them: one H200, 2026-11-30).
    ragged = dynamic_seqlen or seqlen % chunk != 0

    def row0(blk, by):
        """Sequence position of the block's first row."""
        return blk.c * chunk + by * block_M

    def row(blk, by, i):
        """Sequence position of the block's row ``i``, the last one's past the end."""
        return T.min(row0(blk, by) + i, L - 1)

    def key_blocks(by):
        """Key blocks up to the diagonal of row block ``by`` (an expression of blockIdx.y, not a let,
        so extraction can average the trip count)."""
        return T.ceildiv((by + 1) * block_M, block_K)

    cb_shape = (batch, nchunks, groups, chunk, chunk)
    seq_shape = (batch, L, heads, headdim)
    chunk_shape = (batch, heads, nchunks, chunk)
    x_type, C_type = _view(seq_shape, dtype, x_strides), _view((batch, L, groups, dstate), dtype, C_strides)
    states_shape = (batch, nchunks, heads, headdim, dstate)

    @T.macro
    def tile_program(cb, x, dt, dA_cumsum, C, prev_states, D, out, by, blk):
        """Block ``(blk.t, by)`` of chunk ``blk.c`` of ``y[blk.b, :, blk.h:blk.h + block_H]``."""
        C_shared = T.alloc_shared((block_M, dstate), dtype)
        S_shared = _per_head("S_shared", block_H, T.alloc_shared, (block_N, dstate), dtype)
        dA_m_shared = _per_head("dA_m_shared", block_H, T.alloc_shared, (block_M,), _ACCUM)
        cb_shared = T.alloc_shared((block_M, block_K), cb_dtype)
        dA_k_shared = _per_head("dA_k_shared", block_H, T.alloc_shared, (block_K,), _ACCUM)
        dt_k_shared = _per_head("dt_k_shared", block_H, T.alloc_shared, (block_K,), _ACCUM)
        x_shared = _per_head("x_shared", block_H, T.alloc_shared, (block_K, block_N), dtype)
        scores = _per_head("scores", block_H, T.alloc_fragment, (block_M, block_K), dtype)
        acc = _per_head("acc", block_H, T.alloc_fragment, (block_M, block_N), _ACCUM)
        out_shared = T.alloc_shared((block_M, block_N), dtype)

        for j in packed:
            T.copy(dA_cumsum[blk.b, blk.h + j, blk.c, by * block_M:(by + 1) * block_M], dA_m_shared[j])
        if ragged:
            for i, d in T.Parallel(block_M, dstate):
                C_shared[i, d] = C[blk.b, row(blk, by, i), blk.g, d]
        else:
            T.copy(C[blk.b, row0(blk, by):row0(blk, by) + block_M, blk.g, :], C_shared)
        for j in packed:
            T.copy(prev_states[blk.b, blk.c, blk.h + j, blk.t * block_N:(blk.t + 1) * block_N, :], S_shared[j])
            T.gemm(C_shared, S_shared[j], acc[j], transpose_B=True, clear_accum=True)
            for i, n in T.Parallel(block_M, block_N):
                acc[j][i, n] *= T.exp2(dA_cumsum[blk.b, blk.h + j, blk.c, by * block_M + i] * _LOG2E)
        for k in T.Pipelined(key_blocks(by), num_stages=num_stages):
            T.copy(cb[blk.b, blk.c, blk.g, by * block_M:(by + 1) * block_M, k * block_K:(k + 1) * block_K],
                   cb_shared)
            for j in packed:
                T.copy(dA_cumsum[blk.b, blk.h + j, blk.c, k * block_K:(k + 1) * block_K], dA_k_shared[j])
                T.copy(dt[blk.b, blk.h + j, blk.c, k * block_K:(k + 1) * block_K], dt_k_shared[j])
                for i, n in T.Parallel(block_M, block_K):
                    scores[j][i, n] = T.if_then_else(
                        by * block_M + i >= k * block_K + n,
                        T.Cast(_ACCUM, cb_shared[i, n]) * dt_k_shared[j][n]
                        * T.exp2(T.min(dA_m_shared[j][i] - dA_k_shared[j][n], 0.0) * _LOG2E),
                        0.0,
                    )
                T.copy(x[blk.b, blk.c * chunk + k * block_K:blk.c * chunk + (k + 1) * block_K, blk.h + j,
                         blk.t * block_N:(blk.t + 1) * block_N], x_shared[j])
                T.gemm(scores[j], x_shared[j], acc[j])
        for j in packed:
            if has_d:
                if ragged:
                    for i, n in T.Parallel(block_M, block_N):
                        out_shared[i, n] = x[blk.b, row(blk, by, i), blk.h + j, blk.t * block_N + n]
                else:
                    T.copy(x[blk.b, row0(blk, by):row0(blk, by) + block_M, blk.h + j,
                             blk.t * block_N:(blk.t + 1) * block_N], out_shared)
                for i, n in T.Parallel(block_M, block_N):
                    acc[j][i, n] += D[blk.h + j] * out_shared[i, n]
            T.copy(acc[j], out_shared)
            T.copy(out_shared, out[blk.b, row0(blk, by):row0(blk, by) + block_M, blk.h + j,
                                   blk.t * block_N:(blk.t + 1) * block_N])

    @T.macro
    def kernel(cb, x, dt, dA_cumsum, C, prev_states, D, out):
        tiles = T.ceildiv(headdim, block_N)
        with T.Kernel(tiles * batch, chunk // block_M, nchunks * heads // block_H, threads=threads) as (bx, by, bz):
            tile_program(cb, x, dt, dA_cumsum, C, prev_states, D, out, by,
                         _Blk.of(bx, bz, tiles, heads, groups, block_H))

    if has_d:
        @T.prim_func
        def chunk_scan(
            cb: T.Tensor(cb_shape, cb_dtype), x: x_type, dt: T.Tensor(chunk_shape, _ACCUM),
            dA_cumsum: T.Tensor(chunk_shape, _ACCUM), C: C_type,
            prev_states: T.Tensor(states_shape, dtype), D: T.Tensor((heads,), _ACCUM),
            out: T.Tensor(seq_shape, dtype),
        ):
            kernel(cb, x, dt, dA_cumsum, C, prev_states, D, out)
    else:
        @T.prim_func
        def chunk_scan(
            cb: T.Tensor(cb_shape, cb_dtype), x: x_type, dt: T.Tensor(chunk_shape, _ACCUM),
            dA_cumsum: T.Tensor(chunk_shape, _ACCUM), C: C_type,
            prev_states: T.Tensor(states_shape, dtype), out: T.Tensor(seq_shape, dtype),
        ):
            kernel(cb, x, dt, dA_cumsum, C, prev_states, None, out)

    return priced(chunk_scan, _hints(seqlen, chunk, dynamic_seqlen))


# ---------------------------------------------------------------- parameters
_X_DIMS, _BC_DIMS = ("batch", "seqlen", "heads"), ("batch", "seqlen", "groups")  # a view's strided dims


def _fail(template: str, param: str, message: str) -> TemplateError:
    """A TemplateError that names the offending parameter first."""
    return TemplateError(f"{template}: parameter {param!r} {message}")


def _check_common(template: str, problem: Mapping[str, Any], tile: Mapping[str, Any]) -> None:
    """Positive int shapes and blocks, a supported dtype, whole groups, warpgroups, and key blocks within a chunk
    (a block of positions must not reach into the next chunk). Any sequence length, ``headdim`` and ``dstate``."""
    for key in ("batch", "seqlen", "heads", "headdim", "dstate", "chunk", "groups"):
        _check_positive(template, key, problem[key])
    for key in ("block_M", "block_N", "block_K", "threads"):
        _check_positive(template, key, tile[key])
    if problem["dtype"] not in _DTYPES:
        raise _fail(template, "dtype", f"must be one of {_DTYPES}, got {problem['dtype']!r}")
    if not isinstance(problem["dynamic_seqlen"], bool):
        raise _fail(template, "dynamic_seqlen", f"must be a bool, got {problem['dynamic_seqlen']!r}")
    if problem["heads"] % problem["groups"]:
        raise _fail(template, "groups", f"={problem['groups']} must divide heads={problem['heads']}")
    if tile["threads"] % 128:
        raise _fail(template, "threads", f"must be a multiple of 128 (whole warpgroups), got {tile['threads']}")
    for key in ("block_M", "block_N", "block_K"):
        if tile[key] % 16:
            raise _fail(template, key, f"must be a multiple of 16 (tensor-core tiles), got {tile[key]}")
    if problem["chunk"] % tile["block_K"]:
        raise _fail(template, "block_K", f"={tile['block_K']} must divide chunk={problem['chunk']} (a block of "
                                         "positions stays within one chunk)")


def _check_positive(template: str, key: str, value: Any) -> None:
    """Shapes and block sizes are positive ints (bools excluded)."""
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise _fail(template, key, f"must be a positive int, got {value!r}")


def _check_heads(template: str, problem: Mapping[str, Any], tile: Mapping[str, Any], shared: str) -> None:
    """A block's ``block_H`` heads are whole heads of one group (they share its ``shared`` tiles)."""
    _check_positive(template, "block_H", tile["block_H"])
    per_group = problem["heads"] // problem["groups"]
    if per_group % tile["block_H"]:
        raise _fail(template, "block_H", f"={tile['block_H']} must divide the {per_group} heads of a group "
                                         f"(heads={problem['heads']}, groups={problem['groups']}): a block's "
                                         f"heads share one group's {shared} tiles")


def _check_state(problem: Mapping[str, Any], tile: Mapping[str, Any]) -> None:
    """chunk_state tiles (headdim, dstate) by (block_M, block_N) and walks the chunk in block_K."""
    _check_common("chunk_state", problem, tile)
    _check_heads("chunk_state", problem, tile, "B")
    check_strides("chunk_state", problem, {"x_strides": _X_DIMS, "B_strides": _BC_DIMS})


def _check_scan(problem: Mapping[str, Any], tile: Mapping[str, Any]) -> None:
    """chunk_scan tiles (chunk, headdim) by (block_M, block_N), walks keys in block_K (row blocks stay within a
    chunk too) and contracts the whole dstate in one GEMM (so dstate is a multiple of 16, at most 256)."""
    _check_common("chunk_scan", problem, tile)
    if not isinstance(problem["has_d"], bool):
        raise _fail("chunk_scan", "has_d", f"must be a bool, got {problem['has_d']!r}")
    if problem["dstate"] % 16 or problem["dstate"] > 256:
        raise _fail("chunk_scan", "dstate", f"must be a multiple of 16 and at most 256, got {problem['dstate']}")
    if problem["chunk"] % tile["block_M"]:
        raise _fail("chunk_scan", "block_M", f"={tile['block_M']} must divide chunk={problem['chunk']} (a block of "
                                             "rows stays within one chunk)")
    _check_heads("chunk_scan", problem, tile, "cb and C")
    check_strides("chunk_scan", problem, {"x_strides": _X_DIMS, "C_strides": _BC_DIMS})
    if problem["cb_dtype"] not in (_ACCUM, problem["dtype"]):
        raise _fail("chunk_scan", "cb_dtype", f"must be {_ACCUM!r} or the input dtype {problem['dtype']!r}, got "
                                              f"{problem['cb_dtype']!r}")


# ---------------------------------------------------------------- inputs
def _generator_device(device: Any, generator: torch.Generator | None) -> Any:
    return generator.device if generator is not None else device


def _randn(shape: tuple, dtype: Any, device: Any, generator: torch.Generator | None) -> torch.Tensor:
    """Standard-normal values drawn on the generator's device, then cast and moved."""
    where = _generator_device(device, generator)
    return torch.randn(shape, generator=generator, device=where).to(device=device, dtype=dtype)


def _randn_view(shape: tuple, problem: Mapping[str, Any], key: str, device: Any,
                generator: torch.Generator | None) -> torch.Tensor:
    """:func:`_randn` in the problem's dtype, packed or a view at ``problem[key]`` (:func:`strided`)."""
    dtype = getattr(torch, problem["dtype"])
    return strided(lambda s: _randn(s, dtype, device, generator), shape, problem.get(key, ()))


def _rand(shape: tuple, device: Any, generator: torch.Generator | None) -> torch.Tensor:
    where = _generator_device(device, generator)
    return torch.rand(shape, generator=generator, device=where).to(device=device)


def _dt_and_cumsum(problem: Mapping[str, Any], device: Any, generator: torch.Generator | None) -> tuple:
    """Float32 ``dt`` and ``dA_cumsum`` ``[batch, heads, nchunks, chunk]`` as Mamba2 produces them:
    ``dt`` log-uniform in [1e-3, 1e-1] (Mamba2's ``dt`` initialisation range), ``A_h = -U(1, 16)``
    (its ``A_init_range``), ``dA_cumsum`` the running sum of ``A_h * dt`` within each chunk; ``dt`` is 0 past
    the sequence's end (a partial last chunk), as mamba's ``_chunk_cumsum_fwd`` leaves it."""
    p = problem
    nchunks = n_chunks(p["seqlen"], p["chunk"])
    shape = (p["batch"], p["heads"], nchunks, p["chunk"])
    dt = torch.exp(math.log(1e-3) + (math.log(1e-1) - math.log(1e-3)) * _rand(shape, device, generator))
    if nchunks * p["chunk"] != p["seqlen"]:
        dt.view(*shape[:2], -1)[..., p["seqlen"]:] = 0.0
    A = -(1.0 + 15.0 * _rand((p["heads"],), device, generator))
    dA_cumsum = torch.cumsum(dt * A[None, :, None, None], dim=-1)
    return dt.float().contiguous(), dA_cumsum.float().contiguous()


def _make_state_inputs(problem: Mapping[str, Any], device: Any, generator: torch.Generator | None) -> tuple:
    """``(B, x, dt, dA_cumsum)``: the arguments of mamba's ``_chunk_state_fwd`` in its order."""
    p = problem
    B = _randn_view((p["batch"], p["seqlen"], p["groups"], p["dstate"]), p, "B_strides", device, generator)
    x = _randn_view((p["batch"], p["seqlen"], p["heads"], p["headdim"]), p, "x_strides", device, generator)
    return (B, x, *_dt_and_cumsum(problem, device, generator))


def _make_scan_inputs(problem: Mapping[str, Any], device: Any, generator: torch.Generator | None) -> tuple:
    """``(cb, x, dt, dA_cumsum, C, prev_states[, D])``: the arguments of mamba's ``_chunk_scan_fwd``
    in its order. ``cb`` is ``C B^T`` per chunk from random ``B``, ``C`` in the input dtype, computed in float32
    and stored in ``cb_dtype`` (float32: what ``_bmm_chunk_fwd(C, B, chunk, output_dtype=torch.float32)`` returns);
    ``prev_states`` are standard normal in the input dtype, ``D`` standard normal in float32."""
    p = problem
    dtype = getattr(torch, p["dtype"])
    b, L, g, n, chunk = p["batch"], p["seqlen"], p["groups"], p["dstate"], p["chunk"]
    nchunks = n_chunks(L, chunk)
    B = _randn((b, L, g, n), dtype, device, generator)
    C = _randn_view((b, L, g, n), p, "C_strides", device, generator)
    x = _randn_view((b, L, p["heads"], p["headdim"]), p, "x_strides", device, generator)
    dt, dA_cumsum = _dt_and_cumsum(problem, device, generator)
    prev_states = _randn((b, nchunks, p["heads"], p["headdim"], n), dtype, device, generator)
    cb = torch.einsum("bclgn,bcsgn->bcgls", _padded(C, nchunks * chunk).float().reshape(b, nchunks, chunk, g, n),
                      _padded(B, nchunks * chunk).float().reshape(b, nchunks, chunk, g, n))
    cb = cb.to(getattr(torch, p.get("cb_dtype", _ACCUM))).contiguous()
    inputs = (cb, x, dt, dA_cumsum, C, prev_states)
    if p["has_d"]:
        inputs = (*inputs, _randn((p["heads"],), torch.float32, device, generator))
    return inputs


# ---------------------------------------------------------------- references
def _padded(t: torch.Tensor, length: int) -> torch.Tensor:
    """``t [batch, seqlen, ...]`` with zero rows up to ``length`` (what the kernels' copies read past the end)."""
    return torch.nn.functional.pad(t, (0, 0, 0, 0, 0, length - t.shape[1])) if length != t.shape[1] else t


def _state_reference(B: torch.Tensor, x: torch.Tensor, dt: torch.Tensor, dA_cumsum: torch.Tensor,
                     **problem: Any) -> torch.Tensor:
    """Float32 ``states[b,c,h,p,n] = sum_l x[b,t,h,p] dt[b,h,c,l] exp(dA_cs[..,L-1] - dA_cs[..,l]) B[b,t,g(h),n]``
    (``t = c*L + l``), heads split as ``(groups, heads/groups)`` so ``B`` is never repeated."""
    b, L, h, p = x.shape
    g, n = B.shape[2], B.shape[3]
    _, _, nchunks, chunk = dt.shape
    r = h // g
    decay = torch.exp(torch.clamp(dA_cumsum[..., -1:] - dA_cumsum, max=0.0))           # [b,h,c,l]
    w = (dt.float() * decay).reshape(b, g, r, nchunks, chunk)                          # [b,g,r,c,l]
    xc = _padded(x, nchunks * chunk).float().reshape(b, nchunks, chunk, g, r, p)
    Bc = _padded(B, nchunks * chunk).float().reshape(b, nchunks, chunk, g, n)
    states = torch.einsum("bclgrp,bgrcl,bclgn->bcgrpn", xc, w, Bc)
    return states.reshape(b, nchunks, h, p, n)


def _scan_reference(cb: torch.Tensor, x: torch.Tensor, dt: torch.Tensor, dA_cumsum: torch.Tensor,
                    C: torch.Tensor, prev_states: torch.Tensor, D: torch.Tensor | None = None,
                    **problem: Any) -> torch.Tensor:
    """Float32 ``y [batch, seqlen, heads, headdim]``, one chunk at a time (bounds the
    ``heads * chunk^2`` decay matrix):

    ``y[t] = sum_{s<=t} cb[t,s] exp(min(dA_cs[t] - dA_cs[s], 0)) dt[s] x[s]
    + exp(dA_cs[t]) C[t] . prev_states + D x[t]``.
    """
    b, L, h, p = x.shape
    g, n = C.shape[2], C.shape[3]
    _, _, nchunks, chunk = dt.shape
    r = h // g
    causal = torch.ones(chunk, chunk, dtype=torch.bool, device=x.device).tril()
    xc = _padded(x, nchunks * chunk).float().reshape(b, nchunks, chunk, g, r, p)
    Cc = _padded(C, nchunks * chunk).float().reshape(b, nchunks, chunk, g, n)
    out = torch.empty(b, nchunks, chunk, g, r, p, dtype=torch.float32, device=x.device)
    for c in range(nchunks):
        dA = dA_cumsum[:, :, c].float().reshape(b, g, r, chunk)                       # [b,g,r,l]
        seg = torch.clamp(dA[..., :, None] - dA[..., None, :], max=0.0)              # [b,g,r,l,s]
        decay = torch.where(causal, torch.exp(seg), torch.zeros((), device=x.device))
        scores = cb[:, c].float()[:, :, None] * decay * dt[:, :, c].float().reshape(b, g, r, 1, chunk)
        intra = torch.einsum("bgrls,bsgrp->blgrp", scores, xc[:, c])
        S = prev_states[:, c].float().reshape(b, g, r, p, n)
        inter = torch.einsum("blgn,bgrpn->blgrp", Cc[:, c], S) * torch.exp(dA).permute(0, 3, 1, 2)[..., None]
        out[:, c] = intra + inter
    out = out.reshape(b, nchunks * chunk, h, p)[:, :L]
    if D is not None:
        out = out + D.float()[None, None, :, None] * x.float()
    return out


def _state_flops(problem: Mapping[str, Any]) -> float:
    """One GEMM per (batch, chunk, head): ``(headdim x chunk) @ (chunk x dstate)``, i.e.
    ``2 * batch * seqlen * heads * headdim * dstate`` (the scaling of x is not counted)."""
    p = problem
    return 2.0 * p["batch"] * p["seqlen"] * p["heads"] * p["headdim"] * p["dstate"]


def _scan_flops(problem: Mapping[str, Any]) -> float:
    """The two GEMMs' useful multiply-adds: inter-chunk ``C @ prev_states^T``
    (``2 * batch * seqlen * heads * headdim * dstate``) plus the causal intra-chunk
    ``scores @ x`` over the ``L * (L + 1) / 2`` pairs ``s <= t`` of each chunk of ``L`` positions
    (``chunk``; fewer in a partial last chunk), times ``2 * batch * heads * headdim``. Masked-out
    work of diagonal tiles and past the sequence's end, the decay/mask elementwise work and the D term
    are not counted."""
    p = problem
    full, last = divmod(p["seqlen"], p["chunk"])
    pairs = full * p["chunk"] * (p["chunk"] + 1) / 2 + last * (last + 1) / 2
    inter = 2.0 * p["batch"] * p["seqlen"] * p["heads"] * p["headdim"] * p["dstate"]
    return inter + 2.0 * p["batch"] * p["heads"] * p["headdim"] * pairs


# Mamba2-1.3B: d_model 2048, expand 2 -> 4096 inner = 64 heads x 64; d_state 128, chunk 256, 1 group.
_PROBLEM = {"batch": 1, "seqlen": 4096, "heads": 64, "headdim": 64, "dstate": 128, "chunk": 256, "groups": 1,
            "dtype": "float16", "dynamic_seqlen": False, "x_strides": ()}

CHUNK_STATE = Template(
    name="chunk_state",
    builder=build_chunk_state,
    reference=_state_reference,
    problem={**_PROBLEM, "B_strides": ()},
    tile={"block_M": 64, "block_N": 128, "block_K": 64, "threads": 128, "block_H": 1},
    # block_H (heads a block sharing the B tile) is a pin, not searched (docs/NOTES-parity.md)
    tile_space={"block_M": (64, 128), "block_N": (64, 128), "block_K": (32, 64, 128), "threads": (128, 256)},
    make_inputs=_make_state_inputs,
    flops=_state_flops,
    out_idx=(4,),
    check=_check_state,
    doc="Mamba2 SSD chunk state: states[b,c,h] = (x*dt*decay)^T B per chunk, fp32 out "
        "(= mamba_ssm _chunk_state_fwd(B, x, dt, dA_cumsum, states_in_fp32=True)); x/B_strides: views "
        "(batch, seqlen, heads/groups strides), () packed.",
    pass_configs=FAST_MATH,
)

CHUNK_SCAN = Template(
    name="chunk_scan",
    builder=build_chunk_scan,
    reference=_scan_reference,
    problem={**_PROBLEM, "has_d": True, "cb_dtype": _ACCUM, "C_strides": ()},
    tile={"block_M": 64, "block_N": 64, "block_K": 64, "threads": 128, "block_H": 1},
    # block_H (heads a block) is a pin, not searched: on one H100 two heads a block ran 1.05x faster at batch 64 x
    # 1024 and 0.93x at 1 x 16384, four 0.82x and 0.80x, where the model prices them 1.5x and 1.7x faster
    # (benchmarks/results/2026-11-27-h100-head-pack; docs/NOTES-parity.md)
    tile_space={"block_M": (64, 128), "block_N": (32, 64, 128), "block_K": (32, 64, 128), "threads": (128, 256)},
    make_inputs=_make_scan_inputs,
    flops=_scan_flops,
    out_idx=(-1,),  # the last parameter: 6 without D, 7 with it
    check=_check_scan,
    doc="Mamba2 SSD chunk scan: y = causal(cb*decay*dt) @ x + exp(dA_cs) C prev_states (+ D x), "
        "cb = C B^T given in fp32 (= mamba_ssm _chunk_scan_fwd(cb, x, dt, dA_cumsum, C, states, D)); "
        "x/C_strides: views (batch, seqlen, heads/groups strides), () packed.",
    pass_configs=FAST_MATH,
)
