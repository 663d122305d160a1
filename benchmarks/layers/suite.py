"""The ``layers`` suite's grid, systems and run: whole layers built, checked against float32 and timed.

Per config (a layer at a batch x sequence length) the layer gets fresh random weights and inputs; the same
module in float32 (the fp16 weights and inputs upcast, TF32 off) is the reference, on inputs the timing never
sees. Each system is the same module with its op set (:mod:`benchmarks.layers.opsets`), eager or under
``torch.compile``; its output is checked in NaN-prefilled memory (:func:`pt_tvm.measure.check_call`) and all
systems of the config are timed together with :func:`benchmarks.timing.time_two_ways` (CUDA-graph replay and
queued calls, interleaved rounds, the median). A shape pt-tvm refuses (a ``PtTvmError``: today, one that is not
a multiple of a template's tile) and a peer that is not installed are rows with ``valid: null`` and
``skipped`` saying why; any other failure is an invalid row with its ``error``.
"""
from __future__ import annotations

import contextlib
import gc
import os
import sys
import time
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import torch

from pt_tvm.errors import PtTvmError
from pt_tvm.measure import check_call, input_sets
from pt_tvm.ops import kernels as pt_kernels

from ..suite import SETTLE_MS, Config, error_text, time_rows, verdict
from .models import EAGER, LAYERS, LlamaShape, Mamba2Shape, twin
from .opsets import PT_TVM, mamba_ssm
from .warm import Warmer, kernel_calls

__all__ = ["SUITES", "SYSTEMS", "LAYER_TOL", "PAPER_OVER_INDUCTOR", "configs", "full_configs", "layer_flops",
           "run_configs", "dry_run_configs"]

# fp16 eager PyTorch against its float32 reference on a CPU, at the suite's widths: 1.1e-3 (LLaMA update, 256
# tokens), 5.7e-4 (Mamba2, 600 tokens); a Mamba2 block that drops the state between chunks is off by 4.9e-2;
# bf16 (not in the grids): 8.4e-3 on a small LLaMA layer
LAYER_TOL = {"float16": 5e-3, "bfloat16": 2e-2}
PAPER_OVER_INDUCTOR = {"llama3-8b": 1.79, "mamba2-1.3b": 1.92}  # PipeThreader (OSDI'25): one layer vs Inductor

_COMPILED = ("torch-compile", "torch-compile-max-autotune")
_SYSTEMS_BY_LAYER = {"llama3-8b": ("eager", *_COMPILED, "pt-tvm", "pt-tvm+compile"),
                     "mamba2-1.3b": ("eager", *_COMPILED, "mamba-ssm", "pt-tvm", "pt-tvm+compile")}
_GRID = ((1, 512), (1, 2048), (4, 2048), (1, 4096), (16, 4096))
_RAGGED = ((1, 777), (1, 2500))  # not multiples of pt-tvm's tiles nor of Mamba2's chunk (256)
_MAX_AUTOTUNE = ((4, 2048), (16, 4096))  # the default grid's max-autotune points: a compile takes minutes
_FULL_GRID = tuple((b, s) for b in (1, 4, 16) for s in (512, 1024, 2048, 4096))
_FULL_RAGGED = tuple((b, s) for b in (1, 4) for s in (777, 2500))


def _configs(suite: str, grid: Sequence[tuple[int, int]], ragged: Sequence[tuple[int, int]],
             max_autotune: Callable[[int, int], bool]) -> list[Config]:
    points = sorted([(p, "") for p in grid] + [(p, "ragged") for p in ragged], key=lambda pn: (pn[0][0] * pn[0][1], pn))
    out = []
    for layer, systems in _SYSTEMS_BY_LAYER.items():
        for (b, s), note in points:  # fewest tokens first: a run cut off by a time limit keeps the most configs
            keep = tuple(x for x in systems if x != "torch-compile-max-autotune" or max_autotune(b, s))
            out.append(Config(suite, layer, {"batch": b, "seqlen": s, "dtype": "float16"}, keep, note))
    return out


