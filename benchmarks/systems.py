"""The systems compared: pt-tvm's searched kernels, TileLang's automatic schedule, and the peers.

Each system is a factory ``make(template, problem, vdev, **options) -> callable(*inputs) -> output``
that builds (and compiles) once; building errors surface as a row marked invalid
with the reason, not as a crash of the suite. ``options`` carries run-wide
settings (``tune_top_k`` for pt-tvm); a factory ignores those it does not use.
"""
from __future__ import annotations

import math
import time
from typing import Any, Callable, Mapping

__all__ = ["SYSTEMS", "PEERS_BY_SUITE", "build_system"]


def _pt_tvm(template: Any, problem: Mapping[str, Any], vdev: Any, *, tune_top_k: int | None = None,
            tune_workers: int | None = None, tune_rep_ms: float | None = None, shared: dict | None = None,
            searched: Any = None, **_: Any) -> tuple[Callable, dict]:
    """Cost-model search, then the best ``tune_top_k`` plans (default 8) measured on this GPU (pt_tvm.tune).

    ``tune_top_k=1`` measures only the model's first choice (no refinement); ``tune_workers=1``
    compiles the candidates in this process (the suite's precompile step has cached them, and hands
    over its search as ``searched``); ``tune_rep_ms`` is the timing per candidate (the run's own
    ``--rep-ms``). The search result goes into ``shared`` (one dict per config)
    for ``pt-tvm-model``.
    """
    from pt_tvm.tune import tune_template

    t0 = time.perf_counter()
    kw = {"top_k": int(tune_top_k)} if tune_top_k else {}
    if tune_workers:
        kw["workers"] = int(tune_workers)
    if searched is not None:
        kw["searched"] = searched
    if tune_rep_ms:
        kw["rep_ms"] = float(tune_rep_ms)
    tr = tune_template(template.name, vdev, params=problem, **kw)
    if shared is not None:
        shared["search"] = tr.search
    best = tr.best.candidate
    return tr.kernel, {"plan": best.note, "tile": dict(best.plan.tile), "search_s": round(tr.search.seconds, 3),
                       "tune_s": round(time.perf_counter() - t0, 1), "predicted_ms": best.seconds * 1e3,
                       "candidates": [{"note": m.candidate.note, "tile": dict(m.candidate.plan.tile),
                                       "predicted_ms": m.candidate.seconds * 1e3, "ms": m.ms, "rel_err": m.rel_err,
                                       "error": m.error,
                                       "plan": m.candidate.plan.to_dict()}
                                      for m in tr.measured]}


def _pt_tvm_model(template: Any, problem: Mapping[str, Any], vdev: Any, *, shared: dict | None = None,
                  **_: Any) -> tuple[Callable, dict]:
    """The cost model's first choice alone, no GPU measurement in the loop (the search ``pt-tvm`` left in
    ``shared`` when it ran on this config first: the search is deterministic)."""
    from pt_tvm.compiler import planned_func, schedule_template

    if shared and "search" in shared:
        result = shared["search"]
        func = planned_func(template.name, problem, result.best)
    else:
        result, _, build = schedule_template(template.name, vdev, params=problem)
        func = build()
    return template.compile(func, vdev.tvm_target()), {"plan": result.best.note, "tile": dict(result.best.plan.tile),
                                                      "search_s": round(result.seconds, 3),
                                                      "predicted_ms": result.best.seconds * 1e3,
                                                      "plan_json": result.best.plan.to_dict()}


def _tilelang_auto(template: Any, problem: Mapping[str, Any], vdev: Any, **_: Any) -> tuple[Callable, dict]:
    """The same template with TileLang's own schedule: ``T.Pipelined(num_stages=2)``, default tile."""
    return template.compile(template.build(num_stages=2, **problem), vdev.tvm_target()), {"tile": dict(template.tile)}


def _sdpa(backend_name: str) -> Callable:
    def make(template: Any, problem: Mapping[str, Any], vdev: Any, **_: Any) -> tuple[Callable, dict]:
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel

        backend = getattr(SDPBackend, backend_name)
        gqa = problem["heads"] != problem["kv_heads"]

        def run(q, k, v):
            with sdpa_kernel(backend):
                o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                   is_causal=problem["causal"], enable_gqa=gqa)
            return o.transpose(1, 2)

        return run, {"layout": "BHSD views of BSHD tensors"}

    return make


def _fa3(template: Any, problem: Mapping[str, Any], vdev: Any, **_: Any) -> tuple[Callable, dict]:
    from flash_attn.cute import flash_attn_func

    def run(q, k, v):
        out = flash_attn_func(q, k, v, causal=problem["causal"])
        return out[0] if isinstance(out, tuple) else out

    return run, {"package": "flash-attn-4 (CuTe sm90 forward)"}


