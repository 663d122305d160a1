"""Decoding attention (FlashDecoding): a few new queries per sequence against a long KV cache, split over the keys.

``q [batch, q_len, heads, dim]`` (``q_len`` new tokens, 1 to 16: speculative
decoding) attends to a KV cache holding ``cache_seqlens[b]`` tokens of sequence
``b`` (the new ones included, last): query ``i`` sees keys
``0 .. cache_seqlens[b] - q_len + i``. The cache is either contiguous,
``[batch, kv_len, kv_heads, dim]``, or paged as vLLM and FlashInfer hold it:
``[num_pages, page_size, kv_heads, dim]`` with ``block_table [batch, max_pages]``
naming sequence ``b``'s ``p``-th page.

One block computes one KV head of one sequence over one split of its keys: it
packs the ``q_len x (heads / kv_heads)`` query rows that read that KV head into
one tile (so every KV byte is read once: what puts decoding at the memory
roofline), walks the split's key blocks in a plain ``T.Pipelined`` loop with
FlashAttention's online softmax, and writes either the output (one split) or a
partial output with its log-sum-exp per split; the second kernel of the
template, :func:`build_combine`, reduces the partials, or (``fused_combine``)
the last block of each sequence and KV head to finish does. The grid is
``splits x kv_heads x batch``: splitting the keys is how a small batch fills the
GPU, and the split count, the combine's form and the key tile are tile
parameters that pt-tvm's inter-EU search chooses.

Cache slots past ``cache_seqlens[b]`` are read when a key block straddles the end
of a sequence; their scores are masked, but they must hold finite values (as the
zero-initialized caches of serving systems do): ``0 * NaN`` would leak into the
output.
"""
# No ``from __future__ import annotations``: T.prim_func evaluates the
# parameter annotations against the builder's locals (shapes, dtype).
import itertools
import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

import tilelang
import tilelang.language as T
import torch
import tvm
from tilelang.contrib.nvcc import have_pdl

from .base import FAST_MATH, Template, TemplateError, priced, size
from .online_softmax import (
    ACCUM,
    LOG2E,
    alloc_tiles,
    guard_empty_rows,
    head_dim_error,
    rescale_and_exponentiate,
    update_max,
)

__all__ = ["DECODE_ATTENTION", "DecodeTemplate", "SplitKV", "FusedSplitKV", "build_decode_attention", "build_combine",
           "query_rows", "block_rows", "kv_bytes"]

_DTYPES = ("float16", "bfloat16")
MAX_Q_LEN = 16
_ROW_TILE = 64  # a warpgroup's wgmma covers 64 rows: the packed query rows are padded to a multiple of it


