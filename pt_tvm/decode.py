"""Decoding attention as a PyTorch-facing function, with its plan found once per shape bucket.

``decode_attention(q, k_cache, v_cache, cache_seqlens, block_table=None)`` runs
the ``decode_attention`` template (split-KV FlashDecoding over a contiguous or
paged KV cache). A serving loop calls it at every step with a cache that grows
by ``q_len`` tokens and, with continuous batching, a batch that changes from
step to step, so the plan (key tile, split count, pipeline) is chosen for a
*bucket*: the next powers of two of the batch size and of the longest sequence.
The first step of a bucket searches (and, with ``tune``, measures); the kernel
takes the batch size and the cache's sizes as arguments (the template's
``dynamic`` sizes) and reads each sequence's length at run time, so one
compiled kernel serves every batch and cache whose bucket's plan is the same.
:class:`PlanBook` is the bucket cache, kept apart so that other ops can reuse it.
"""
from __future__ import annotations

import contextvars
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Mapping

import torch

from . import hw, templates
from .compiler import schedule_template
from .errors import PtTvmError
from .passes import apply_plan
from .templates.base import bucket
from .tune import tune_template

__all__ = ["decode_attention", "DecodeAttention", "PlanBook", "DecodeInputError", "decode_problem",
           "check_inputs", "check_shapes", "planned_for", "Planned"]

TEMPLATE = "decode_attention"


class DecodeInputError(PtTvmError, ValueError):
    """Tensors that ``decode_attention`` cannot take (shape, dtype, device, lengths or page numbers)."""



@dataclass
class PlanBook:
    """Compiled kernels per shape bucket: ``get(key)`` builds a key's kernel on its first use and returns it
    from then on. Owned by an op instance (no module-level cache)."""

    build: Callable[[Hashable], Any]
    kernels: dict = field(default_factory=dict)

    def get(self, key: Hashable) -> Any:
        if key not in self.kernels:
            self.kernels[key] = self.build(key)
        return self.kernels[key]

    def __len__(self) -> int:
        return len(self.kernels)


_SIZES = ("batch", "kv_len", "num_pages")  # what a kernel of dynamic sizes takes as arguments


def decode_problem(q: Any, k_cache: Any, block_table: Any, softmax_scale: float | None) -> dict:
    """The template problem of these tensors (``kv_len`` is the cache's capacity per sequence)."""
    batch, q_len, heads, dim = (int(x) for x in q.shape)
    paged = block_table is not None
    page_size = int(k_cache.shape[1]) if paged else 0
    problem = dict(batch=batch, q_len=q_len, heads=heads, kv_heads=int(k_cache.shape[2]),
                   kv_len=int(block_table.shape[1]) * page_size if paged else int(k_cache.shape[1]), dim=dim,
                   dtype=str(q.dtype).removeprefix("torch."), page_size=page_size,
                   num_pages=int(k_cache.shape[0]) if paged else 0, ragged=False, dynamic=False,
                   softmax_scale=0.0 if softmax_scale is None else float(softmax_scale))
    return problem


def check_inputs(q: Any, k_cache: Any, v_cache: Any, cache_seqlens: Any, block_table: Any = None) -> None:
    """Raise :class:`DecodeInputError` naming what is wrong with the tensors, values included (a device sync).

    Shapes and layouts the template itself rejects (page size, ``q_len``, head ratio) are reported by
    :meth:`Template.resolve` with the parameter's name.
    """
    capacity = check_shapes(q, k_cache, v_cache, cache_seqlens, block_table)
    _check_values(q, k_cache, cache_seqlens, block_table, capacity)