def configs() -> list[Config]:
    """The default grid: 1x512 .. 16x4096 and the ragged lengths 777 and 2500 for both layers; max-autotune
    at 4x2048 and 16x4096 only."""
    return _configs("layers", _GRID, _RAGGED, lambda b, s: (b, s) in _MAX_AUTOTUNE)


def full_configs() -> list[Config]:
    """Batch 1/4/16 x seqlen 512..4096, the ragged lengths at batch 1 and 4, every system everywhere."""
    return _configs("layers-full", _FULL_GRID, _FULL_RAGGED, lambda b, s: True)


SUITES: dict[str, Callable[[], list[Config]]] = {"layers": configs, "layers-full": full_configs}


def layer_flops(layer: str, problem: Mapping[str, Any]) -> float:
    """Matmul FLOPs of one call: projections, causal attention (half of the square, as the attention suite),
    or the SSD's (the chunk-state and chunk-scan GEMMs as the mamba templates count them, ``C B^T`` within each
    chunk's causal half); norms, RoPE, the conv and other elementwise work are not counted."""
    b, n = problem["batch"], problem["seqlen"]
    tokens = b * n
    if layer == "llama3-8b":
        s = LlamaShape()
        proj = s.hidden * ((s.heads + 2 * s.kv_heads) * s.head_dim + s.heads * s.head_dim + 3 * s.intermediate)
        return 2.0 * tokens * proj + 2.0 * b * s.heads * n * n * s.head_dim
    s = Mamba2Shape()
    pairs = n * (s.chunk + 1) / 2  # causal (s <= l) pairs within a chunk, per batch (a partial chunk pro rata)
    ssd = 4.0 * tokens * s.nheads * s.headdim * s.d_state + 2.0 * b * pairs * (s.nheads * s.headdim
                                                                                + s.ngroups * s.d_state)
    return 2.0 * tokens * s.d_model * (s.d_in_proj + s.d_inner) + ssd


# ---------------------------------------------------------------- systems
def _compiled(module: torch.nn.Module, mode: str | None) -> Callable:
    return torch.compile(module, fullgraph=True, dynamic=False, mode=mode)


def _build(system: str, layer: torch.nn.Module) -> tuple[Callable, dict]:
    """(callable, row info) of one system on ``layer``'s weights."""
    if system == "eager":
        return twin(layer, EAGER), {"ops": "PyTorch: F.linear, SDPA, plain chunked SSD"}
    if system == "torch-compile":
        return _compiled(twin(layer, EAGER), None), {"mode": "default", "fullgraph": True}
    if system == "torch-compile-max-autotune":  # our own CUDA-graph timing replays every system alike
        return _compiled(twin(layer, EAGER), "max-autotune-no-cudagraphs"), {"mode": "max-autotune-no-cudagraphs",
                                                                            "fullgraph": True}
    if system == "mamba-ssm":
        return twin(layer, mamba_ssm()), {"ops": "mamba-ssm Triton: mamba_chunk_scan_combined, rmsnorm_fn; "
                                                 "PyTorch conv1d (no causal-conv1d extension)"}
    plans = {"plans": "measured on the GPU (PT_TVM_TUNE)" if pt_kernels.current().config.tune
             else "the cost model's pick per shape (or the plan cache's)"}
    if system == "pt-tvm":
        return twin(layer, PT_TVM), {"ops": "pt_tvm.ops: linear, swiglu, attention, ssd_chunk_scan", **plans}
    if system == "pt-tvm+compile":
        return _compiled(twin(layer, PT_TVM), None), {"mode": "default", "fullgraph": True, **plans}
    raise ValueError(f"unknown layers system {system!r} (known: {', '.join(SYSTEMS)})")


SYSTEMS = ("eager", "torch-compile", "torch-compile-max-autotune", "mamba-ssm", "pt-tvm", "pt-tvm+compile")