def query_rows(problem: Mapping[str, Any]) -> int:
    """Query rows one block packs: ``q_len`` new tokens of each of the ``heads / kv_heads`` heads of a KV head."""
    return problem["q_len"] * (problem["heads"] // problem["kv_heads"])


def block_rows(problem: Mapping[str, Any]) -> int:
    """The packed rows padded to the tensor cores' row tile."""
    return _ROW_TILE * math.ceil(query_rows(problem) / _ROW_TILE)


def kv_bytes(problem: Mapping[str, Any]) -> float:
    """KV-cache bytes one call reads when every sequence holds ``kv_len`` tokens (for bandwidth figures)."""
    p = problem
    return 2.0 * p["batch"] * p["kv_len"] * p["kv_heads"] * p["dim"] * torch.finfo(getattr(torch, p["dtype"])).bits / 8


def build_decode_attention(
    batch: int, q_len: int, heads: int, kv_heads: int, kv_len: int, dim: int, dtype: str, page_size: int,
    num_pages: int, softmax_scale: float, block_N: int, num_splits: int, threads: int, num_stages: int,
    fused_combine: int = 0, pdl: int = 0, dynamic: bool = False,
):
    """The split kernel: ``O`` (``num_splits == 1``) or ``O_partial``/``LSE`` (one entry per split) for every
    query row of every head. ``page_size == 0`` reads a contiguous cache, otherwise a paged one; the scores are
    scaled by ``softmax_scale``. ``fused_combine``: the last block of each sequence and KV head to finish (counted
    in ``Semaphore``) also combines the partials into ``O``, with no second kernel. ``pdl``: the blocks trigger
    the dependent launch first, so that the combine kernel, launched as a programmatic dependent launch, is placed
    while they run. ``dynamic``: the batch size, the cache's capacity (contiguous) or its pool and block-table
    width (paged) are kernel arguments, priced at the values given: one kernel for every batch and cache of the
    other sizes, as a serving loop calls it."""
    groups = heads // kv_heads
    rows = q_len * groups
    block_M = _ROW_TILE * math.ceil(rows / _ROW_TILE)
    scale = LOG2E * softmax_scale
    paged = page_size > 0
    sizes = {"batch": batch, **({"num_pages": num_pages, "max_pages": kv_len // page_size} if paged
                                else {"kv_len": kv_len})}
    batch, num_pages, max_pages, capacity = _sizes(sizes, page_size, dynamic)
    capacity_blocks = T.ceildiv(capacity, block_N) if dynamic else math.ceil(kv_len / block_N)
    max_per_split = T.ceildiv(capacity_blocks, num_splits) if dynamic else math.ceil(capacity_blocks / num_splits)
    spans_pages = paged and page_size < block_N  # a key block reads several pages
    # a page's rows go by column chunks of the shared tile's swizzle width: 128 bytes, or 64 or 32 where the row
    # is no multiple of 128 bytes (a head dim of 96, 80), as TileLang swizzles such tiles
    elem_bytes = torch.finfo(getattr(torch, dtype)).bits // 8
    chunk = next(w for w in (128, 64, 32) if dim * elem_bytes % w == 0) // elem_bytes
    page_chunks = tuple(itertools.product(range(block_N // page_size), range(dim // chunk))) if spans_pages else ()
    # the fused combine's elements, rows x dim, as whole shares of the threads: a fragment's layout must be
    # one-to-one (4 rows at head dim 80 are 2.5 elements a thread, which TileLang's layout inference refuses)
    combined = math.ceil(rows * dim / threads) * threads
    q_shape = (batch, q_len, heads, dim)
    kv_shape = (num_pages, page_size, kv_heads, dim) if paged else (batch, capacity, kv_heads, dim)
    table_shape = (batch, max_pages if paged else 1)
    part_shape = (batch, q_len, heads, num_splits, dim)
    lse_shape = (batch, q_len, heads, num_splits)
    sem_shape = (batch, kv_heads)

    @dataclass(frozen=True)
    class At:
        """Where a block works: split ``bx``, KV head ``by``, sequence ``bz`` of length ``seqlen``, pages named by
        ``table``. The macros take this object and write its expressions inline (a PrimExpr macro argument
        would become a let inside the loop); the length and the split's first block are bound once, before it."""

        seqlen: Any  # cache_seqlens[bz]
        first: Any  # the split's first key block: the splits share a sequence's blocks evenly
        table: Any
        bx: Any
        by: Any
        bz: Any

        def n_blocks(self):
            """Key blocks of the sequence."""
            return T.ceildiv(self.seqlen, block_N)

        def per_split(self):
            return T.ceildiv(self.n_blocks(), num_splits)

        def split_blocks(self):
            """Key blocks of the split, bounded by the capacity so that extraction can price the loop; at least
            one: a split past a short sequence's end runs one step whose scores are all masked (its partial
            stays empty, as with none), where a trip count that may be 0 makes TileLang guard each statement of
            the pipeline's first step and ptxas serialize the wgmmas (C7514)."""
            if num_splits == 1:
                return T.max(1, T.min(capacity_blocks, self.n_blocks()))
            left = self.n_blocks() - self.first
            return T.min(max_per_split, T.max(1, T.min(self.per_split(), left)))

        def key_limit(self, i):
            """Keys below this are visible to packed row ``i``: the cache up to the row's own token."""
            return self.seqlen if q_len == 1 else self.seqlen - q_len + 1 + i // groups

        def head(self, i):
            """The query head of packed row ``i`` (rows are token-major: ``i = token * groups + g``)."""
            return self.by * groups + i % groups

        def row(self, i):
            """The query token of packed row ``i``, padding rows clamped to the last token."""
            return T.min(i // groups, q_len - 1)

        def page(self, p):
            """The physical page of the sequence's page ``p``, clamped to its last page."""
            return self.table[self.bz, T.min(p, T.ceildiv(self.seqlen, page_size) - 1)]

    @T.macro
    def copy_keys(src, dst, at, k):
        """Key block ``k`` of the split into shared ``dst``: one copy, or one per page and 128-byte column chunk
        when pages are shorter than the block."""
        if not paged:
            T.copy(src[at.bz, (at.first + k) * block_N:(at.first + k + 1) * block_N, at.by, :], dst)
        elif not spans_pages:
            T.copy(src[at.page((at.first + k) * block_N // page_size),
                       (at.first + k) * block_N % page_size:(at.first + k) * block_N % page_size
                       + block_N, at.by, :], dst)
        else:  # a page's rows per 128-byte column chunk: one TMA box each (the swizzled tile keeps chunks apart)
            for p, c in page_chunks:
                T.copy(src[at.page((at.first + k) * (block_N // page_size) + p), 0:page_size, at.by,
                           c * chunk:(c + 1) * chunk],
                       dst[p * page_size:(p + 1) * page_size, c * chunk:(c + 1) * chunk])

    @T.macro
    def combine_if_last(O, O_partial, LSE, Semaphore, at):
        """The fused combine: the block publishes its partials (a fence, then thread 0 bumps the counter
        ``Semaphore[bz, by]``, acquire-release); the block that counts ``num_splits - 1`` arrivals before its own
        fences, combines every split's partials of its rows (other blocks' writes, read through L2) into ``O`` as
        :func:`build_combine` does, and zeroes the counter for the next launch. The weights go through shared
        memory so that every thread takes a share of the rows' elements and issues its loads of all splits
        together (the split's accumulator layout gives the real rows to a sixteenth of the threads, each then
        waiting on its loads one split at a time). One statement (a loop of one step): pt-tvm schedules a
        kernel's top-level statements, and a barrier or fence alone would be none."""
        arrived = T.alloc_shared((1,), "int32")
        weights = T.alloc_shared((rows, num_splits), ACCUM)
        stats = T.alloc_shared((2, rows), ACCUM)  # each row's largest LSE, then the sum of its splits' weights
        acc = T.alloc_fragment((combined,), ACCUM)  # the rows' elements, flat, padded to whole threads' shares
        tx = T.get_thread_binding()
        for _ in T.serial(1):
            T.evaluate(T.call_extern("handle", "__threadfence"))
            T.sync_threads()
            if tx == 0:
                arrived[0] = T.atomic_add(Semaphore[at.bz, at.by], 1, memory_order="acq_rel", return_prev=True)
            T.sync_threads()
            if arrived[0] == num_splits - 1:
                T.evaluate(T.call_extern("handle", "__threadfence"))
                for i, s in T.Parallel(rows, num_splits):
                    weights[i, s] = LSE[at.bz, at.row(i), at.head(i), s]
                for i in T.Parallel(rows):
                    stats[0, i] = -T.infinity(ACCUM)
                    for s in T.unroll(num_splits):
                        stats[0, i] = T.max(stats[0, i], weights[i, s])
                    stats[1, i] = 0
                    for s in T.unroll(num_splits):
                        stats[1, i] += T.exp2(weights[i, s] - stats[0, i])
                for i, s in T.Parallel(rows, num_splits):
                    weights[i, s] = T.exp2(weights[i, s] - stats[0, i]) / stats[1, i]
                for e in T.Parallel(combined):
                    if e < rows * dim:
                        acc[e] = 0
                        for s in T.unroll(num_splits):
                            acc[e] += O_partial[at.bz, at.row(e // dim), at.head(e // dim), s, e % dim] \
                                * weights[e // dim, s]
                        O[at.bz, e // dim // groups, at.head(e // dim), e % dim] = acc[e]
                if tx == 0:
                    Semaphore[at.bz, at.by] = 0

    @T.macro
    def split_program(Q, K, V, O, O_partial, LSE, Semaphore, at):
        if pdl:
            for _ in T.serial(1):  # a statement pt-tvm schedules (a bare call would be none)
                T.pdl_trigger()
        (Q_shared, K_shared, V_shared, acc_s, acc_s_cast, acc_o, scores_max, scores_max_prev, scores_scale,
         scores_sum, logsum, row_max) = alloc_tiles(block_M, block_N, dim, dtype, row_max=True)

        for i, d in T.Parallel(block_M, dim):
            Q_shared[i, d] = T.if_then_else(i < rows, Q[at.bz, at.row(i), at.head(i), d], 0)
        T.fill(acc_o, 0)
        T.fill(logsum, 0)
        T.fill(scores_max, -T.infinity(ACCUM))
        for k in T.Pipelined(at.split_blocks(), num_stages=num_stages):
            copy_keys(K, K_shared, at, k)
            for i, j in T.Parallel(block_M, block_N):
                acc_s[i, j] = T.if_then_else((at.first + k) * block_N + j < at.key_limit(i),
                                             0, -T.infinity(ACCUM))
            T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
            update_max(acc_s, scores_max, scores_max_prev)
            guard_empty_rows(scores_max, row_max)
            rescale_and_exponentiate(acc_s, acc_s_cast, acc_o, row_max, scores_max_prev, scores_scale, scores_sum,
                                     logsum, scale)
            copy_keys(V, V_shared, at, k)
            T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
        if num_splits == 1:
            for i, d in T.Parallel(block_M, dim):
                if i < rows:
                    O[at.bz, i // groups, at.head(i), d] = acc_o[i, d] / logsum[i]
        else:
            for i, d in T.Parallel(block_M, dim):
                if i < rows:
                    O_partial[at.bz, i // groups, at.head(i), at.bx, d] = T.if_then_else(
                        logsum[i] > 0, acc_o[i, d] / logsum[i], 0)
            for i in T.Parallel(block_M):
                if i < rows:
                    LSE[at.bz, i // groups, at.head(i), at.bx] = T.if_then_else(
                        logsum[i] > 0, T.log2(logsum[i]) + scores_max[i] * scale, -T.infinity(ACCUM))
            if fused_combine:
                combine_if_last(O, O_partial, LSE, Semaphore, at)

    def at(seqlens, table, bx, by, bz):
        # bound once: spelled out in every mask, bound and page index, the length's loads took TVM's simplifier
        # over 3 minutes of a paged software pipeline's lowering
        seqlen = T.bind(seqlens[bz])
        first = T.bind(bx * T.ceildiv(T.ceildiv(seqlen, block_N), num_splits)) if num_splits > 1 else 0
        return At(seqlen, first, table, bx, by, bz)

    grid = (num_splits, kv_heads, batch)
    if not paged and num_splits == 1:
        @T.prim_func
        def decode_attention(Q: T.Tensor(q_shape, dtype), K: T.Tensor(kv_shape, dtype), V: T.Tensor(kv_shape, dtype),
                             cache_seqlens: T.Tensor((batch,), "int32"), O: T.Tensor(q_shape, dtype)):
            with T.Kernel(*grid, threads=threads) as (bx, by, bz):
                split_program(Q, K, V, O, None, None, None, at(cache_seqlens, None, bx, by, bz))
    elif not paged and not fused_combine:
        @T.prim_func
        def decode_attention(Q: T.Tensor(q_shape, dtype), K: T.Tensor(kv_shape, dtype), V: T.Tensor(kv_shape, dtype),
                             cache_seqlens: T.Tensor((batch,), "int32"), O_partial: T.Tensor(part_shape, ACCUM),
                             LSE: T.Tensor(lse_shape, ACCUM)):
            with T.Kernel(*grid, threads=threads) as (bx, by, bz):
                split_program(Q, K, V, None, O_partial, LSE, None, at(cache_seqlens, None, bx, by, bz))
    elif num_splits == 1:
        @T.prim_func
        def decode_attention(Q: T.Tensor(q_shape, dtype), K: T.Tensor(kv_shape, dtype), V: T.Tensor(kv_shape, dtype),
                             cache_seqlens: T.Tensor((batch,), "int32"), block_table: T.Tensor(table_shape, "int32"),
                             O: T.Tensor(q_shape, dtype)):
            with T.Kernel(*grid, threads=threads) as (bx, by, bz):
                split_program(Q, K, V, O, None, None, None, at(cache_seqlens, block_table, bx, by, bz))
    elif not fused_combine:
        @T.prim_func
        def decode_attention(Q: T.Tensor(q_shape, dtype), K: T.Tensor(kv_shape, dtype), V: T.Tensor(kv_shape, dtype),
                             cache_seqlens: T.Tensor((batch,), "int32"), block_table: T.Tensor(table_shape, "int32"),
                             O_partial: T.Tensor(part_shape, ACCUM), LSE: T.Tensor(lse_shape, ACCUM)):
            with T.Kernel(*grid, threads=threads) as (bx, by, bz):
                split_program(Q, K, V, None, O_partial, LSE, None, at(cache_seqlens, block_table, bx, by, bz))
    elif not paged:
        @T.prim_func
        def decode_attention(Q: T.Tensor(q_shape, dtype), K: T.Tensor(kv_shape, dtype), V: T.Tensor(kv_shape, dtype),
                             cache_seqlens: T.Tensor((batch,), "int32"), O_partial: T.Tensor(part_shape, ACCUM),
                             LSE: T.Tensor(lse_shape, ACCUM), Semaphore: T.Tensor(sem_shape, "int32"),
                             O: T.Tensor(q_shape, dtype)):
            with T.Kernel(*grid, threads=threads) as (bx, by, bz):
                split_program(Q, K, V, O, O_partial, LSE, Semaphore, at(cache_seqlens, None, bx, by, bz))
    else:
        @T.prim_func
        def decode_attention(Q: T.Tensor(q_shape, dtype), K: T.Tensor(kv_shape, dtype), V: T.Tensor(kv_shape, dtype),
                             cache_seqlens: T.Tensor((batch,), "int32"), block_table: T.Tensor(table_shape, "int32"),
                             O_partial: T.Tensor(part_shape, ACCUM), LSE: T.Tensor(lse_shape, ACCUM),
                             Semaphore: T.Tensor(sem_shape, "int32"), O: T.Tensor(q_shape, dtype)):
            with T.Kernel(*grid, threads=threads) as (bx, by, bz):
                split_program(Q, K, V, O, O_partial, LSE, Semaphore, at(cache_seqlens, block_table, bx, by, bz))
    return priced(decode_attention, sizes if dynamic else {})


def _sizes(sizes: Mapping[str, int], page_size: int, dynamic: bool) -> tuple:
    """``(batch, num_pages, max_pages, capacity)`` of the kernel: the given values, or (``dynamic``) symbolic
    sizes of those names (a contiguous cache's capacity is ``kv_len``; a paged one's, its block table's width in
    pages)."""
    batch, *cache = (size(name, value, dynamic) for name, value in sizes.items())
    if page_size:
        num_pages, max_pages = cache
        return batch, num_pages, max_pages, max_pages * page_size
    return batch, 0, 1, cache[0]


def build_combine(batch: int | None, q_len: int, heads: int, dim: int, dtype: str, num_splits: int,
                  pdl: bool = False):
    """The second kernel: ``O = sum_s 2^(LSE_s - LSE) O_partial_s`` with ``LSE = log2 sum_s 2^LSE_s``, one
    block per query row of one head, a thread per element: each thread issues its loads of every split's LSE and
    partial together, so the kernel waits on memory once. ``pdl``: launched as a programmatic dependent launch
    (Hopper and later), its blocks are placed while the split kernel still runs and wait for its partials in
    ``cudaGridDependencySynchronize``, which hides the launch between the two kernels. ``batch`` None: a
    symbolic batch size, as the split kernel's ``dynamic`` sizes."""
    batch = size("batch", 0, True) if batch is None else batch

    @T.prim_func
    def decode_combine(O_partial: T.Tensor((batch, q_len, heads, num_splits, dim), ACCUM),
                       LSE: T.Tensor((batch, q_len, heads, num_splits), ACCUM),
                       O: T.Tensor((batch, q_len, heads, dim), dtype)):
        with T.Kernel(heads, q_len, batch, threads=dim) as (bx, by, bz):
            if pdl:
                T.pdl_sync()
            d = T.get_thread_binding()
            lse = T.alloc_local((num_splits,), ACCUM)
            part = T.alloc_local((num_splits,), ACCUM)
            stats = T.alloc_local((3,), ACCUM)  # the largest LSE, the sum of the weights, the weighted sum
            for s in T.unroll(num_splits):
                lse[s] = LSE[bz, by, bx, s]
                part[s] = O_partial[bz, by, bx, s, d]
            stats[0] = -T.infinity(ACCUM)
            for s in T.unroll(num_splits):
                stats[0] = T.max(stats[0], lse[s])
            stats[1] = 0
            stats[2] = 0
            for s in T.unroll(num_splits):
                lse[s] = T.exp2(lse[s] - stats[0])
                stats[1] += lse[s]
                stats[2] += part[s] * lse[s]
            O[bz, by, bx, d] = stats[2] / stats[1]

    return decode_combine


# ---------------------------------------------------------------- the template
def pool_pages(problem: Mapping[str, Any]) -> int:
    """Pages in a paged cache's pool: ``num_pages``, or (0) one page per page slot of every sequence."""
    return problem["num_pages"] or problem["batch"] * (problem["kv_len"] // problem["page_size"])


def _fail(param: str, message: str) -> TemplateError:
    return TemplateError(f"decode_attention: parameter {param!r} {message}")


def _check_positive(key: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise _fail(key, f"must be a positive int, got {value!r}")


def _power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


_MAX_ROWS = 128  # packed query rows per block: two wgmma row tiles in one warpgroup's registers
_PAGE_SIZES = (16, 256)  # smallest and largest page size (powers of two)


def _check_problem(problem: Mapping[str, Any]) -> None:
    """Shapes, dtype, GQA ratio, query rows and the paged layout."""
    for key in ("batch", "heads", "kv_heads", "kv_len", "q_len"):
        _check_positive(key, problem[key])
    if problem["q_len"] > MAX_Q_LEN:
        raise _fail("q_len", f"must be at most {MAX_Q_LEN} (a decoding step's new tokens), got {problem['q_len']}")
    if (why := head_dim_error(problem["dim"])) is not None:
        raise _fail("dim", why)
    if problem["dtype"] not in _DTYPES:
        raise _fail("dtype", f"must be one of {_DTYPES}, got {problem['dtype']!r}")
    if problem["heads"] % problem["kv_heads"]:
        raise _fail("kv_heads", f"={problem['kv_heads']} must divide heads={problem['heads']}")
    if query_rows(problem) > _MAX_ROWS:
        raise _fail("q_len", f"x heads/kv_heads = {query_rows(problem)} query rows per KV head; at most {_MAX_ROWS}")
    scale = problem["softmax_scale"]
    if not isinstance(scale, (int, float)) or isinstance(scale, bool) or scale < 0 or not math.isfinite(scale):
        raise _fail("softmax_scale", f"must be a finite float > 0 (or 0 for 1/sqrt(dim)), got {scale!r}")
    for key in ("ragged", "dynamic"):
        if not isinstance(problem[key], bool):
            raise _fail(key, f"must be a bool, got {problem[key]!r}")
    page, pages = problem["page_size"], problem["num_pages"]
    if not isinstance(page, int) or isinstance(page, bool) or page < 0:
        raise _fail("page_size", f"must be 0 (contiguous cache) or a power of two, got {page!r}")
    if page:
        lo, hi = _PAGE_SIZES
        if not _power_of_two(page) or not lo <= page <= hi:
            raise _fail("page_size", f"must be a power of two from {lo} to {hi}, got {page}")
        if problem["kv_len"] % page:
            raise _fail("kv_len", f"={problem['kv_len']} must be a multiple of page_size={page} "
                                  "(the block table's width times the page size)")
    if not isinstance(pages, int) or isinstance(pages, bool) or pages < 0:
        raise _fail("num_pages", f"must be a non-negative int, got {pages!r}")
    if pages and not page:
        raise _fail("num_pages", "needs a paged cache (page_size > 0)")


def _check_tile(problem: Mapping[str, Any], tile: Mapping[str, Any]) -> None:
    """Key tile, split count, threads and the combine's form against the problem."""
    for key in ("block_N", "num_splits", "threads"):
        _check_positive(key, tile[key])
    if tile["fused_combine"] not in (0, 1):
        raise _fail("fused_combine", f"must be 0 (a combine kernel) or 1 (the last block combines), got "
                                     f"{tile['fused_combine']!r}")
    if tile["pdl"] not in (0, 1):
        raise _fail("pdl", f"must be 0 or 1 (the combine kernel a programmatic dependent launch), got {tile['pdl']!r}")
    if tile["pdl"] and (tile["num_splits"] == 1 or tile["fused_combine"]):
        raise _fail("pdl", "=1 needs the combine kernel (num_splits > 1 and fused_combine=0)")
    if tile["fused_combine"] and tile["num_splits"] == 1:
        raise _fail("fused_combine", "=1 needs num_splits > 1 (one split writes O itself: nothing to combine)")
    if not _power_of_two(tile["block_N"]) or tile["block_N"] < 16:
        raise _fail("block_N", f"must be a power of two of at least 16, got {tile['block_N']}")
    blocks = math.ceil(problem["kv_len"] / tile["block_N"])
    if tile["num_splits"] > blocks:
        raise _fail("num_splits", f"={tile['num_splits']} exceeds the {blocks} key blocks of "
                                  f"kv_len={problem['kv_len']}")
    rows = block_rows(problem)
    if tile["threads"] % 128 or rows % (tile["threads"] // 32 * 16):
        raise _fail("threads", f"={tile['threads']} must be a multiple of 128 whose warps get 16 or more of the "
                               f"{rows} packed query rows each")


def _check(problem: Mapping[str, Any], tile: Mapping[str, Any]) -> None:
    _check_problem(problem)
    _check_tile(problem, tile)


def scale_of(problem: Mapping[str, Any]) -> float:
    """The softmax scale: ``softmax_scale``, or (0) ``1 / sqrt(dim)``."""
    return problem["softmax_scale"] or 1.0 / math.sqrt(problem["dim"])


def _build(batch, q_len, heads, kv_heads, kv_len, dim, dtype, page_size, num_pages, ragged, dynamic, softmax_scale,
           block_N, num_splits, threads, fused_combine, pdl, num_stages):
    """``Template.builder``: the split kernel (``ragged`` only shapes the inputs)."""
    problem = dict(batch=batch, kv_len=kv_len, dim=dim, page_size=page_size, num_pages=num_pages,
                   softmax_scale=softmax_scale)
    return build_decode_attention(batch, q_len, heads, kv_heads, kv_len, dim, dtype, page_size,
                                  pool_pages(problem) if page_size else 0, scale_of(problem), block_N, num_splits,
                                  threads, num_stages, fused_combine, pdl, dynamic)


def make_inputs(problem: Mapping[str, Any], device: Any, generator: torch.Generator | None) -> tuple:
    """``(q, k_cache, v_cache, cache_seqlens[, block_table])``: standard-normal q and cache; every sequence full
    (``kv_len`` tokens) or, ``ragged``, of a random length from ``q_len`` to ``kv_len``; pages of a sequence
    scattered over the pool at random."""
    p = problem
    dtype = getattr(torch, p["dtype"])
    where = generator.device if generator is not None else device

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(shape, generator=generator, device=where).to(device=device, dtype=dtype)

    q = randn(p["batch"], p["q_len"], p["heads"], p["dim"])
    if p["ragged"]:
        seqlens = torch.randint(p["q_len"], p["kv_len"] + 1, (p["batch"],), generator=generator, device=where)
    else:
        seqlens = torch.full((p["batch"],), p["kv_len"], device=where)
    seqlens = seqlens.to(device=device, dtype=torch.int32)
    if not p["page_size"]:
        shape = (p["batch"], p["kv_len"], p["kv_heads"], p["dim"])
        return q, randn(*shape), randn(*shape), seqlens
    pages, width = pool_pages(p), p["kv_len"] // p["page_size"]
    shape = (pages, p["page_size"], p["kv_heads"], p["dim"])
    if pages >= p["batch"] * width:
        order = torch.randperm(pages, generator=generator, device=where)[:p["batch"] * width]
    else:  # a pool smaller than the block tables: sequences share pages
        order = torch.randint(0, pages, (p["batch"] * width,), generator=generator, device=where)
    table = order.reshape(p["batch"], width).to(device=device, dtype=torch.int32)
    return q, randn(*shape), randn(*shape), seqlens, table


def reference(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, cache_seqlens: torch.Tensor,
              block_table: torch.Tensor | None = None, **problem: Any) -> torch.Tensor:
    """Float32 decoding attention ``[batch, q_len, heads, dim]``, one sequence at a time."""
    batch, q_len, heads, dim = q.shape
    kv_heads = k_cache.shape[2]
    scale = problem.get("softmax_scale") or 1.0 / math.sqrt(dim)
    out = torch.empty(q.shape, dtype=torch.float32, device=q.device)
    for b in range(batch):
        n = int(cache_seqlens[b])
        keys, values = (k_cache[b, :n], v_cache[b, :n]) if block_table is None else (
            _gather(k_cache, block_table[b], n), _gather(v_cache, block_table[b], n))
        out[b] = _attend(q[b].float(), keys.float(), values.float(), heads // kv_heads, scale)
    return out


def _gather(pages: torch.Tensor, table: torch.Tensor, n: int) -> torch.Tensor:
    """The first ``n`` tokens of a sequence whose pages ``table`` names, ``[n, kv_heads, dim]``."""
    size = pages.shape[1]
    return pages[table[:math.ceil(n / size)].long()].flatten(0, 1)[:n]


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, groups: int, scale: float) -> torch.Tensor:
    """Attention of one sequence's ``q [q_len, heads, dim]`` over ``k``/``v [n, kv_heads, dim]``: query ``i``
    sees keys ``0 .. n - q_len + i``."""
    q_len, n = q.shape[0], k.shape[0]
    k = k.repeat_interleave(groups, dim=1).transpose(0, 1)                       # [heads, n, dim]
    v = v.repeat_interleave(groups, dim=1).transpose(0, 1)
    scores = q.transpose(0, 1) @ k.transpose(1, 2) * scale                       # [heads, q_len, n]
    visible = torch.arange(n, device=q.device)[None, :] <= (n - q_len + torch.arange(q_len, device=q.device))[:, None]
    scores = scores.masked_fill(~visible, float("-inf"))
    return (torch.softmax(scores, dim=-1) @ v).transpose(0, 1)


def flops(problem: Mapping[str, Any]) -> float:
    """Two GEMMs of ``2 * dim`` per visible (query, key) pair, every sequence full."""
    p = problem
    pairs = p["q_len"] * p["kv_len"] - p["q_len"] * (p["q_len"] - 1) // 2
    return 4.0 * p["batch"] * p["heads"] * p["dim"] * pairs


# Fitted on one H100 (benchmarks/results/2026-11-27-h100-graph-calls, batch 1 x 16k keys in 32 splits, LLaMA-3-8B
# heads): the combine kernel took 1.6 us of device time with a gap of about 0.3 us before it, of which its partials'
# traffic is 0.3 (the rest: its launch and its loads' round trip); the fused kernel 3.0 us more than the split
# kernel, of which the last block's reads of its partials are 0.9 (the rest: every block's fences and counter, the
# last block's combine). The decode slice's picks are those of the earlier 4 and 1 us, on the H100 and the H200.
# Launched as a dependent launch that the split kernel triggers (``pdl``), the combine adds 1.4 us to the call on
# the H100 (benchmarks/results/2026-11-27-h100-decode-pdl): these constants are the plain launch's, 0.4 us high there.
_COMBINE_FIXED_S = 1.6e-6
_FUSED_FIXED_S = 2.1e-6


def combine_seconds(problem: Mapping[str, Any], tile: Mapping[str, Any], vdev: Any) -> float:
    """Predicted time of the combine a split tile adds (none for one split). A combine kernel: partials written
    and read back through DRAM, plus a fixed cost per dependent launch. Fused: the last block of a sequence and
    KV head reads its rows' partials alone, at one SM's share of the L2 bandwidth (just written, L2 holds them),
    the last blocks of ``batch x kv_heads`` sequence heads in waves over the SMs, plus the counter's fixed cost."""
    if tile["num_splits"] == 1:
        return 0.0
    p = problem
    if tile.get("fused_combine"):  # a tile given to the search may leave it out: 0
        block_partials = tile["num_splits"] * query_rows(p) * (p["dim"] + 1) * 4.0
        waves = math.ceil(p["batch"] * p["kv_heads"] / vdev.num_eus)
        return _FUSED_FIXED_S + waves * block_partials * vdev.num_eus / vdev.l2_bandwidth
    rows = p["batch"] * p["q_len"] * p["heads"]
    partials = rows * tile["num_splits"] * (p["dim"] + 1) * 4.0
    return _COMBINE_FIXED_S + (2 * partials + rows * p["dim"] * 2) / vdev.dram_bandwidth


@dataclass(frozen=True)
class DecodeTemplate(Template):
    """A template of two kernels: the split kernel (the PrimFunc pt-tvm plans) and, for several splits, the
    combine kernel; :meth:`compile` returns one callable running both, or the split kernel alone where it
    combines itself (``fused_combine``)."""

    def tile_candidates(self, problem: Mapping[str, Any], features: frozenset = frozenset(),
                        pins: Mapping[str, Any] | None = None) -> list[dict]:
        """:meth:`Template.tile_candidates`, ``pdl`` the chip's to choose unless pinned: 1 where it launches
        dependents programmatically (``pdl`` among its ``features``) and the tile has a combine kernel, else 0."""
        tiles = Template.tile_candidates(self, problem, features, pins)
        if "pdl" in (pins or {}):
            return tiles
        return [t for t in tiles if t["pdl"] == ("pdl" in features and t["num_splits"] > 1 and not t["fused_combine"])]

    def compile(self, func: Any, target: Any) -> Any:
        params = {str(b.name): b for b in func.buffer_map.values()}
        if "LSE" not in params:
            return Template.compile(self, func, target)
        if "Semaphore" in params:  # O_partial, LSE, Semaphore, O: the workspace and O come back, O alone is returned
            kernel = Template.compile(replace(self, out_idx=(-4, -3, -1)), func, target)
            return FusedSplitKV(kernel, int(params["Semaphore"].shape[1]))
        split = Template.compile(replace(self, out_idx=(-2, -1)), func, target)
        # a dynamic batch is a symbolic size (no value): the combine kernel takes it as an argument too
        batch, q_len, heads, splits, dim = (int(x.value) if hasattr(x, "value") else None
                                            for x in params["O_partial"].shape)
        pdl = have_pdl(target if isinstance(target, tvm.target.Target) else tvm.target.Target(target))
        combine = tilelang.compile(build_combine(batch, q_len, heads, dim, str(params["Q"].dtype), splits, pdl),
                                   out_idx=[-1], target=target, pass_configs=dict(self.pass_configs))
        return SplitKV(split, combine)


@dataclass(frozen=True)
class SplitKV:
    """The split kernel, then the combine of its partial outputs."""

    split: Any
    combine: Any

    def __call__(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.combine(*self.split(*inputs))

    def get_kernel_source(self) -> str:
        return self.split.get_kernel_source() + "\n" + self.combine.get_kernel_source()

    @property
    def prim_func(self) -> Any:
        """The planned PrimFunc (the split kernel's): what a compiled kernel of the other templates reports."""
        return self.split.prim_func


@dataclass(frozen=True)
class FusedSplitKV:
    """The split kernel whose last block per sequence and KV head combines (``fused_combine``): it takes the
    arrival counters ``Semaphore`` (int32 ``[batch, kv_heads]``), zero between launches since each launch's last
    blocks zero theirs. They are made zero on the first call, on the inputs' device, and passed to every later
    call (a CUDA graph captured after a first call replays with them); a larger batch (a kernel of ``dynamic``
    sizes) makes new ones, a smaller one takes the first rows of the largest. Counters once made stay alive with
    the kernel, since a graph captured with them may still replay. The calls of one compiled kernel share them, so
    the same kernel must not run concurrently on two streams."""

    kernel: Any
    kv_heads: int
    semaphores: dict = field(default_factory=dict, compare=False, repr=False)  # device -> its counters, largest last

    def __call__(self, *inputs: torch.Tensor) -> torch.Tensor:
        device, batch = inputs[0].device, inputs[0].shape[0]
        made = self.semaphores.setdefault(device, [])
        if not made or len(made[-1]) < batch:
            made.append(torch.zeros((batch, self.kv_heads), dtype=torch.int32, device=device))
        return self.kernel(*inputs, made[-1][:batch])[-1]

    def get_kernel_source(self) -> str:
        return self.kernel.get_kernel_source()

    @property
    def prim_func(self) -> Any:
        """The planned PrimFunc, as :attr:`SplitKV.prim_func`."""
        return self.kernel.prim_func


DECODE_ATTENTION = DecodeTemplate(
    name="decode_attention",
    builder=_build,
    reference=reference,
    problem={"batch": 4, "q_len": 1, "heads": 32, "kv_heads": 8, "kv_len": 8192, "dim": 128, "dtype": "float16",
             "page_size": 0, "num_pages": 0, "ragged": False, "dynamic": False, "softmax_scale": 0.0},
    # dynamic: the batch and the cache's sizes are kernel arguments that the other sizes only price (the op)
    tile={"block_N": 64, "num_splits": 1, "threads": 128, "fused_combine": 0, "pdl": 0},
    # fused_combine=1 is searched only when pinned: its plans are software pipelines (TileLang's warp
    # specialization folds the elected thread's counter away), which on one H200 ran 4-7% slower at every split
    # count of batch 1 x 64k keys than warp-specialized plans with the combine kernel (75.2 against 70.7 us at 16
    # splits; benchmarks/results/2026-11-26-h200-decode-fused); the model priced the 32-split fused plan at 59.6 us
    # (measured 78.0) and picked it. With its combine rewritten (fe761db) the fused 32-split plan of batch 1 x 16k
    # paged keys ran 1.03x the time of the same plan with the combine kernel on one H100 (30.0 against 29.2 us,
    # benchmarks/results/2026-11-27-h100-decode-launch; 1.45x before, on one H200)
    tile_space={"block_N": (64, 128), "num_splits": (1, 2, 4, 8, 16, 32), "threads": (128, 256),
                "fused_combine": (0,), "pdl": (0, 1)},
    make_inputs=make_inputs,
    flops=flops,
    out_idx=(-1,),
    check=_check,
    doc="Decoding attention over a KV cache (contiguous or paged, ragged lengths, GQA packed), split over the keys.",
    pass_configs=FAST_MATH,
    extra_seconds=combine_seconds,
)