def check_shapes(q: Any, k_cache: Any, v_cache: Any, cache_seqlens: Any, block_table: Any = None) -> int:
    """The checks of :func:`check_inputs` that read no values (fake tensors pass them); the cache's capacity."""
    if q.dim() != 4:
        raise DecodeInputError(f"q must be [batch, q_len, heads, dim], got shape {tuple(q.shape)}")
    batch, q_len, _, dim = q.shape
    for name, t in (("k_cache", k_cache), ("v_cache", v_cache)):
        if t.dim() != 4 or t.shape[-1] != dim:
            raise DecodeInputError(f"{name} must be 4-d with head dim {dim}, got shape {tuple(t.shape)}")
        if t.dtype != q.dtype or t.device != q.device:
            raise DecodeInputError(f"{name} is {t.dtype} on {t.device}; q is {q.dtype} on {q.device}")
    if k_cache.shape != v_cache.shape:
        raise DecodeInputError(f"k_cache {tuple(k_cache.shape)} and v_cache {tuple(v_cache.shape)} differ")
    for name, t in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache)):
        if not t.is_contiguous():
            raise DecodeInputError(f"{name} must be contiguous (the kernel addresses it densely)")
    if tuple(cache_seqlens.shape) != (batch,) or cache_seqlens.dtype != torch.int32:
        raise DecodeInputError(f"cache_seqlens must be int32 [{batch}], got {cache_seqlens.dtype} "
                               f"{tuple(cache_seqlens.shape)}")
    if block_table is None:
        if k_cache.shape[0] != batch:
            raise DecodeInputError(f"a contiguous k_cache must be [batch={batch}, kv_len, kv_heads, dim], "
                                   f"got {tuple(k_cache.shape)}")
        capacity = int(k_cache.shape[1])
    else:
        if block_table.dim() != 2 or block_table.shape[0] != batch or block_table.dtype != torch.int32:
            raise DecodeInputError(f"block_table must be int32 [batch={batch}, max_pages], got "
                                   f"{block_table.dtype} {tuple(block_table.shape)}")
        capacity = int(block_table.shape[1]) * int(k_cache.shape[1])
    return capacity


