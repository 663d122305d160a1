"""``pt_tvm::attention``: attention forward over ``[batch, seqlen, heads, head_dim]`` tensors, as
``flash_attn_func`` takes them (and packed ``[total, heads, head_dim]`` ones with ``cu_seqlens``, as
``flash_attn_varlen_func``), on the ``flash_attention`` and ``flash_attention_varlen`` templates; and
``pt_tvm::attention_qkv``, self-attention over a fused QKV projection's output as it lies
(``flash_attention_qkv``)."""
import functools
import math
from typing import Optional

import torch
from torch import Tensor

from ..templates.base import bucket
from . import checks
from .checks import ArgumentError, ArgumentTypeError
from .kernels import current, launch

__all__ = ["attention", "attention_qkv"]

OP = "pt_tvm.ops.attention"
TEMPLATE = "flash_attention"
VARLEN = "flash_attention_varlen"
QKV_OP, QKV_TEMPLATE = "pt_tvm.ops.attention_qkv", "flash_attention_qkv"
_BSHD_Q = ("batch", "seqlen_q", "heads", "head_dim")
_BSHD_KV = ("batch", "seqlen_k", "kv_heads", "head_dim")
_THD_Q = ("total_q", "heads", "head_dim")
_THD_KV = ("total_k", "kv_heads", "head_dim")


def _check(q: Tensor, k: Tensor, v: Tensor, softmax_scale: Optional[float], cu_seqlens_q: Optional[Tensor],
           cu_seqlens_k: Optional[Tensor], max_seqlen_q: Optional[int], max_seqlen_k: Optional[int]) -> dict:
    """Types, dtypes, layouts, devices and sizes of the arguments; each error names the argument. Returns
    ``q``, ``k``, ``v`` as the kernel reads them (:func:`checks.tma_view`, by name)."""
    varlen = cu_seqlens_q is not None or cu_seqlens_k is not None
    q_dims, kv_dims = (_THD_Q, _THD_KV) if varlen else (_BSHD_Q, _BSHD_KV)
    dims = checks.Dims(OP)
    views = {}
    for name, t, layout in (("q", q, q_dims), ("k", k, kv_dims), ("v", v, kv_dims)):
        checks.tensor(OP, name, t, layout, checks.HALF, contiguous=False)
        views[name] = checks.tma_view(OP, name, t)
        dims.bind(name, t, layout)
    for name, t in (("k", k), ("v", v)):
        if t.dtype != q.dtype:
            raise ArgumentTypeError(f"{OP}: argument {name!r} is {t.dtype} but 'q' is {q.dtype}")
    if dims["heads"] % dims["kv_heads"]:
        raise ArgumentError(f"{OP}: argument 'k' has kv_heads={dims['kv_heads']}, which must divide the "
                            f"heads={dims['heads']} of 'q' (grouped-query attention)")
    _check_scale(OP, softmax_scale)
    checks.kernel_device(OP, "q", q)
    checks.same_device(OP, {"q": q, "k": k, "v": v, "cu_seqlens_q": cu_seqlens_q, "cu_seqlens_k": cu_seqlens_k})
    if varlen:
        _check_varlen(cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k)
    else:
        for name, value in (("max_seqlen_q", max_seqlen_q), ("max_seqlen_k", max_seqlen_k)):
            if value is not None:
                raise ArgumentError(f"{OP}: argument {name!r} is for variable-length batches (with cu_seqlens_q "
                                    f"and cu_seqlens_k); leave it None for [batch, seqlen, heads, head_dim] inputs")
    return views


def _check_scale(op: str, softmax_scale: Optional[float]) -> None:
    """``softmax_scale`` is None (``1/sqrt(head_dim)``) or a positive finite number."""
    if softmax_scale is not None and not (math.isfinite(softmax_scale) and softmax_scale > 0):
        raise ArgumentError(f"{op}: argument 'softmax_scale' must be a positive finite number, got {softmax_scale!r}")


def _check_varlen(cu_seqlens_q: Optional[Tensor], cu_seqlens_k: Optional[Tensor], max_seqlen_q: Optional[int],
                  max_seqlen_k: Optional[int]) -> None:
    """Both ``cu_seqlens`` as int32 ``[batch + 1]`` tensors, both maximum lengths as positive ints."""
    for name, t in (("cu_seqlens_q", cu_seqlens_q), ("cu_seqlens_k", cu_seqlens_k)):
        if t is None:
            raise ArgumentError(f"{OP}: variable-length attention takes both cu_seqlens_q and cu_seqlens_k; "
                             f"argument {name!r} is None")
        checks.tensor(OP, name, t, ("batch_plus_1",), (torch.int32,))
    if cu_seqlens_q.shape != cu_seqlens_k.shape or cu_seqlens_q.shape[0] < 2:
        raise ArgumentError(f"{OP}: arguments 'cu_seqlens_q' and 'cu_seqlens_k' must both have batch + 1 >= 2 "
                            f"entries, got {tuple(cu_seqlens_q.shape)} and {tuple(cu_seqlens_k.shape)}")
    for name, value in (("max_seqlen_q", max_seqlen_q), ("max_seqlen_k", max_seqlen_k)):
        if value is None or value < 1:
            raise ArgumentError(f"{OP}: argument {name!r} must be the longest sequence's length (a positive "
                                f"int) with cu_seqlens, got {value!r}")