def _refusal(system: str, e: BaseException) -> str | None:
    """Why a system is skipped rather than wrong: pt-tvm refusing a shape (also when torch.compile wrapped the
    error), or a peer that is not installed."""
    cause: BaseException | None = e
    while cause is not None:
        if isinstance(cause, PtTvmError):
            return f"pt-tvm refuses: {type(cause).__name__}: {' '.join(str(cause).split())[:400]}"
        cause = cause.__cause__ or cause.__context__
    if system == "mamba-ssm" and isinstance(e, ImportError):
        return f"not installed: {error_text(e)} (benchmarks/fetch_mamba_ssm.sh, then PYTHONPATH=.peers/mamba)"
    return None


@contextlib.contextmanager
def _exact_float32() -> Iterator[None]:
    """float32 matmuls and convolutions without TF32 (the reference's precision)."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


# ---------------------------------------------------------------- the run
def run_configs(configs: Iterable[Config], vdev: Any, *, warmup_ms: float = 100.0, rep_ms: float = 1000.0,
                settle_ms: float = SETTLE_MS, rounds: int = 5, workers: int = 0, log: Any = None,
                on_config: Callable[[list[dict]], None] | None = None) -> list[dict]:
    """Build, check and time every (config, system) on the local GPU; one row each, skips and failures included.
    pt-tvm's kernels compile ahead in ``workers`` processes (default: the cores but one; 1: in this process)."""
    log = sys.stdout if log is None else log  # the stream of the call, not of import time
    configs = list(configs)
    workers = workers or max(1, (os.cpu_count() or 1) - 1)
    calls = [kernel_calls(c.kernel, c.problem) if any(s.startswith("pt-tvm") for s in c.systems) else []
             for c in configs]
    rows: list[dict] = []
    with contextlib.ExitStack() as stack, torch.no_grad():
        warmer = stack.enter_context(Warmer(calls, workers)) if workers > 1 else None
        for i, cfg in enumerate(configs):
            wait = (lambda i=i: warmer.wait(i)) if warmer is not None and calls[i] else dict
            rows += _run_config(cfg, vdev, wait, log=log, warmup_ms=warmup_ms, rep_ms=rep_ms, settle_ms=settle_ms,
                                rounds=rounds)
            if on_config is not None:
                on_config(rows)
    return rows