def _eager(template: Any, problem: Mapping[str, Any]) -> Callable:
    """The kernel as plain PyTorch in the input dtype: what a user would write and hand to ``torch.compile``.

    (The template's ``reference`` computes in float32 to check results; compiling
    it would time an fp32 kernel, not a peer.)
    """
    import math

    import torch

    if template.name == "gemm":
        return lambda a, b: a @ b
    if template.name == "gemm_rowsum":
        def gemm_rowsum(a, b, s):
            c = a @ b
            return c, c.float().sum(dim=1)
        return gemm_rowsum
    if template.name == "flash_attention":
        scale = 1.0 / math.sqrt(problem["dim"])
        groups = problem["heads"] // problem["kv_heads"]
        causal = problem["causal"]

        def attention(q, k, v):  # BSHD in, BSHD out
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            if groups > 1:
                k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
            s = (q @ k.transpose(-2, -1)) * scale
            if causal:
                n = s.shape[-1]
                s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
            return (s.softmax(dim=-1) @ v).transpose(1, 2)
        return attention
    if template.name in ("chunk_state", "chunk_scan"):  # the issue asks for torch.compile of the SSD reference
        return lambda *inputs: template.reference(*inputs, **problem)
    raise NotImplementedError(f"no eager PyTorch form for template {template.name!r}")


def _torch_compile(template: Any, problem: Mapping[str, Any], vdev: Any, **_: Any) -> tuple[Callable, dict]:
    import torch

    return torch.compile(_eager(template, problem), dynamic=False), {"mode": "default",
                                                                     "source": "eager PyTorch in the input dtype"}


def _mamba_triton(template: Any, problem: Mapping[str, Any], vdev: Any, **_: Any) -> tuple[Callable, dict]:
    """mamba-ssm 2.3.2's official Triton kernels (laid out by benchmarks/fetch_mamba_ssm.sh, on PYTHONPATH)."""
    if template.name == "chunk_state":
        from mamba_ssm.ops.triton.ssd_chunk_state import _chunk_state_fwd

        return (lambda B, x, dt, dA: _chunk_state_fwd(B, x, dt, dA, states_in_fp32=True)), {"package": "mamba-ssm 2.3.2"}
    if template.name == "chunk_scan":
        from mamba_ssm.ops.triton.ssd_chunk_scan import _chunk_scan_fwd

        def run(cb, x, dt, dA, C, states, *D):
            return _chunk_scan_fwd(cb, x, dt, dA, C, states, D=D[0] if D else None)[0]

        return run, {"package": "mamba-ssm 2.3.2"}
    raise ValueError(f"mamba-ssm has no kernel for {template.name!r}")


def _cublas(template: Any, problem: Mapping[str, Any], vdev: Any, **_: Any) -> tuple[Callable, dict]:
    import torch

    if template.name == "gemm_rowsum":
        def run(a, b, s):
            c = a @ b
            return c, c.float().sum(dim=1)
        return run, {"impl": "torch.matmul + torch.sum"}
    return (lambda a, b: torch.matmul(a, b)), {}


SYSTEMS: dict[str, Callable] = {
    "pt-tvm": _pt_tvm,
    "pt-tvm-model": _pt_tvm_model,
    "tilelang-auto": _tilelang_auto,
    "cudnn-sdpa": _sdpa("CUDNN_ATTENTION"),
    "fa2-sdpa": _sdpa("FLASH_ATTENTION"),
    "fa3": _fa3,
    "torch-compile": _torch_compile,
    "cublas": _cublas,
    "mamba-triton": _mamba_triton,
}

PEERS_BY_SUITE = {
    "attention": ("pt-tvm", "pt-tvm-model", "tilelang-auto", "cudnn-sdpa", "fa2-sdpa", "fa3", "torch-compile"),
    "gemm": ("pt-tvm", "pt-tvm-model", "tilelang-auto", "cublas", "torch-compile"),
    "mamba": ("pt-tvm", "pt-tvm-model", "tilelang-auto", "mamba-triton", "torch-compile"),
}


def build_system(name: str, template: Any, problem: Mapping[str, Any], vdev: Any,
                 **options: Any) -> tuple[Callable | None, dict]:
    """(callable or None, info); info["error"] says why a system could not be built."""
    try:
        fn, info = SYSTEMS[name](template, problem, vdev, **options)
        return fn, info
    except Exception as e:  # a peer that cannot build is a reported row, not a crash
        text = str(e).strip()
        return None, {"error": f"{type(e).__name__}: {text.splitlines()[-1][:300] if text else ''}"}


def flops_per_second(flops: float, ms: float) -> float:
    return flops / (ms * 1e-3) if ms and math.isfinite(ms) else 0.0
