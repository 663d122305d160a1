"""FlashAttention forward templates: ``flash_attention`` over ``[batch, seqlen, heads, dim]`` tensors and
``flash_attention_varlen`` over packed ``[total, heads, dim]`` ones with ``cu_seqlens`` (as
``flash_attn_func`` and ``flash_attn_varlen_func`` take them).

One block computes ``block_M`` query rows of one head (or, with the tile
parameter ``pack_gqa``, ``block_M // groups`` rows of each query head that
shares one key/value head: GQA packed): ``Q`` is staged in shared memory
once, then a plain ``T.Pipelined`` loop over key blocks copies ``K``,
computes the scores, updates the running max/sum with ``exp2`` (the
softmax scale is folded with ``log2(e)``), rescales the output accumulator,
copies ``V`` and accumulates ``P @ V``. Both templates run this one tile
program (:func:`_tile_program`); they differ in where a sequence's rows lie.

Any lengths: queries and keys may differ in length (attention over a KV cache)
and need not be tile multiples. TileLang's copies zero-fill the rows of a tile
past a tensor's end and clip its stores there; keys past a sequence's end are
masked to ``-inf`` in the scores, by the causal mask or by the length mask
that non-causal kernels apply, each only on the key blocks that need it and
after the QK gemm (which clears its own accumulator), so that no fill stands
between a key tile's arrival and its wgmma. With the tile parameter
``key_tail`` (non-causal, key length known when the kernel is built) the keys
past the last whole key block are one narrower step after the loop instead
of a whole masked block in it (the search prefers it where it keeps a
pipelined loop: ``Template.prefer``).
With ``causal``, query ``i`` sees keys ``j <= i + seqlen_k - seqlen_q``
(aligned bottom-right, as FlashAttention 2.1+ defines it: the last query sees
every key); a query that sees no key outputs 0.
Query head ``h`` reads key/value head ``h // (heads // kv_heads)`` (GQA, MQA).
"""
# No ``from __future__ import annotations``: T.prim_func evaluates the
# parameter annotations against the builder's locals (shapes, dtype).
import math
from dataclasses import dataclass
from typing import Any, Mapping

import tilelang.language as T
import torch

from .base import FAST_MATH, Template, TemplateError, check_strides, named, operand, priced, strided
from .online_softmax import (
    ACCUM,
    LOG2E,
    alloc_tiles,
    guard_empty_rows,
    head_dim_error,
    normalize,
    normalize_or_zero,
    rescale_and_exponentiate,
    update_max,
)

__all__ = ["FLASH_ATTENTION", "FLASH_ATTENTION_QKV", "FLASH_ATTENTION_VARLEN", "lengths", "visible_pairs"]

_DTYPES = ("float16", "bfloat16")
_PANEL = 64  # columns of one 128-byte swizzle panel of a 16-bit shared tile: a packed block's TMA box per head


@dataclass(frozen=True)
class _Rows:
    """Where a block works: query block ``qb`` of head ``h`` of sequence ``b``, whose queries and keys start at
    rows ``q0``/``k0`` of their tensors' sequence dim and number ``sq``/``sk`` (ints for ``[batch, seqlen, ...]``
    tensors, variables bound from ``cu_seqlens`` before the tile program for packed ones: pt-tvm's
    warp-specialized emission places such prologue Binds first in every role). The tile program writes these
    expressions inline; a PrimExpr macro argument would become a let of the macro's own."""

    b: Any
    h: Any
    qb: Any
    q0: Any
    k0: Any
    sq: Any
    sk: Any