def _run_config(cfg: Config, vdev: Any, wait: Callable[[], dict], *, log: Any, warmup_ms: float, rep_ms: float,
                settle_ms: float, rounds: int) -> list[dict]:
    """Every system of one config on the same weights and inputs; its rows. ``wait`` blocks until the config's
    pt-tvm kernels are compiled ahead (called before the first pt-tvm system: the peers build meanwhile)."""
    torch._dynamo.reset()  # a fresh recompile budget: every config compiles the same forward again
    problem = dict(cfg.problem)
    dtype = getattr(torch, problem["dtype"])
    layer = LAYERS[cfg.kernel](device="cuda", dtype=dtype).reset(seed=0)
    shape = (problem["batch"], problem["seqlen"], layer.width)

    def make(seed: int) -> tuple:
        g = torch.Generator(device="cuda").manual_seed(1000 + seed)
        return (torch.randn(shape, generator=g, device="cuda").to(dtype),)

    sets = input_sets(make, make(0)[0].numel() * dtype.itemsize, vdev.l2_bytes)
    (x,) = make(10_000)  # fresh inputs the timing never sees
    residual = cfg.kernel == "llama3-8b"  # compare what the layer adds: x itself would dominate the norm
    with _exact_float32():
        ref = twin(layer, dtype=torch.float32)(x.float())
    ref = ref - x.float() if residual else ref
    flops = layer_flops(cfg.kernel, problem)
    built: dict[str, Callable] = {}
    rows: list[dict] = []
    warm: dict | None = None
    for system in cfg.systems:
        row = {"suite": cfg.suite, "kernel": cfg.kernel, "config": problem, "system": system, "ms": None,
               "tflops": None, "rel_err": None, "valid": False, "flops": flops}
        if cfg.note:
            row["note"] = cfg.note
        if system.startswith("pt-tvm"):
            warm = wait() if warm is None else warm
            row.update(warm)
        t0 = time.perf_counter()
        try:
            fn, info = _build(system, layer)
            row.update(info)
            checked = (lambda t, fn=fn: fn(t) - t) if residual else fn
            row.update(verdict(check_call(checked, (x,), (ref,)), LAYER_TOL[problem["dtype"]]))
            row["build_s"] = round(time.perf_counter() - t0, 2)  # incl. the first call: compiles
            fn(*sets[0])
            torch.cuda.synchronize()
            built[system] = fn
        except Exception as e:  # a refusal is a skipped row, anything else an invalid one
            torch.cuda.synchronize()
            why = _refusal(system, e)
            row.update({"valid": None, "skipped": why} if why else {"valid": False, "error": error_text(e)})
        rows.append(row)
    del ref
    time_rows(rows, built, sets, flops, rounds=rounds, warmup_ms=warmup_ms, rep_ms=rep_ms, settle_ms=settle_ms)
    for row in rows:
        if row["system"] in built:
            row["kernels_top"] = kernel_profile(built[row["system"]], sets[0])
    for row in rows:
        ms = f"{row['ms']:.3f} ms" if row["ms"] else "-"
        print(f"{cfg.kernel:<12} b{problem['batch']:<3} s{problem['seqlen']:<5} {row['system']:<27} {ms:>11} "
              f"err={row['rel_err']} valid={row['valid']} {row.get('error') or row.get('skipped') or ''}",
              file=log, flush=True)
        for k in row.get("kernels_top", [])[:6]:
            print(f"    {k['us']:>9.1f} us x{k['launches']:g}  {k['kernel'][:100]}", file=log, flush=True)
    del sets, x, built, layer
    gc.collect()
    torch.cuda.empty_cache()
    return rows


def kernel_profile(fn: Callable, inputs: Sequence, calls: int = 3, top: int = 10) -> list[dict]:
    """Where one call's GPU time goes: its ``top`` kernels by total time (torch.profiler over ``calls`` calls,
    after the timing: compiled and warm), each with microseconds per layer call and launches per call."""
    from torch.profiler import ProfilerActivity, profile  # loaded on the GPU run only

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn(*inputs)
        torch.cuda.synchronize()
    events = [e for e in prof.key_averages() if e.self_device_time_total > 0]
    events.sort(key=lambda e: e.self_device_time_total, reverse=True)
    return [{"kernel": e.key[:120], "us": round(e.self_device_time_total / calls, 1), "launches": e.count / calls}
            for e in events[:top]]


def dry_run_configs(configs: Iterable[Config], *, log: Any = None) -> list[dict]:
    """No GPU: each config's rows as a run writes them, nothing built or timed (``valid: null``); the pt-tvm rows
    list the kernel calls their layer makes (``kernels``, found on meta tensors), or fail with the error."""
    log = sys.stdout if log is None else log  # the stream of the call, not of import time
    rows = []
    for cfg in configs:
        for system in cfg.systems:
            row = {"suite": cfg.suite, "kernel": cfg.kernel, "config": dict(cfg.problem), "system": system,
                   "ms": None, "tflops": None, "rel_err": None, "valid": None, "dry_run": True,
                   "flops": layer_flops(cfg.kernel, cfg.problem), "skipped": "dry run: built and timed on a GPU only"}
            if cfg.note:
                row["note"] = cfg.note
            if system.startswith("pt-tvm"):
                try:
                    row["kernels"] = [str(c) for c in kernel_calls(cfg.kernel, cfg.problem)]
                except Exception as e:  # the ops refused the layer's arguments already on meta tensors
                    row.update(valid=False, error=error_text(e))
            rows.append(row)
        print(f"{cfg.kernel:<12} b{cfg.problem['batch']:<3} s{cfg.problem['seqlen']:<5} "
              f"{', '.join(cfg.systems)}", file=log, flush=True)
    return rows
