"""Run a suite: for each configuration, build every system, check it, time it, and record a row.

A row is ``{suite, kernel, config, system, ms, tflops, rel_err, valid, ...}``;
a run is a header (device, versions, date, command) plus its rows, written
as JSON. A dry run (:mod:`benchmarks.dryrun`) builds and checks nothing on a
GPU: it resolves the templates, runs pt-tvm's search and lowers its kernels
on the CPU, so CI exercises everything but the timing.
"""
from __future__ import annotations

import contextlib
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

import tilelang
import torch

import pt_tvm
from pt_tvm import templates
from pt_tvm.measure import REL_TOL, SETTLE_MS, OutputCheck, Timing, as_outputs, check_call, input_sets

from .precompile import Precompiler
from .systems import AUTOTUNE_NUM_STAGES, build_system, flops_per_second
from .timing import TwoWays, time_two_ways

__all__ = ["Config", "run_configs", "verdict", "timing_fields", "time_rows", "error_text", "header", "write_run",
           "SETTLE_MS"]

@dataclass(frozen=True)
class Config:
    """One benchmark point: a template at a problem size, and the systems to compare on it."""

    suite: str
    kernel: str
    problem: Mapping[str, Any]
    systems: tuple[str, ...]
    note: str = ""


def header(command: str, device: str) -> dict:
    """Who measured what with which versions: the run's provenance."""
    def git(*args: str) -> str | None:
        try:
            return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return None

    driver = "n/a"
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, check=True).stdout.strip().splitlines()[0]
    except (OSError, subprocess.CalledProcessError):
        pass
    return {
        "device": device, "driver": driver, "cuda": torch.version.cuda, "torch": torch.__version__,
        "tilelang": tilelang.__version__, "pt_tvm": pt_tvm.__version__, "python": platform.python_version(),
        # the GPU machine's copy is told its commit through PT_TVM_GIT_COMMIT (its .git, if any, can be stale)
        "git_commit": os.environ.get("PT_TVM_GIT_COMMIT") or git("rev-parse", "HEAD") or "unknown",
        "git_dirty": None if os.environ.get("PT_TVM_GIT_COMMIT") else  # a copy's .git says nothing then
        (lambda st: None if st is None else bool(st))(git("status", "--porcelain")),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "command": command,
    }


def _bytes(inputs: Sequence[Any]) -> int:
    return sum(t.numel() * t.element_size() for t in inputs)


_IDENTITY = ("suite", "kernel", "config", "system", "note")  # what a row measured (report.config_key)


def run_configs(configs: Iterable[Config], vdev: Any, *, warmup_ms: float = 100.0, rep_ms: float = 1000.0,
                settle_ms: float = SETTLE_MS, log: Any = None, workers: int = 0, rounds: int = 5,
                system_options: Mapping[str, Any] | None = None,
                on_config: Callable[[list[dict]], None] | None = None, deadline: float | None = None) -> list[dict]:
    """Measure every (config, system) pair on the local GPU; one row each, failures included.

    With ``workers > 1`` (default: the cores but one) kernels compile in that many processes while
    earlier configs are timed (:class:`benchmarks.precompile.Precompiler`). ``system_options`` go to
    every system factory (e.g. ``tune_top_k`` for pt-tvm, ``autotune_cache`` for TileLang's
    autotuner); ``on_config`` gets the rows so far after each config (to save partial results of a
    run that may be cut off); past ``deadline`` (a :func:`time.perf_counter` value) no further config
    starts. Each system's share of a timing round follows ``settle_ms`` of its own calls
    (:func:`pt_tvm.measure.time_samplers`).
    """
    log = sys.stdout if log is None else log  # the stream of the call, not of import time
    configs = list(configs)
    options = {"tune_rep_ms": rep_ms, **(system_options or {})}
    workers = workers or max(1, (os.cpu_count() or 1) - 1)  # a core left to the timed process
    sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
    rows: list[dict] = []
    with contextlib.ExitStack() as stack:
        pre = None
        if workers > 1:
            pre = stack.enter_context(Precompiler(configs, vdev, workers, options.get("tune_top_k"), log=log,
                                                  autotune_cache=options.get("autotune_cache"),
                                                  autotune_stages=options.get("autotune_stages", AUTOTUNE_NUM_STAGES)))
            options["tune_workers"] = 1  # pt-tvm's candidates come compiled: load them in this process
        for i, cfg in enumerate(configs):
            if deadline is not None and time.perf_counter() > deadline:
                print(f"deadline: {len(configs) - i} of {len(configs)} configs not started", file=log, flush=True)
                break
            searched = pre.ready(i) if pre is not None else None
            rows += _run_config(cfg, vdev, searched, options, log=log, warmup_ms=warmup_ms, rep_ms=rep_ms,
                                settle_ms=settle_ms, rounds=rounds, sms=sms)
            if on_config is not None:
                on_config(rows)
    return rows