def _scale(softmax_scale: Optional[float], dim: int) -> float:
    """The templates' ``softmax_scale``: 0 for the default ``1/sqrt(head_dim)`` (so a default scale shares its
    kernels and cached plans with calls that give none)."""
    if softmax_scale is None or math.isclose(softmax_scale, dim ** -0.5, rel_tol=1e-6):
        return 0.0
    return float(softmax_scale)


def _problem(q: Tensor, k: Tensor, causal: bool, softmax_scale: Optional[float], cu_seqlens_q: Optional[Tensor],
             max_seqlen_q: Optional[int], max_seqlen_k: Optional[int]) -> tuple[str, dict]:
    """(template, problem) of checked arguments: ``flash_attention`` for ``[batch, seqlen, heads, head_dim]``
    tensors (equal lengths as ``seq_len``, a KV cache's keys as ``seq_len_k``), ``flash_attention_varlen`` with
    the maximum lengths bucketed for packed ones."""
    heads, dim = q.shape[-2], q.shape[-1]
    common = {"heads": heads, "kv_heads": k.shape[-2], "dim": dim, "causal": causal,
              "softmax_scale": _scale(softmax_scale, dim), "dtype": str(q.dtype).removeprefix("torch.")}
    if cu_seqlens_q is not None:
        # the varlen grid covers the bucket, and a block past its sequence's queries leaves at once: batches whose
        # longest sequences differ share a few kernels
        return VARLEN, {"batch": cu_seqlens_q.shape[0] - 1, "max_seqlen_q": bucket(max_seqlen_q),
                        "max_seqlen_k": bucket(max_seqlen_k), **common}
    seqlen_q, seqlen_k = q.shape[1], k.shape[1]
    return TEMPLATE, {"batch": q.shape[0], "seq_len": seqlen_q, "seq_len_q": 0,
                      "seq_len_k": 0 if seqlen_k == seqlen_q else seqlen_k, **common}


@torch.library.custom_op("pt_tvm::attention", mutates_args=())
def attention(q: Tensor, k: Tensor, v: Tensor, causal: bool = False, softmax_scale: Optional[float] = None,
              cu_seqlens_q: Optional[Tensor] = None, cu_seqlens_k: Optional[Tensor] = None,
              max_seqlen_q: Optional[int] = None, max_seqlen_k: Optional[int] = None) -> Tensor:
    """``softmax(q k^T * softmax_scale) v`` per head; query head ``h`` reads key/value head ``h // (heads //
    kv_heads)`` (GQA/MQA); ``softmax_scale`` defaults to ``1/sqrt(head_dim)``; ``causal`` masks keys after the
    query (aligned bottom-right when the lengths differ, as FlashAttention 2.1+).

    ``q [batch, seqlen_q, heads, head_dim]``, ``k``/``v [batch, seqlen_k, kv_heads, head_dim]``, float16 or
    bfloat16, on one CUDA device, contiguous or views read as they lie (the heads of a fused QKV projection, a
    ``[batch, heads, seqlen, head_dim]`` tensor transposed: a unit-strided last dim, the other strides multiples
    of 16 bytes; a kernel per layout); or packed ``[total, heads, head_dim]`` (contiguous or views) with int32
    ``cu_seqlens_q``/``cu_seqlens_k [batch + 1]`` and ``max_seqlen_q``/``max_seqlen_k`` at least the longest
    sequence's lengths (as ``flash_attn_varlen_func``: not checked against ``cu_seqlens``, which would read them
    back from the GPU). Any lengths, 0 included (no kernel runs); a query that sees no key (causal, more queries
    than keys, no keys) gives zeros.
    Returns ``q``'s shape, contiguous. With ``Config.dynamic_tokens``, ``[batch, seqlen, ...]`` inputs whose batch
    and sequence dims view as one run as a packed batch of equal lengths on the varlen kernel of their lengths'
    buckets.
    """
    views = _check(q, k, v, softmax_scale, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k)
    if not q.numel() or not k.shape[-3]:  # no query, or no key to see (zeros, as a query that sees none)
        return q.new_zeros(q.shape)
    if cu_seqlens_q is None and current().config.dynamic_tokens and all(map(_tokens_merge, (q, k, v))):
        return _packed(q, k, v, causal, softmax_scale).view(q.shape)
    template, problem = _problem(q, k, causal, softmax_scale, cu_seqlens_q, max_seqlen_q, max_seqlen_k)
    varlen = () if cu_seqlens_q is None else (cu_seqlens_q, cu_seqlens_k)
    return _launch(template, problem, views, varlen)


def _launch(template: str, problem: dict, views: dict, varlen: tuple) -> Tensor:
    """The kernel of ``problem`` on ``q``, ``k``, ``v`` as they lie (``views``: :func:`checks.tma_view` of each, by
    name; a view's strides join the problem: a kernel per layout), then the ``cu_seqlens`` of a packed batch."""
    problem.update({f"{name}_strides": strides for name, (_, strides) in views.items() if strides})
    return launch(template, problem, *(view for view, _ in views.values()), *varlen)