def _tile_program(dim: int, dtype: str, causal: bool, packed: bool, guard: bool, scale: float, groups: int,
                  block_M: int, block_N: int, num_stages: int, kv_blocks, k_head0: int = 0, v_head0: int = 0,
                  pack: int = 1, tail: int = 0, own_o: bool = False):
    """The FlashAttention tile program, a macro every kernel inlines. ``packed``: tensors are ``[total, heads,
    dim]`` and a tile's rows past its sequence belong to the next one, so the output is stored row by row up to
    the sequence's end; ``guard``: some rows may see no key (their running max stays ``-inf``; they output 0);
    ``kv_blocks(rows)``: the key blocks the query block reads; ``k_head0``/``v_head0``: the head index of the
    first key/value head in ``K``/``V`` (past the query heads where the three are one tensor); ``pack``: query
    heads per block (GQA packed, FlashAttention 3's PackGQA): the block's rows are ``block_M // pack`` queries of
    each of heads ``rows.h .. rows.h + pack``, which share one key/value head, so a short or ragged query length
    fills whole tiles and the key/value blocks are loaded once for the group; ``tail``: the keys past the last whole
    key block (``kv_blocks`` then counts the whole ones), a step of their own after the loop at the next multiple
    of 16 keys (:func:`_tail_tiles`), its rows loaded with ``Q``; ``own_o``: the output tile is staged in a shared
    tile of its own, not in ``Q_shared`` (so a persistent block's producer may load the next tile's queries while
    this tile's epilogue runs)."""
    per = block_M // pack  # queries per block (of each head)
    width = -(-tail // _TAIL_STEP) * _TAIL_STEP

    def seq(buf, rows: _Rows, start, n: int, head, cols=slice(None)):
        """Rows ``start .. start + n`` of ``buf``'s sequence dim at ``head`` (its columns ``cols``)."""
        if packed:
            return buf[start:start + n, head, cols]
        return buf[rows.b, start:start + n, head, cols]

    def head_panels():
        """``(g, c)`` of a packed block's tile pieces: head ``g``'s rows ``g * per .. (g + 1) * per`` of the
        swizzle panel at column ``c``, each one TMA box (the ``per``-row slice of the whole tile is not); a Python
        loop, so each is a copy sTask of its own."""
        return [(g, c) for g in range(pack if pack > 1 else 0) for c in range(0, dim, _PANEL)]

    def row(i):
        """Tile row ``i``'s query within the block (its head's slice where packed)."""
        return i % per if pack > 1 else i

    def query(rows: _Rows, i):
        """Row ``i``'s query as a key position: causal aligned bottom-right shifts it by the keys before the
        first query."""
        q = rows.qb * per + row(i)
        if isinstance(rows.sk, int) and rows.sk == rows.sq:
            return q
        return q + rows.sk - rows.sq

    def visible(rows: _Rows, i, j, k):
        """Whether score ``(i, j)`` of key block ``k`` counts: its key is not after the query (causal, aligned
        bottom-right), else not past the sequence's keys."""
        if not causal:
            return k * block_N + j < rows.sk
        return query(rows, i) >= k * block_N + j

    def masked(rows: _Rows, k):
        """Whether key block ``k`` holds a key that some query of the block may not see (``False`` where no
        block does, so no branch is written): the blocks on a causal mask's diagonal, and the block holding a
        sequence's end. The others skip the per-score mask (FlashAttention 3 likewise masks only these)."""
        if causal:
            return (k + 1) * block_N > query(rows, 0) + 1
        if tail or isinstance(rows.sk, int) and rows.sk % block_N == 0:
            return False
        return (k + 1) * block_N > rows.sk

    @T.macro
    def program(Q, K, V, O, rows):
        (Q_shared, K_shared, V_shared, acc_s, acc_s_cast, acc_o, scores_max, scores_max_prev, scores_scale,
         scores_sum, logsum, row_max) = alloc_tiles(block_M, block_N, dim, dtype, row_max=guard)
        K_tail, V_tail, acc_t, acc_t_cast = _tail_tiles(width, dim, block_M, dtype)

        if pack == 1:
            T.copy(seq(Q, rows, rows.q0 + rows.qb * block_M, block_M, rows.h), Q_shared)
        for g, c in head_panels():
            T.copy(seq(Q, rows, rows.q0 + rows.qb * per, per, rows.h + g, slice(c, c + _PANEL)),
                   Q_shared[g * per:(g + 1) * per, c:c + _PANEL])
        if tail:
            start = rows.k0 + (rows.sk - tail)
            T.copy(seq(K, rows, start, width, k_head0 + rows.h // groups), K_tail)
            T.copy(seq(V, rows, start, width, v_head0 + rows.h // groups), V_tail)
        T.fill(acc_o, 0)
        T.fill(logsum, 0)
        T.fill(scores_max, -T.infinity(ACCUM))
        for k in T.Pipelined(kv_blocks(rows), num_stages=num_stages):
            T.copy(seq(K, rows, rows.k0 + k * block_N, block_N, k_head0 + rows.h // groups), K_shared)
            T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow, clear_accum=True)
            if masked(rows, k):
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.if_then_else(visible(rows, i, j, k), acc_s[i, j], -T.infinity(ACCUM))
            update_max(acc_s, scores_max, scores_max_prev)
            if guard:  # exponentiate against a max of 0 where a row has seen no key yet
                guard_empty_rows(scores_max, row_max)
                rescale_and_exponentiate(acc_s, acc_s_cast, acc_o, row_max, scores_max_prev, scores_scale,
                                         scores_sum, logsum, scale)
            else:
                rescale_and_exponentiate(acc_s, acc_s_cast, acc_o, scores_max, scores_max_prev, scores_scale,
                                         scores_sum, logsum, scale)
            T.copy(seq(V, rows, rows.k0 + k * block_N, block_N, v_head0 + rows.h // groups), V_shared)
            T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
        if tail:
            T.gemm(Q_shared, K_tail, acc_t, transpose_B=True, policy=T.GemmWarpPolicy.FullRow, clear_accum=True)
            if width > tail:
                for i, j in T.Parallel(block_M, width):
                    acc_t[i, j] = T.if_then_else(j < tail, acc_t[i, j], -T.infinity(ACCUM))
            update_max(acc_t, scores_max, scores_max_prev)
            rescale_and_exponentiate(acc_t, acc_t_cast, acc_o, scores_max, scores_max_prev, scores_scale, scores_sum,
                                     logsum, scale)
            T.gemm(acc_t_cast, V_tail, acc_o, policy=T.GemmWarpPolicy.FullRow)
        if guard:
            normalize_or_zero(acc_o, logsum)
        else:
            normalize(acc_o, logsum)
        # the output tile is staged through Q_shared unless own_o: Q is dead after the loop, and the
        # shared memory this saves is what lets head dim 256 keep two K/V stages (a meta_var: a plain
        # assignment would rename Q_shared's buffer "O_shared")
        O_shared = T.meta_var(named("O_shared", T.alloc_shared, (block_M, dim), dtype) if own_o else Q_shared)
        T.copy(acc_o, O_shared)
        if packed:  # row by row up to the sequence's end, a loop a packed head (its head index then a constant
            # of the loop, so the stores vectorize: one loop over all heads stored an element at a time, 1.35x slower)
            for g in range(pack):
                for i, d in T.Parallel(per, dim):
                    if rows.qb * per + i < rows.sq:
                        O[rows.q0 + rows.qb * per + i, rows.h + g, d] = O_shared[g * per + i, d]
        elif pack == 1:
            T.copy(O_shared, seq(O, rows, rows.qb * block_M, block_M, rows.h))
        else:
            for g, c in head_panels():
                T.copy(O_shared[g * per:(g + 1) * per, c:c + _PANEL],
                       seq(O, rows, rows.qb * per, per, rows.h + g, slice(c, c + _PANEL)))

    return program


_TAIL_STEP = 16  # the key tail's gemm width is a multiple of a wgmma's K step (its P V gemm's K)


def _tail_tiles(width: int, dim: int, block_M: int, dtype: str) -> tuple:
    """The key tail step's tiles: its rows of ``K`` and ``V`` (shared, loaded before the loop) and its scores
    (fragments the step after the loop alone touches, so they take the loop's dead score registers); Nones
    without a tail (``width`` 0)."""
    if not width:
        return (None,) * 4
    return (named("K_tail", T.alloc_shared, (width, dim), dtype), named("V_tail", T.alloc_shared, (width, dim), dtype),
            named("acc_t", T.alloc_fragment, (block_M, width), ACCUM),
            named("acc_t_cast", T.alloc_fragment, (block_M, width), dtype))


def _tail_keys(causal: bool, block_N: int, seq_k: Any) -> int:
    """The keys a ``key_tail`` tile takes in a step of their own after the loop: those past the last whole key
    block where no causal mask reaches them and the key length, known when the kernel is built, exceeds one
    block; 0 where the key blocks are all whole (or no such step applies)."""
    if causal or not isinstance(seq_k, int) or seq_k <= block_N:
        return 0
    return seq_k % block_N


def _scale(softmax_scale: float, dim: int) -> float:
    """``softmax_scale`` (0: ``1/sqrt(dim)``) times ``log2(e)``, for ``exp2``."""
    return LOG2E * softmax_scale if softmax_scale else LOG2E / math.sqrt(dim)


def _pack(heads: int, kv_heads: int, pack_gqa: int) -> int:
    """Query heads one block holds: every query head of a key/value head where GQA is packed, else one."""
    return heads // kv_heads if pack_gqa else 1


def _query_block(bx, n_query_blocks, causal: bool):
    """The query block of launch index ``bx``. A causal mask launches the last, heaviest query blocks first
    (longest processing time first): the light ones then fill the last wave instead of the heavy ones trailing
    it. An expression, not a let: extraction bounds what depends on it."""
    return n_query_blocks - 1 - bx if causal else bx


def lengths(problem: Mapping[str, Any]) -> tuple[int, int]:
    """``(seqlen_q, seqlen_k)`` of a ``flash_attention`` problem: ``seq_len_q``/``seq_len_k``, each ``seq_len``
    where 0."""
    return problem.get("seq_len_q") or problem["seq_len"], problem.get("seq_len_k") or problem["seq_len"]


def build_flash_attention(
    batch: int, heads: int, kv_heads: int, seq_len: int, seq_len_q: int, seq_len_k: int, dim: int, causal: bool,
    softmax_scale: float, dtype: str, block_M: int, block_N: int, threads: int, num_stages: int, pack_gqa: int = 0,
    key_tail: int = 0, q_strides: tuple = (), k_strides: tuple = (), v_strides: tuple = (), o_shared: int = 0,
):
    """``O = softmax(Q K^T * scale) V`` per head over ``[batch, seqlen, heads, dim]`` tensors. ``q_strides``,
    ``k_strides``, ``v_strides``: a tensor's batch, sequence and head strides in elements where it is a view that
    does not lie packed (the heads of a fused projection, a ``[batch, heads, seqlen, dim]`` tensor transposed);
    ``()``: packed. ``o_shared``: the output tile staged in a shared tile of its own (1) or in ``Q_shared`` (0)."""
    sq, sk = lengths({"seq_len": seq_len, "seq_len_q": seq_len_q, "seq_len_k": seq_len_k})
    q_shape = (batch, sq, heads, dim)
    kv_shape = (batch, sk, kv_heads, dim)
    q_type, k_type, v_type = _views(dtype, (q_shape, q_strides), (kv_shape, k_strides), (kv_shape, v_strides))
    program, grid, rows_of = _bshd_program(heads, kv_heads, sq, sk, dim, causal, softmax_scale, dtype, block_M,
                                           block_N, num_stages, pack_gqa, key_tail, o_shared=o_shared)

    @T.prim_func
    def flash_attention(Q: q_type, K: k_type, V: v_type, O: T.Tensor(q_shape, dtype)):
        with T.Kernel(*grid, batch, threads=threads) as (bx, by, bz):
            program(Q, K, V, O, rows_of(bx, by, bz))

    return flash_attention


def _views(dtype: str, *tensors: tuple) -> tuple:
    """The global types of ``(shape, strides)`` pairs: packed where ``strides`` is empty, else at those strides of
    every dim but the last (unit-strided)."""
    return tuple(operand(shape, dtype, (*strides, 1) if strides else ()) for shape, strides in tensors)


def _bshd_program(heads: int, kv_heads: int, sq: int, sk: int, dim: int, causal: bool, softmax_scale: float,
                  dtype: str, block_M: int, block_N: int, num_stages: int, pack_gqa: int, key_tail: int,
                  k_head0: int = 0, v_head0: int = 0, o_shared: int = 0):
    """``(program, grid, rows_of)``: the tile program over ``[batch, seqlen, heads, dim]`` tensors, where every
    query block reads the key blocks it sees; the grid's query-block and head dims; the rows of launch index
    ``(bx, by, bz)``. ``pack_gqa``: a block takes every query head of one key/value head; ``key_tail``: the keys
    past the last whole key block take a step of their own after the loop (:func:`_tail_keys`); ``o_shared``: the
    output tile staged in a shared tile of its own."""
    pack = _pack(heads, kv_heads, pack_gqa)
    per = block_M // pack
    tail = _tail_keys(causal, block_N, sk) if key_tail else 0
    n_blocks, n_query_blocks = (sk // block_N if tail else T.ceildiv(sk, block_N)), T.ceildiv(sq, per)

    def kv_blocks(rows: _Rows):
        """Key blocks query block ``rows.qb`` attends to (none for a block whose queries see no key)."""
        if not causal:
            return n_blocks
        seen = T.ceildiv((rows.qb + 1) * per + sk - sq, block_N) if sk != sq else \
            T.ceildiv((rows.qb + 1) * per, block_N)
        return T.min(n_blocks, seen) if sk >= sq else T.max(0, T.min(n_blocks, seen))

    def rows_of(bx, by, bz) -> _Rows:
        return _Rows(bz, by * pack if pack > 1 else by, _query_block(bx, n_query_blocks, causal), 0, 0, sq, sk)

    program = _tile_program(dim, dtype, causal, False, causal and sq > sk, _scale(softmax_scale, dim),
                            heads // kv_heads, block_M, block_N, num_stages, kv_blocks, k_head0, v_head0, pack, tail,
                            bool(o_shared))
    return program, (n_query_blocks, heads // pack), rows_of


def build_flash_attention_qkv(
    batch: int, heads: int, kv_heads: int, seq_len: int, dim: int, causal: bool, softmax_scale: float, dtype: str,
    block_M: int, block_N: int, threads: int, num_stages: int, pack_gqa: int = 0, key_tail: int = 0,
    o_shared: int = 0,
):
    """Self-attention over one ``QKV [batch, seqlen, heads + 2 kv_heads, dim]`` tensor (the query heads, then the
    key heads, then the value heads: a fused QKV projection's output viewed by heads, as ``gemm_rope`` writes it),
    so the projection's output is read as it lies; ``O [batch, seqlen, heads, dim]``."""
    program, grid, rows_of = _bshd_program(heads, kv_heads, seq_len, seq_len, dim, causal, softmax_scale, dtype,
                                           block_M, block_N, num_stages, pack_gqa, key_tail, heads, heads + kv_heads,
                                           o_shared)

    @T.prim_func
    def flash_attention_qkv(QKV: T.Tensor((batch, seq_len, heads + 2 * kv_heads, dim), dtype),
                            O: T.Tensor((batch, seq_len, heads, dim), dtype)):
        with T.Kernel(*grid, batch, threads=threads) as (bx, by, bz):
            program(QKV, QKV, QKV, O, rows_of(bx, by, bz))

    return flash_attention_qkv


def build_flash_attention_varlen(
    batch: int, heads: int, kv_heads: int, max_seqlen_q: int, max_seqlen_k: int, dim: int, causal: bool,
    softmax_scale: float, dtype: str, block_M: int, block_N: int, threads: int, num_stages: int, pack_gqa: int = 0,
    q_strides: tuple = (), k_strides: tuple = (), v_strides: tuple = (),
):
    """``O = softmax(Q K^T * scale) V`` per sequence and head over packed ``[total, heads, dim]`` tensors: sequence
    ``b`` holds query rows ``cu_seqlens_q[b] .. cu_seqlens_q[b + 1]`` and key rows ``cu_seqlens_k[b] ..
    cu_seqlens_k[b + 1]``. ``total_q``/``total_k`` are symbolic: one kernel serves every batch whose sequences
    are at most ``max_seqlen_q``/``max_seqlen_k`` long. The grid covers ``max_seqlen_q``; a block past its
    sequence's queries leaves before its first op. ``q_strides``, ``k_strides``, ``v_strides``: a view's token and head
    strides in elements (the heads of a fused projection); ``()``: packed. ``pack_gqa``: a block takes every query
    head of one key/value head, ``block_M // groups`` queries of each."""
    total_q, total_k = T.dynamic("total_q"), T.dynamic("total_k")
    q_shape = (total_q, heads, dim)
    kv_shape = (total_k, kv_heads, dim)
    q_type, k_type, v_type = _views(dtype, (q_shape, q_strides), (kv_shape, k_strides), (kv_shape, v_strides))
    capacity = T.ceildiv(max_seqlen_k, block_N)  # bounds the trip count for extraction
    pack = _pack(heads, kv_heads, pack_gqa)
    per = block_M // pack
    n_query_blocks = T.ceildiv(max_seqlen_q, per)

    def kv_blocks(rows: _Rows):
        """Key blocks the query block attends to; at most ``capacity``."""
        seen = T.ceildiv(rows.sk, block_N)
        if causal:
            seen = T.max(0, T.min(seen, T.ceildiv((rows.qb + 1) * per + rows.sk - rows.sq, block_N)))
        # at least one: a block whose queries see no key runs one fully masked step and stores zeros, where a
        # trip count that may be 0 makes TileLang guard every statement of the pipeline's first step and ptxas
        # serialize the wgmmas (C7514): 1.6x slower
        return T.max(1, T.min(capacity, seen))

    program = _tile_program(dim, dtype, causal, True, True, _scale(softmax_scale, dim), heads // kv_heads,
                            block_M, block_N, num_stages, kv_blocks, pack=pack)

    def rows_of(cu_q, cu_k, bx, by, bz) -> _Rows:
        # bound once: spelled out in every mask, bound and address, the two loads each took TVM's simplifier
        # 4-6 minutes over an A100's software pipeline (30 s bound)
        q0, k0 = T.bind(cu_q[bz]), T.bind(cu_k[bz])
        return _Rows(bz, by * pack if pack > 1 else by, _query_block(bx, n_query_blocks, causal), q0, k0,
                     T.bind(cu_q[bz + 1] - q0), T.bind(cu_k[bz + 1] - k0))

    @T.prim_func
    def flash_attention_varlen(
        Q: q_type, K: k_type, V: v_type,
        cu_seqlens_q: T.Tensor((batch + 1,), "int32"), cu_seqlens_k: T.Tensor((batch + 1,), "int32"),
        O: T.Tensor(q_shape, dtype),
    ):
        with T.Kernel(n_query_blocks, heads // pack, batch, threads=threads) as (bx, by, bz):
            rows = rows_of(cu_seqlens_q, cu_seqlens_k, bx, by, bz)
            if rows.qb * per >= rows.sq:  # past its sequence's queries: every role leaves before its first op
                T.thread_return()
            program(Q, K, V, O, rows)

    # priced as if every sequence were the longest (as the template's flops count it)
    return priced(flash_attention_varlen, {"total_q": batch * max_seqlen_q, "total_k": batch * max_seqlen_k})


# ---------------------------------------------------------------- parameters
def _fail(template: str, param: str, message: str) -> TemplateError:
    """A TemplateError that names the offending parameter first."""
    return TemplateError(f"{template}: parameter {param!r} {message}")


def _check_int(template: str, key: str, value: Any, least: int = 1) -> None:
    """Shapes are ints of at least ``least`` (bools excluded)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        what = "a positive int" if least == 1 else f"an int >= {least}"
        raise _fail(template, key, f"must be {what}, got {value!r}")


def _check_common(template: str, problem: Mapping[str, Any], tile: Mapping[str, Any]) -> None:
    """Head dim, dtype, flags, GQA ratio, scale, and the tile's warps against its query rows."""
    for key in ("batch", "heads", "kv_heads"):
        _check_int(template, key, problem[key])
    if (why := head_dim_error(problem["dim"])) is not None:
        raise _fail(template, "dim", why)
    if problem["dtype"] not in _DTYPES:
        raise _fail(template, "dtype", f"must be one of {_DTYPES}, got {problem['dtype']!r}")
    if not isinstance(problem["causal"], bool):
        raise _fail(template, "causal", f"must be a bool, got {problem['causal']!r}")
    if problem["heads"] % problem["kv_heads"]:
        raise _fail(template, "kv_heads", f"={problem['kv_heads']} must divide heads={problem['heads']}")
    scale = problem["softmax_scale"]
    if not isinstance(scale, (int, float)) or isinstance(scale, bool) or not math.isfinite(scale) or scale < 0:
        raise _fail(template, "softmax_scale", f"must be a finite float > 0 (or 0 for 1/sqrt(dim)), got {scale!r}")
    if tile["threads"] % 32:
        raise _fail(template, "threads", f"must be a multiple of 32, got {tile['threads']}")
    _check_pack(template, problem, tile)
    _check_head_tile(template, problem, tile)
    rows = tile["threads"] // 32 * 16
    if tile["block_M"] % rows:
        raise _fail(template, "block_M", f"={tile['block_M']} must be a multiple of {rows} for "
                                         f"threads={tile['threads']}: GemmWarpPolicy.FullRow gives each warp 16 or "
                                         "more query rows")


def _check_head_tile(template: str, problem: Mapping[str, Any], tile: Mapping[str, Any]) -> None:
    """A tile size offered for one head dim only (``_HEAD_TILES``)."""
    for (key, value), dim in _HEAD_TILES.items():
        if tile[key] == value and problem["dim"] != dim:
            raise _fail(template, key, f"={value} is offered at head dim {dim} only, got dim={problem['dim']}")


def _check_pack(template: str, problem: Mapping[str, Any], tile: Mapping[str, Any]) -> None:
    """``pack_gqa`` (0 or 1) packs a key/value head's query heads into one block, ``block_M // groups`` queries
    of each: only with GQA/MQA, only in slices of 8 or more rows (a 128-byte swizzle's period, so each head's
    slice of the tile stays a whole TMA box), and only at head dims of whole 128-byte panels (TileLang 0.1.15
    will not TMA a narrower panel's slice: "plain SMEM layout is not a bijection")."""
    pack = tile.get("pack_gqa", 0)
    if pack not in (0, 1):
        raise _fail(template, "pack_gqa", f"must be 0 or 1, got {pack!r}")
    groups = problem["heads"] // problem["kv_heads"]
    if pack and groups == 1:
        raise _fail(template, "pack_gqa", f"=1 needs fewer key/value heads than query heads (heads={problem['heads']}, "
                                          f"kv_heads={problem['kv_heads']})")
    if pack and problem["dim"] % _PANEL:
        raise _fail(template, "pack_gqa", f"=1 needs a head dim of whole {_PANEL}-column panels, got "
                                          f"dim={problem['dim']}")
    if pack and (tile["block_M"] % groups or tile["block_M"] // groups % 8):
        raise _fail(template, "pack_gqa", f"=1 needs block_M={tile['block_M']} to hold the {groups} query heads of a "
                                          "key/value head in slices of a multiple of 8 rows")


def _check(problem: Mapping[str, Any], tile: Mapping[str, Any]) -> None:
    """``flash_attention``'s ``Template.check``: any positive lengths (``seq_len_q``/``seq_len_k`` 0 stand for
    ``seq_len``) and tensors packed or at strides TMA can address."""
    _check_int("flash_attention", "seq_len", problem["seq_len"])
    for key in ("seq_len_q", "seq_len_k"):
        _check_int("flash_attention", key, problem[key], least=0)
    _check_common("flash_attention", problem, tile)
    _check_key_tail("flash_attention", problem, tile, lengths(problem)[1])
    _check_o_shared("flash_attention", problem, tile)
    check_strides("flash_attention", problem, {key: ("batch", "seqlen", "heads") for key in _STRIDES})


def _check_key_tail(template: str, problem: Mapping[str, Any], tile: Mapping[str, Any], seq_k: int) -> None:
    """``key_tail`` (0 or 1) takes the keys past the last whole key block in a step of their own: only where there
    are such keys and no causal mask reaches them (:func:`_tail_keys`)."""
    value = tile.get("key_tail", 0)
    if value not in (0, 1):
        raise _fail(template, "key_tail", f"must be 0 or 1, got {value!r}")
    if value and not _tail_keys(problem["causal"], tile["block_N"], seq_k):
        raise _fail(template, "key_tail", f"=1 needs a non-causal key length past one block and no multiple of "
                                          f"block_N={tile['block_N']}, got seq_len_k={seq_k}, "
                                          f"causal={problem['causal']}")


def _check_o_shared(template: str, problem: Mapping[str, Any], tile: Mapping[str, Any]) -> None:
    """``o_shared`` (0 or 1) stages the output tile in a shared tile of its own instead of ``Q_shared``: for a
    persistent walk, which the search offers only where every block runs the same trips
    (:func:`pt_tvm.space.walks_persistently`), so not under a causal mask."""
    value = tile.get("o_shared", 0)
    if value not in (0, 1):
        raise _fail(template, "o_shared", f"must be 0 or 1, got {value!r}")
    if value and problem["causal"]:
        raise _fail(template, "o_shared", "=1 serves a persistent walk, which a causal mask's unequal blocks do not "
                                          "take; use 0")


def _check_qkv(problem: Mapping[str, Any], tile: Mapping[str, Any]) -> None:
    """``flash_attention_qkv``'s ``Template.check``."""
    _check_int("flash_attention_qkv", "seq_len", problem["seq_len"])
    _check_common("flash_attention_qkv", problem, tile)
    _check_key_tail("flash_attention_qkv", problem, tile, problem["seq_len"])
    _check_o_shared("flash_attention_qkv", problem, tile)


def _check_varlen(problem: Mapping[str, Any], tile: Mapping[str, Any]) -> None:
    """``flash_attention_varlen``'s ``Template.check``."""
    for key in ("max_seqlen_q", "max_seqlen_k"):
        _check_int("flash_attention_varlen", key, problem[key])
    _check_common("flash_attention_varlen", problem, tile)
    check_strides("flash_attention_varlen", problem, {key: ("total", "heads") for key in _STRIDES})


# ---------------------------------------------------------------- inputs
def _randn(shape: tuple, problem: Mapping[str, Any], device: Any, generator: torch.Generator | None) -> torch.Tensor:
    """Standard-normal values drawn on the generator's device, then cast and moved: scores then have unit
    variance after the ``1/sqrt(D)`` scale, well inside fp16/bf16 range."""
    where = generator.device if generator is not None else device
    dtype = getattr(torch, problem["dtype"])
    return torch.randn(shape, generator=generator, device=where).to(device=device, dtype=dtype)


def _make_inputs(problem: Mapping[str, Any], device: Any, generator: torch.Generator | None) -> tuple:
    """``Q [B, Sq, H, D]``, ``K`` and ``V [B, Sk, Hkv, D]``; where the problem gives a tensor's strides, a view at
    those strides of random storage just large enough."""
    p = problem
    sq, sk = lengths(p)
    shapes = {"q": (p["batch"], sq, p["heads"], p["dim"]), "k": (p["batch"], sk, p["kv_heads"], p["dim"]),
              "v": (p["batch"], sk, p["kv_heads"], p["dim"])}
    return tuple(_randn_view(shape, p.get(f"{name}_strides", ()), p, device, generator)
                 for name, shape in shapes.items())


def _randn_view(shape: tuple, strides: tuple, problem: Mapping[str, Any], device: Any,
                generator: torch.Generator | None) -> torch.Tensor:
    """:func:`_randn` packed, or a view at ``strides`` (:func:`strided`)."""
    return strided(lambda s: _randn(s, problem, device, generator), shape, strides)


def _make_qkv_inputs(problem: Mapping[str, Any], device: Any, generator: torch.Generator | None) -> tuple:
    """``QKV [B, S, H + 2 Hkv, D]``."""
    p = problem
    return (_randn((p["batch"], p["seq_len"], p["heads"] + 2 * p["kv_heads"], p["dim"]), p, device, generator),)


def _varlen_seqlens(batch: int, longest: int, device: Any, generator: torch.Generator | None) -> torch.Tensor:
    """``cu_seqlens [batch + 1]`` int32 of random lengths from 1 to ``longest``, the first sequence ``longest``
    long (so the problem's maximum is reached)."""
    where = generator.device if generator is not None else device
    n = torch.randint(1, longest + 1, (batch,), generator=generator, device=where)
    n[0] = longest
    return torch.nn.functional.pad(n.cumsum(0), (1, 0)).to(device=device, dtype=torch.int32)


def _make_varlen_inputs(problem: Mapping[str, Any], device: Any, generator: torch.Generator | None) -> tuple:
    """``(q [total_q, H, D], k, v [total_k, Hkv, D], cu_seqlens_q, cu_seqlens_k)``, lengths drawn at random
    (queries and keys apart: some sequences have more queries than keys)."""
    p = problem
    cu_q = _varlen_seqlens(p["batch"], p["max_seqlen_q"], device, generator)
    cu_k = _varlen_seqlens(p["batch"], p["max_seqlen_k"], device, generator)
    total_q, total_k = int(cu_q[-1]), int(cu_k[-1])
    shapes = {"q": (total_q, p["heads"], p["dim"]), "k": (total_k, p["kv_heads"], p["dim"]),
              "v": (total_k, p["kv_heads"], p["dim"])}
    return (*(_randn_view(shape, p.get(f"{name}_strides", ()), p, device, generator)
              for name, shape in shapes.items()), cu_q, cu_k)


# ---------------------------------------------------------------- references
_SCORE_BYTES = 2 << 30  # float32 scores the reference holds at once (S16384 H32 at once would be 32 GiB)


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, scale: float) -> torch.Tensor:
    """Float32 attention of ``q [h, sq, D]`` over ``k``/``v [h, sk, D]``, causal aligned bottom-right; rows that
    see no key are 0."""
    scores = (q @ k.transpose(1, 2)) * scale
    sq, sk = q.shape[1], k.shape[1]
    if causal:
        hidden = torch.ones(sq, sk, dtype=torch.bool, device=q.device).triu(sk - sq + 1)
        scores.masked_fill_(hidden, float("-inf"))
    return torch.softmax(scores, dim=-1).nan_to_num_(0.0) @ v


def _reference_bshd(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, causal: bool, scale: float) -> torch.Tensor:
    """Float32 attention ``[B, Sq, H, D]``, a few heads of one batch entry at a time to bound the ``Sq*Sk``
    scores."""
    groups = Q.shape[2] // K.shape[2]
    H = Q.shape[2]
    out = torch.empty(Q.shape, dtype=torch.float32, device=Q.device)
    step = max(1, _SCORE_BYTES // (max(Q.shape[1] * K.shape[1], 1) * 4))
    for b in range(Q.shape[0]):
        for h in range(0, H, step):
            q = Q[b, :, h:h + step].float().transpose(0, 1)                                  # [h, Sq, D]
            kv = slice(h // groups, (min(h + step, H) - 1) // groups + 1)
            k = K[b, :, kv].float().transpose(0, 1).repeat_interleave(groups, dim=0)         # heads h0 // groups ..
            v = V[b, :, kv].float().transpose(0, 1).repeat_interleave(groups, dim=0)
            first = h - kv.start * groups                                                    # .. aligned to query h
            k, v = k[first:first + q.shape[0]], v[first:first + q.shape[0]]
            out[b, :, h:h + step] = _attend(q, k, v, causal, scale).transpose(0, 1)
    return out


def _softmax_scale(problem: Mapping[str, Any], dim: int) -> float:
    return problem.get("softmax_scale") or 1.0 / math.sqrt(dim)


def _reference(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, **problem: Any) -> torch.Tensor:
    """Float32 attention ``[B, Sq, H, D]``."""
    return _reference_bshd(Q, K, V, bool(problem.get("causal")), _softmax_scale(problem, Q.shape[-1]))


def _qkv_reference(QKV: torch.Tensor, **problem: Any) -> torch.Tensor:
    """Float32 attention ``[B, S, H, D]`` of the query, key and value heads of ``QKV``."""
    q, k, v = QKV.split([problem["heads"], problem["kv_heads"], problem["kv_heads"]], dim=2)
    return _reference(q, k, v, **problem)


def _varlen_reference(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, cu_seqlens_q: torch.Tensor,
                      cu_seqlens_k: torch.Tensor, **problem: Any) -> torch.Tensor:
    """Float32 attention ``[total_q, H, D]``, one sequence at a time."""
    out = torch.empty(Q.shape, dtype=torch.float32, device=Q.device)
    causal, scale = bool(problem.get("causal")), _softmax_scale(problem, Q.shape[-1])
    cq, ck = cu_seqlens_q.tolist(), cu_seqlens_k.tolist()
    for b in range(len(cq) - 1):
        q, k, v = Q[cq[b]:cq[b + 1]], K[ck[b]:ck[b + 1]], V[ck[b]:ck[b + 1]]
        out[cq[b]:cq[b + 1]] = _reference_bshd(q[None], k[None], v[None], causal, scale)[0]
    return out


# ---------------------------------------------------------------- flops
def visible_pairs(sq: int, sk: int, causal: bool) -> float:
    """Visible (query, key) pairs of one sequence: all, or for a bottom-right causal mask those with
    ``j <= i + sk - sq``; for equal lengths half of them, as FlashAttention's papers count causal FLOPs."""
    if not causal:
        return float(sq * sk)
    if sq == sk:
        return sq * sk / 2
    return sk * (sk + 1) / 2 if sq > sk else sq * (sk - sq) + sq * (sq + 1) / 2


def _flops(problem: Mapping[str, Any]) -> float:
    """Two GEMMs of ``2 * D`` per visible (query, key) pair and head."""
    p = problem
    return 4.0 * p["batch"] * p["heads"] * p["dim"] * visible_pairs(*lengths(p), p["causal"])


def _varlen_flops(problem: Mapping[str, Any]) -> float:
    """As if every sequence were ``max_seqlen_q`` x ``max_seqlen_k`` (the problem knows no other lengths)."""
    p = problem
    return 4.0 * p["batch"] * p["heads"] * p["dim"] * visible_pairs(p["max_seqlen_q"], p["max_seqlen_k"], p["causal"])


def _varlen_padding(problem: Mapping[str, Any], tile: Mapping[str, Any]) -> float:
    """The varlen kernel's price factor for the rows past its sequences' ends. Its sTask-graph prices every
    sequence at the longest, in whole query blocks; at run time a sequence's last block holds on average
    ``(rows - 1) / 2`` rows a head past its end (the remainders taken as uniform), each computing as a row of the
    block does, and under a causal mask that block is the sequence's heaviest (twice the mean row's keys). A
    sequence is taken as three quarters of the longest (the ops' buckets hold lengths from half the bucket up).
    GQA packed cuts the rows a head to ``block_M // groups``: the bucket's kernel packed ran 1.05-1.09x faster at
    777-2500 tokens on one H200 (benchmarks/results/2026-11-30-h200-varlen-pack), where the graph prices the two
    within 2.5%."""
    rows = tile["block_M"] // _pack(problem["heads"], problem["kv_heads"], tile.get("pack_gqa", 0))
    return 1 + (2 if problem["causal"] else 1) * (rows - 1) / (2 * 0.75 * problem["max_seqlen_q"])


_TILE = {"block_M": 128, "block_N": 128, "threads": 256, "pack_gqa": 0}
_TILE_SPACE = {"block_M": (64, 128, 192), "block_N": (64, 80, 128), "threads": (128, 256), "pack_gqa": (0, 1)}
# the key tail's own step where it applies and its tiles leave a pipelined loop: on seven non-causal shapes of one
# H200 it ran 0.95-0.98x the time of the whole masked key block at the same tile, which the cost model priced at
# 0.89-1.07x (it prices the step after the loop as one more loop step), so it is preferred, not searched by price
# (benchmarks/results/2026-12-01-h200-key-tail)
_BSHD_TILE, _BSHD_SPACE, _BSHD_PREFER = ({**_TILE, "key_tail": 0, "o_shared": 0},
                                        {**_TILE_SPACE, "key_tail": (0, 1), "o_shared": (0, 1)}, {"key_tail": 1})
# FlashAttention 3's Hopper tiles for head dims 64 and 256, offered at those head dims only (_check_head_tile):
# 192 query rows over three consumer warpgroups ran 1.01-1.12x the best 128-row tile at head dim 64 (4k and 16k
# tokens) and 80-key blocks 1.02-1.04x 64-key ones at 256 on one H100
# (benchmarks/results/2026-11-27-h100-attention-tiles); its 176-key tile for head dim 128 ran 0.96-1.01x, left out
_HEAD_TILES = {("block_M", 192): 64, ("block_N", 80): 256}
_COMMON = {"dim": 128, "causal": False, "softmax_scale": 0.0, "dtype": "float16"}

_STRIDES = {"q_strides": (), "k_strides": (), "v_strides": ()}  # () packed; else the strides of all dims but D

FLASH_ATTENTION = Template(
    name="flash_attention",
    builder=build_flash_attention,
    reference=_reference,
    problem={"batch": 8, "heads": 16, "kv_heads": 16, "seq_len": 4096, "seq_len_q": 0, "seq_len_k": 0, **_COMMON,
             **_STRIDES},
    tile=dict(_BSHD_TILE),
    tile_space=dict(_BSHD_SPACE),
    prefer=dict(_BSHD_PREFER),
    walked={"o_shared": 1},
    make_inputs=_make_inputs,
    flops=_flops,
    out_idx=(3,),
    check=_check,
    doc="Attention forward, BSHD: O = softmax(Q K^T * scale) V, any lengths (seq_len_q/seq_len_k: a KV cache; "
        "0: seq_len), causal aligned bottom-right, GQA/MQA, softmax_scale 0: 1/sqrt(D); q/k/v_strides: views "
        "(batch, seqlen, heads strides), () packed.",
    pass_configs=FAST_MATH,
)

FLASH_ATTENTION_QKV = Template(
    name="flash_attention_qkv",
    builder=build_flash_attention_qkv,
    reference=_qkv_reference,
    problem={"batch": 1, "heads": 32, "kv_heads": 8, "seq_len": 4096, **_COMMON, "causal": True},
    tile=dict(_BSHD_TILE),
    tile_space=dict(_BSHD_SPACE),
    prefer=dict(_BSHD_PREFER),
    walked={"o_shared": 1},
    make_inputs=_make_qkv_inputs,
    flops=lambda p: _flops({**p, "seq_len_q": 0, "seq_len_k": 0}),
    out_idx=(1,),
    check=_check_qkv,
    doc="Self-attention over one QKV [B, S, H + 2 Hkv, D] tensor (query, key, value heads: a fused QKV projection's "
        "output, as gemm_rope writes it) -> O [B, S, H, D]; causal, GQA/MQA, softmax_scale 0: 1/sqrt(D).",
    pass_configs=FAST_MATH,
)

FLASH_ATTENTION_VARLEN = Template(
    name="flash_attention_varlen",
    builder=build_flash_attention_varlen,
    reference=_varlen_reference,
    problem={"batch": 8, "heads": 16, "kv_heads": 16, "max_seqlen_q": 4096, "max_seqlen_k": 4096, **_COMMON,
             **_STRIDES},
    tile=dict(_TILE),
    tile_space=dict(_TILE_SPACE),
    make_inputs=_make_varlen_inputs,
    flops=_varlen_flops,
    out_idx=(5,),
    check=_check_varlen,
    padding_scale=_varlen_padding,
    doc="Attention forward over packed [total, heads, D] sequences with int32 cu_seqlens_q/k (flash_attn_varlen_func; "
        "call kernel(q, k, v, cu_seqlens_q, cu_seqlens_k) -> o); flops as if every sequence were max_seqlen long; "
        "q/k/v_strides: views (total, heads strides), () packed.",
    pass_configs=FAST_MATH,
)