def verdict(checks: Sequence[OutputCheck], tol: float) -> dict:
    """The row fields of a checked call: ``rel_err`` (the worst output's), ``valid`` (every output within
    ``tol``), per output ``rel_errs`` and ``prefill`` (what its memory held before the call, see
    :class:`pt_tvm.measure.OutputCheck`), and ``error`` naming each output that failed."""
    errs = [c.rel_err for c in checks]
    worst = max(errs)
    bad = []
    for k, err in enumerate(errs):
        if not math.isfinite(err):
            bad.append(f"output {k} of {len(errs)}: non-finite values (an element left unwritten reads NaN)")
        elif err > tol:
            bad.append(f"output {k} of {len(errs)}: relative error {err:.3g} over the tolerance {tol:g}")
    fields = {"rel_err": worst if math.isfinite(worst) else "inf", "valid": not bad,
              "rel_errs": [e if math.isfinite(e) else "inf" for e in errs], "prefill": [c.prefill for c in checks]}
    if bad:
        fields["error"] = "; ".join(bad)
    return fields


def timing_fields(t: TwoWays, flops: float) -> dict:
    """A row's timing: the headline (``ms``, ``tflops``, ``timing``: CUDA graph, else queued calls) and
    both measurements (``queued``, ``graph``: median, p20, p80, calls; ``graph_error``/``queued_error`` where
    one failed); a system neither way could time gets an ``error`` and no headline."""

    def fields(timing: Timing | None) -> dict | None:
        return None if timing is None else {"ms": timing.ms, "p20_ms": timing.p20, "p80_ms": timing.p80,
                                            "calls": timing.calls}

    out = {"queued": fields(t.queued), "graph": fields(t.graph)}
    out.update({k: v for k, v in (("graph_error", t.graph_error), ("queued_error", t.queued_error)) if v})
    if t.headline is None:
        return {**out, "error": t.queued_error or t.graph_error}
    how, head = t.headline
    return {**out, "ms": head.ms, "p20_ms": head.p20, "p80_ms": head.p80, "calls": head.calls, "timing": how,
            "tflops": flops_per_second(flops, head.ms) / 1e12}


def time_rows(rows: Sequence[dict], built: Mapping[str, Callable[..., Any]], sets: Sequence[tuple], flops: float, *,
              rounds: int, warmup_ms: float, rep_ms: float, settle_ms: float) -> None:
    """Time the ``built`` systems two ways in the same rounds (:func:`benchmarks.timing.time_two_ways`) and
    write each one's :func:`timing_fields` into its row."""
    timings = time_two_ways(built, sets, rounds=rounds, warmup_ms=warmup_ms, round_ms=rep_ms / rounds,
                            settle_ms=settle_ms, describe=error_text)
    for row in rows:
        if row["system"] in timings:
            row.update(timing_fields(timings[row["system"]], flops))