def _tokens_merge(t: Tensor) -> bool:
    """Whether ``t [batch, seqlen, ...]``'s batch and sequence dims view as one token dim (contiguous tensors, heads
    of a fused projection; not a ``[batch, heads, seqlen, dim]`` tensor transposed)."""
    return t.shape[0] == 1 or t.shape[1] == 1 or t.stride(0) == t.stride(1) * t.shape[1]


def _packed(q: Tensor, k: Tensor, v: Tensor, causal: bool, softmax_scale: Optional[float]) -> Tensor:
    """Dense attention as a packed batch of equal lengths (views, no copy), on the varlen kernel of the lengths'
    buckets (``Config.dynamic_tokens``): one kernel serves every length up to the bucket's."""
    (batch, seqlen_q), seqlen_k = q.shape[:2], k.shape[1]
    cu_q, cu_k = _offsets(batch, seqlen_q, q.device), _offsets(batch, seqlen_k, q.device)
    template, problem = _problem(q, k, causal, softmax_scale, cu_q, seqlen_q, seqlen_k)
    views = {name: checks.tma_view(OP, name, t.view(-1, *t.shape[2:])) for name, t in zip("qkv", (q, k, v))}
    return _launch(template, problem, views, (cu_q, cu_k))


@functools.lru_cache(maxsize=64)
def _offsets(batch: int, seqlen: int, device: torch.device) -> Tensor:
    """``cu_seqlens`` of ``batch`` sequences of ``seqlen`` on ``device``, made once per shape (a step of a model
    calls it with the same lengths layer after layer)."""
    return torch.arange(0, (batch + 1) * seqlen, seqlen, dtype=torch.int32, device=device)


@attention.register_fake
def _(q, k, v, causal=False, softmax_scale=None, cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=None,
      max_seqlen_k=None):
    _check(q, k, v, softmax_scale, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k)
    return q.new_empty(q.shape)  # contiguous, as the kernel's output (empty_like would keep a view's strides)


def _check_qkv(qkv: Tensor, kv_heads: int, softmax_scale: Optional[float]) -> int:
    """``qkv [batch, seqlen, heads + 2 kv_heads, head_dim]`` with ``kv_heads`` dividing ``heads``; returns ``heads``."""
    checks.tensor(QKV_OP, "qkv", qkv, ("batch", "seqlen", "heads_plus_2_kv_heads", "head_dim"), checks.HALF)
    heads = qkv.shape[2] - 2 * kv_heads
    if kv_heads < 1 or heads < 1 or heads % kv_heads:
        raise ArgumentError(f"{QKV_OP}: argument 'kv_heads'={kv_heads} must be positive and leave 'qkv' "
                            f"({qkv.shape[2]} heads) query heads that it divides (heads + 2 kv_heads)")
    _check_scale(QKV_OP, softmax_scale)
    checks.kernel_device(QKV_OP, "qkv", qkv)
    return heads


@torch.library.custom_op("pt_tvm::attention_qkv", mutates_args=())
def attention_qkv(qkv: Tensor, kv_heads: int, causal: bool = False, softmax_scale: Optional[float] = None) -> Tensor:
    """Self-attention over one ``qkv [batch, seqlen, heads + 2 kv_heads, head_dim]`` tensor: its first ``heads``
    heads are the queries, the next ``kv_heads`` the keys, the last ``kv_heads`` the values (a fused QKV
    projection's output viewed by heads, e.g. :func:`pt_tvm.ops.qkv_rope`'s), read as it lies, no split copied.
    As :func:`attention` otherwise (GQA, ``causal``, ``softmax_scale``; with ``Config.dynamic_tokens`` on the varlen
    kernel of the length's bucket); float16 or bfloat16, contiguous, one CUDA device. Returns ``[batch, seqlen,
    heads, head_dim]``."""
    heads = _check_qkv(qkv, kv_heads, softmax_scale)
    b, s, _, dim = qkv.shape
    if not (b and s):
        return qkv.new_zeros((b, s, heads, dim))
    if current().config.dynamic_tokens:  # the heads as views at the projection's strides, on the bucket's kernel
        q, k, v = qkv.split([heads, kv_heads, kv_heads], dim=2)
        return _packed(q, k, v, causal, softmax_scale).view(b, s, heads, dim)
    problem = {"batch": b, "heads": heads, "kv_heads": kv_heads, "seq_len": s, "dim": dim, "causal": causal,
               "softmax_scale": _scale(softmax_scale, dim), "dtype": str(qkv.dtype).removeprefix("torch.")}
    return launch(QKV_TEMPLATE, problem, qkv)


@attention_qkv.register_fake
def _(qkv, kv_heads, causal=False, softmax_scale=None):
    heads = _check_qkv(qkv, kv_heads, softmax_scale)
    return qkv.new_empty((*qkv.shape[:2], heads, qkv.shape[3]))
