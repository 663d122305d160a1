"""The decode suite's peers as a server calls them to decode (:mod:`benchmarks.decode`): PyTorch SDPA on the
contiguous cache, flash-attn-4 with per-sequence lengths and its page table, FlashInfer's paged-cache wrappers.
:mod:`benchmarks.systems` dispatches the decode suite's peer names here."""
from __future__ import annotations

from typing import Any, Callable, Mapping

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

__all__ = ["sdpa", "flash_attn_4", "flashinfer", "peer", "lower_right_mask"]


def _full_lengths(problem: Mapping[str, Any]) -> None:
    if problem.get("ragged"):
        raise ValueError("this peer reads the whole cache: it takes full sequences only (ragged=False)")


def lower_right_mask(q_len: int, kv_len: int, gqa: bool, device: Any = "cuda") -> Any:
    """SDPA's ``attn_mask`` for causal attention of ``q_len`` new queries over ``kv_len`` keys aligned bottom-right
    (the last query sees every key), as its users write it: the lower-right causal bias, or with GQA the boolean
    mask of keys up to each query's own position (the bias with ``enable_gqa`` fails inside torch 2.11's SDPA:
    "Boolean value of Tensor with more than one value is ambiguous", q_len 4 on an H100, 2026-11-23)."""
    from torch.nn.attention.bias import causal_lower_right  # loads torch._dynamo and sympy: ~1 s on --help

    if gqa:
        return torch.ones(q_len, kv_len, dtype=torch.bool, device=device).tril(kv_len - q_len)
    return causal_lower_right(q_len, kv_len)


def sdpa(backend_name: str) -> Callable:
    """``F.scaled_dot_product_attention`` on the contiguous cache, as a user calls it to decode: the new queries
    against the cached keys, GQA through ``enable_gqa``, the new tokens causal among themselves
    (:func:`lower_right_mask`)."""

    def make(template: Any, problem: Mapping[str, Any], vdev: Any, **_: Any) -> tuple[Callable, dict]:
        if problem["page_size"]:
            raise ValueError("SDPA takes no paged cache")
        _full_lengths(problem)
        backend = getattr(SDPBackend, backend_name)
        q_len, kv_len = problem["q_len"], problem["kv_len"]
        gqa = problem["heads"] != problem["kv_heads"]
        mask = lower_right_mask(q_len, kv_len, gqa) if q_len > 1 else None

        def run(q, k, v, seqlens):
            with sdpa_kernel(backend):
                o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                   attn_mask=mask, enable_gqa=gqa)
            return o.transpose(1, 2)

        kind = "none" if mask is None else "boolean, lower-right causal" if gqa else "causal_lower_right"
        return run, {"layout": "BHSD views of the BSHD cache", "mask": kind}

    return make


def flash_attn_4(template: Any, problem: Mapping[str, Any], vdev: Any, **_: Any) -> tuple[Callable, dict]:
    """flash-attn-4's CuTe forward with per-sequence lengths (``seqused_k``), its page table for a paged cache,
    and its own split heuristic (``num_splits=0``); on Hopper one split, as its users must pass there (its sm90
    kernel asserts "SplitKV not supported on SM 9.0" wherever the heuristic splits: an H100, 2026-11-23)."""
    from flash_attn.cute import flash_attn_varlen_func  # optional peer: installed on the GPU machine only

    causal = problem["q_len"] > 1
    hopper = torch.cuda.get_device_capability()[0] == 9
    splits = 1 if hopper else 0

    def run(q, k, v, seqlens, table=None):
        out = flash_attn_varlen_func(q, k, v, seqused_k=seqlens, page_table=table, causal=causal, num_splits=splits)
        return out[0] if isinstance(out, tuple) else out

    return run, {"package": "flash-attn-4 (CuTe)",
                 "num_splits": "1 (no split-KV on SM 9.0)" if hopper else "heuristic"}


def flashinfer(template: Any, problem: Mapping[str, Any], vdev: Any, **_: Any) -> tuple[Callable, dict]:
    """FlashInfer's paged-cache wrappers (decode for one query token, prefill with a causal mask for several),
    planned once per config as a server plans once per step; the timed call is ``run``."""
    import flashinfer  # optional peer: a JIT package packed for the GPU machine (fetch_flashinfer.sh)

    if not problem["page_size"]:
        raise ValueError("FlashInfer's wrappers take a paged cache")
    _full_lengths(problem)
    p = problem
    pages_per_seq = p["kv_len"] // p["page_size"]
    workspace = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    tensor_cores = p["heads"] // p["kv_heads"] > 4  # vLLM's choice for FlashInfer's decode (its kernel tests)
    state: dict = {}

    def run(q, k, v, seqlens, table):
        if "wrapper" not in state:  # plan on the first call: the page indices are the inputs' own
            indptr = torch.arange(0, (p["batch"] + 1) * pages_per_seq, pages_per_seq, dtype=torch.int32, device="cuda")
            last = torch.full((p["batch"],), p["page_size"], dtype=torch.int32, device="cuda")
            if p["q_len"] == 1:
                w = flashinfer.BatchDecodeWithPagedKVCacheWrapper(workspace, "NHD", use_tensor_cores=tensor_cores)
                w.plan(indptr, table.flatten(), last, p["heads"], p["kv_heads"], p["dim"], p["page_size"],
                       q_data_type=q.dtype, kv_data_type=k.dtype)
            else:
                w = flashinfer.BatchPrefillWithPagedKVCacheWrapper(workspace, "NHD")
                qo = torch.arange(0, (p["batch"] + 1) * p["q_len"], p["q_len"], dtype=torch.int32, device="cuda")
                w.plan(qo, indptr, table.flatten(), last, p["heads"], p["kv_heads"], p["dim"], p["page_size"],
                       causal=True, q_data_type=q.dtype, kv_data_type=k.dtype)
            state["wrapper"] = w
        w = state["wrapper"]
        if p["q_len"] == 1:
            return w.run(q[:, 0], (k, v)).unsqueeze(1)
        return w.run(q.flatten(0, 1), (k, v)).view(q.shape)

    return run, {"package": f"flashinfer {getattr(flashinfer, '__version__', '?')}",
                 "wrapper": "decode" if p["q_len"] == 1 else "prefill, causal",
                 **({"use_tensor_cores": tensor_cores} if p["q_len"] == 1 else {}),
                 "note": "planned on the first call with the inputs' page table; every timed set shares it"}


def peer(name: str) -> Callable | None:
    """The decode form of a shared peer name (the SDPA backends, flash-attn-4), for systems.py to dispatch to."""
    return {"cudnn-sdpa": sdpa("CUDNN_ATTENTION"), "fa2-sdpa": sdpa("FLASH_ATTENTION"), "fa3": flash_attn_4}.get(name)