def _run_config(cfg: Config, vdev: Any, searched: Any, options: Mapping[str, Any], *, log: Any,
                warmup_ms: float, rep_ms: float, settle_ms: float, rounds: int, sms: int) -> list[dict]:
    """Build, check and time every system of one config on the same inputs; its rows."""
    # torch-compile's function is one code object to Dynamo in every config: past its recompile limit (8 shapes)
    # it silently ran eager PyTorch. Each config compiles afresh, as a user's model would.
    torch._dynamo.reset()
    template = templates.get(cfg.kernel)
    problem, _ = template.resolve(**cfg.problem)
    flops = template.flops(problem)

    def make(seed: int) -> tuple:
        g = torch.Generator(device="cuda").manual_seed(1000 + seed)
        return template.make_inputs(problem, "cuda", g)

    sets = input_sets(make, _bytes(make(0)), vdev.l2_bytes)
    check_inputs = make(10_000)  # fresh inputs the timing never saw
    refs = as_outputs(template.reference(*check_inputs, **problem))
    tol = REL_TOL.get(problem.get("dtype", "float16"), 1e-2)
    built: dict = {}
    shared: dict = {}  # what one system of this config hands another (pt-tvm's search for pt-tvm-model)
    rows = []
    for system in cfg.systems:
        row = {"suite": cfg.suite, "kernel": cfg.kernel, "config": dict(problem), "system": system,
               "ms": None, "tflops": None, "rel_err": None, "valid": False}
        if cfg.note:
            row["note"] = cfg.note
        t0 = time.perf_counter()
        fn, info = build_system(system, template, problem, vdev, shared=shared, searched=searched, **options)
        row.update({k: v for k, v in info.items() if k not in _IDENTITY})  # a system cannot rename its row
        if row.get("grid"):
            row["waves"] = round(row.get("tiles", row["grid"]) / sms, 3)  # a persistent kernel's waves of tiles
        if fn is not None:
            try:
                checks = check_call(fn, check_inputs, refs, inout=template.inout_idx)
                row["build_s"] = round(time.perf_counter() - t0, 2)  # incl. a first call (torch.compile's compile)
                row.update(verdict(checks, tol))
                fn(*sets[0])
                torch.cuda.synchronize()
                built[system] = fn
            except Exception as e:  # a launch failure (e.g. too much shared memory) is a result
                row["error"] = error_text(e)
                torch.cuda.synchronize()
        rows.append(row)
    time_rows(rows, built, sets, flops, rounds=rounds, warmup_ms=warmup_ms, rep_ms=rep_ms, settle_ms=settle_ms)
    for row in rows:
        tf = f"{row['tflops']:.0f}" if row["tflops"] else "-"
        queued = (row.get("queued") or {}).get("ms")
        print(f"{cfg.kernel:<16} {_short(problem):<40} {row['system']:<17} {tf:>6} TFLOP/s "
              f"({row.get('timing', '-')}; queued {f'{queued:.4f} ms' if queued else '-'})  err={row['rel_err']}  "
              f"valid={row['valid']}  {row.get('error', '')} {row.get('graph_error', '')}", file=log, flush=True)
    del sets, check_inputs, refs, built
    torch.cuda.empty_cache()
    return rows


def error_text(e: BaseException) -> str:
    """An error as a row records it: its type and the last line of its message (at most 300 characters)."""
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[-1][:300] if text else ''}"


def _short(problem: Mapping[str, Any]) -> str:
    keys = ("batch", "seq_len", "seqlen", "heads", "kv_heads", "dim", "causal", "M", "N", "K", "dtype")
    return " ".join(f"{k}={problem[k]}" for k in keys if k in problem)


def write_run(path: str, head: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> None:
    """Write ``{"header": ..., "rows": [...]}`` as JSON (creating the folder)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w") as f:  # then renamed: a run cut off while writing keeps its last whole file
        json.dump({"header": dict(head), "rows": list(rows)}, f, indent=1, default=str)
    os.replace(path + ".tmp", path)