def _check_values(q: Any, k_cache: Any, cache_seqlens: Any, block_table: Any, capacity: int) -> None:
    """Lengths within the cache and page numbers within the pool (reads them from the device)."""
    q_len = q.shape[1]
    lengths = cache_seqlens.long()
    if bool((lengths > capacity).any()):
        raise DecodeInputError(f"cache_seqlens {int(lengths.max())} exceeds the cache's capacity of {capacity} "
                               "tokens per sequence")
    if bool((lengths < q_len).any()):
        raise DecodeInputError(f"cache_seqlens {int(lengths.min())} is shorter than q_len={q_len}: the new "
                               "tokens' keys must already be in the cache")
    if block_table is not None:
        page_size, pages = int(k_cache.shape[1]), int(k_cache.shape[0])
        used = torch.arange(block_table.shape[1], device=block_table.device)[None, :] \
            < ((lengths + page_size - 1) // page_size)[:, None]
        bad = used & ((block_table < 0) | (block_table >= pages))
        if bool(bad.any()):
            b, p = (int(x) for x in bad.nonzero()[0])
            raise DecodeInputError(f"block_table[{b}, {p}] = {int(block_table[b, p])} is out of range: the pool "
                                   f"holds {pages} pages")


@dataclass
class DecodeAttention:
    """The decoding-attention op with its own plan book: one search per bucket of batch size and length, one
    compile per plan (buckets whose search finds the same plan share its kernel).

    ``tune``: plans measured on the GPU per bucket (0: the cost model's choice alone). A kernel whose plan fuses
    the combine keeps its arrival counters across calls (the template's ``FusedSplitKV``): the op must not run it
    on two streams at once.
    """

    target: Any = None
    tune: int = 0
    book: PlanBook = field(init=False)
    kernels: dict = field(default_factory=dict)  # (shape, plan JSON) -> compiled kernel

    def __post_init__(self) -> None:
        self.book = PlanBook(self._plan)

    def __call__(self, q: Any, k_cache: Any, v_cache: Any, cache_seqlens: Any, block_table: Any = None,
                 softmax_scale: float | None = None, *, max_seqlen: int | None = None, validate: bool = True) -> Any:
        """``[batch, q_len, heads, dim]``: query ``i`` of sequence ``b`` attends to its cache's keys
        ``0 .. cache_seqlens[b] - q_len + i``. ``max_seqlen`` (the longest ``cache_seqlens``) picks the bucket;
        without it the op reads it from the device. ``validate=False`` skips the value checks (a sync)."""
        if validate:
            check_inputs(q, k_cache, v_cache, cache_seqlens, block_table)
        problem = decode_problem(q, k_cache, block_table, softmax_scale)
        templates.get(TEMPLATE).resolve_problem(**problem)  # shapes the template cannot take fail here, by name
        longest = int(cache_seqlens.max()) if max_seqlen is None else int(max_seqlen)
        shape = tuple(sorted((k, v) for k, v in problem.items() if k not in (*_SIZES, "dynamic")))
        key = (shape, bucket(problem["batch"]), bucket(longest, most=problem["kv_len"]), q.device.index)
        inputs = (q, k_cache, v_cache, cache_seqlens) + ((block_table,) if block_table is not None else ())
        return self._kernel(self.book.get(key))(*inputs)

    def _plan(self, key: Hashable) -> Planned:
        """The bucket's plan, searched at its batch size and length."""
        shape, batch, length, device = key
        vdev = hw.for_target(self.target) if self.target is not None else hw.from_device(device or 0)
        page = dict(shape)["page_size"]
        searched = dict(shape, batch=batch, kv_len=page * math.ceil(length / page) if page else length,
                        num_pages=0, dynamic=True)
        if self.tune:
            candidate = tune_template(TEMPLATE, vdev, params=searched, top_k=self.tune).best.candidate
        else:
            candidate = schedule_template(TEMPLATE, vdev, params=searched)[0].best
        return Planned(shape, searched, candidate, vdev)

    def _kernel(self, planned: Planned) -> Any:
        """The plan's kernel, compiled on its first bucket (dynamic sizes priced at that bucket's) and shared by
        every bucket whose search finds the same plan."""
        key = (planned.shape, planned.candidate.plan.to_json())
        if key not in self.kernels:
            self.kernels[key] = templates.get(TEMPLATE).compile(
                planned_for(planned.problem, planned.candidate, planned.vdev), planned.vdev.tvm_target())
        return self.kernels[key]

    def plans(self) -> Mapping[Hashable, Any]:
        """The compiled kernels by (shape, plan JSON), for inspection."""
        return dict(self.kernels)


@dataclass(frozen=True)
class Planned:
    """A bucket's search: the shape class (everything but the sizes), the problem searched (the bucket's sizes,
    ``dynamic``), the chosen candidate and the chip."""

    shape: tuple
    problem: Mapping[str, Any]
    candidate: Any
    vdev: Any


def planned_for(problem: Mapping[str, Any], candidate: Any, target: Any) -> Any:
    """The split kernel for ``problem`` at the tile of a candidate searched at a bucket's sizes, with its plan for
    ``target``: a bucket's plan fits every size (with ``dynamic`` ones, every batch and cache: one kernel), only
    its loop's trip count differs."""
    return apply_plan(templates.get(TEMPLATE).build(**problem, **candidate.plan.tile), candidate.plan, target)


_OP: contextvars.ContextVar[DecodeAttention] = contextvars.ContextVar("pt_tvm_decode_attention")


def decode_attention(q: Any, k_cache: Any, v_cache: Any, cache_seqlens: Any, block_table: Any = None,
                     softmax_scale: float | None = None, **options: Any) -> Any:
    """:class:`DecodeAttention` of the current context (one per context, made on first use); see its ``__call__``."""
    op = _OP.get(None)
    if op is None:
        op = DecodeAttention()
        _OP.set(op)
    return op(q, k_cache, v_cache, cache_seqlens, block_table, softmax_scale, **options)
