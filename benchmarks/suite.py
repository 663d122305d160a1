"""Run a suite: for each configuration, build every system, check it, time it, and record a row.

A row is ``{suite, kernel, config, system, ms, tflops, rel_err, valid, ...}``;
a run is a header (device, versions, date, command) plus its rows, written
as JSON. A dry run (:mod:`benchmarks.dryrun`) builds and checks nothing on a
GPU: it resolves the templates, runs pt-tvm's search and lowers its kernels
on the CPU, so CI exercises everything but the timing.
"""
from __future__ import annotations

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

from pt_tvm.measure import REL_TOL, input_sets, rel_err, time_interleaved
from .systems import build_system, flops_per_second

__all__ = ["Config", "run_configs", "header", "write_run"]


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
    import tilelang
    import torch

    import pt_tvm

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


_JIT = ("torch-compile", "fa3")  # compiled on their first call, into Inductor's / CuTe DSL's on-disk caches
_IDENTITY = ("suite", "kernel", "config", "system", "note")  # what a row measured (report.config_key)
PRECOMPILE_DEADLINE_S = 900.0  # workers still compiling then are stopped; the timed process compiles the rest


def _warm(args: tuple) -> str:
    """Build one system in a worker process (and call a JIT-compiled one once on the config's shapes),
    filling the on-disk kernel caches the timed process then reads."""
    system, kernel, problem, vdev_name = args
    from pt_tvm import hw, templates

    template = templates.get(kernel)
    fn, info = build_system(system, template, problem, hw.get(vdev_name))
    if fn is not None and system in _JIT:
        import torch

        try:
            fn(*template.make_inputs(problem, "cuda", torch.Generator(device="cuda").manual_seed(0)))
            torch.cuda.synchronize()
        except Exception as e:  # the timed process meets (and records) it again
            return f"{type(e).__name__}: {e}"
    return info.get("error", "ok")


def _config_key(kernel: str, problem: Mapping[str, Any]) -> str:
    return json.dumps([kernel, dict(problem)], sort_keys=True, default=str)


def precompile(configs: Sequence[Config], vdev: Any, workers: int, tune_top_k: int | None = None,
               deadline_s: float = PRECOMPILE_DEADLINE_S) -> dict[str, Any] | None:
    """Compile the run's kernels in parallel processes so the timed process mostly loads them: the plans
    pt-tvm's measured refinement will try (searched in the workers too), TileLang's own schedule,
    pt-tvm-model where pt-tvm is absent (otherwise its plan is pt-tvm's first candidate) and one call
    of each ``_JIT`` system. Returns the searches done (``pt_tvm.tune.Searched`` by config, for
    tune_template), or None when it did not run (one worker or one job)."""
    import multiprocessing

    from pt_tvm import tune

    def warmed(c: Config, s: str) -> bool:
        return s in _JIT or s == "tilelang-auto" or (s == "pt-tvm-model" and "pt-tvm" not in c.systems)

    jobs = [(s, c.kernel, dict(c.problem), vdev.name) for c in configs for s in c.systems if warmed(c, s)]
    top_k = tune_top_k or tune.DEFAULT_TOP_K
    searches = [(c.kernel, dict(c.problem), vdev.name, top_k) for c in configs if "pt-tvm" in c.systems]
    if workers <= 1 or len(jobs) + len(searches) <= 1:
        return None
    end = time.monotonic() + deadline_s
    searched: dict[str, Any] = {}
    with multiprocessing.get_context("spawn").Pool(workers) as pool:  # leaving it terminates the workers
        found = [(j, pool.apply_async(tune.search_jobs, (j,))) for j in searches]
        pending = [pool.apply_async(_warm, (j,)) for j in jobs]
        unique: dict[str, tuple] = {}
        try:
            for (kernel, problem, _, _), f in found:
                try:
                    compiles, searched[_config_key(kernel, problem)] = f.get(max(0.0, end - time.monotonic()))
                except multiprocessing.TimeoutError:
                    raise
                except Exception:  # e.g. no valid plan: the timed process reports it on the row
                    continue
                unique.update((json.dumps(j, sort_keys=True), j) for j in compiles)
            pending += [pool.apply_async(tune.compile_one, (j,)) for j in unique.values()]
            for f in pending:
                f.wait(max(0.0, end - time.monotonic()))
        except multiprocessing.TimeoutError:
            pass  # what did not finish is compiled (and its failure recorded) by the timed process
    return searched


def run_configs(configs: Iterable[Config], vdev: Any, *, warmup_ms: float = 100.0, rep_ms: float = 1000.0,
                log: Any = sys.stdout, workers: int = 0, rounds: int = 5,
                system_options: Mapping[str, Any] | None = None,
                on_config: Callable[[list[dict]], None] | None = None) -> list[dict]:
    """Measure every (config, system) pair on the local GPU; one row each, failures included.

    ``system_options`` go to every system factory (e.g. ``tune_top_k`` for pt-tvm); ``on_config``
    gets the rows so far after each config (to save partial results of a run that may be cut off).
    """
    import torch

    from pt_tvm import templates

    configs = list(configs)
    options = dict(system_options or {})
    searched = precompile(configs, vdev, workers or os.cpu_count() or 1, options.get("tune_top_k"))
    if searched is not None:
        options["tune_workers"] = 1  # pt-tvm's candidates are in the kernel cache: load them in this process
    rows = []
    for cfg in configs:
        template = templates.get(cfg.kernel)
        problem, _ = template.resolve(**cfg.problem)
        flops = template.flops(problem)

        def make(seed: int) -> tuple:
            g = torch.Generator(device="cuda").manual_seed(1000 + seed)
            return template.make_inputs(problem, "cuda", g)

        sets = input_sets(make, _bytes(make(0)), vdev.l2_bytes)
        check_inputs = make(10_000)  # fresh inputs the timing never saw
        ref = template.reference(*check_inputs, **problem)
        ref = ref[0] if isinstance(ref, tuple) else ref
        tol = REL_TOL.get(problem.get("dtype", "float16"), 1e-2)
        built: dict = {}
        shared: dict = {}  # what one system of this config hands another (pt-tvm's search for pt-tvm-model)
        for system in cfg.systems:
            row = {"suite": cfg.suite, "kernel": cfg.kernel, "config": dict(problem), "system": system,
                   "ms": None, "tflops": None, "rel_err": None, "valid": False}
            if cfg.note:
                row["note"] = cfg.note
            t0 = time.perf_counter()
            fn, info = build_system(system, template, problem, vdev, shared=shared,
                                    searched=(searched or {}).get(_config_key(cfg.kernel, cfg.problem)), **options)
            row.update({k: v for k, v in info.items() if k not in _IDENTITY})  # a system cannot rename its row
            if fn is not None:
                try:
                    out = fn(*check_inputs)
                    out = out[0] if isinstance(out, (tuple, list)) else out
                    torch.cuda.synchronize()
                    row["build_s"] = round(time.perf_counter() - t0, 2)  # incl. a first call (torch.compile's compile)
                    err = rel_err(out.reshape(ref.shape), ref)
                    row["rel_err"] = err if math.isfinite(err) else "inf"
                    row["valid"] = err <= tol
                    fn(*sets[0])
                    torch.cuda.synchronize()
                    built[system] = fn
                except Exception as e:  # a launch failure (e.g. too much shared memory) is a result
                    row["error"] = _error(e)
                    torch.cuda.synchronize()
            rows.append(row)
        timings = time_interleaved(built, sets, rounds=rounds, warmup_ms=warmup_ms, round_ms=rep_ms / rounds)
        for row in rows[-len(cfg.systems):]:
            t = timings.get(row["system"])
            if t is not None:
                row.update(ms=t.ms, p20_ms=t.p20, p80_ms=t.p80, calls=t.calls,
                           tflops=flops_per_second(flops, t.ms) / 1e12)
            tf = f"{row['tflops']:.0f}" if row["tflops"] else "-"
            print(f"{cfg.kernel:<16} {_short(problem):<40} {row['system']:<14} {tf:>6} TFLOP/s  "
                  f"err={row['rel_err']}  valid={row['valid']}  {row.get('error', '')}", file=log, flush=True)
        del sets, check_inputs, ref
        torch.cuda.empty_cache()
        if on_config is not None:
            on_config(rows)
    return rows


def _error(e: Exception) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[-1][:300] if text else ''}"


def _short(problem: Mapping[str, Any]) -> str:
    keys = ("batch", "seq_len", "seqlen", "heads", "kv_heads", "dim", "causal", "M", "N", "K", "dtype")
    return " ".join(f"{k}={problem[k]}" for k in keys if k in problem)


def write_run(path: str, head: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> None:
    """Write ``{"header": ..., "rows": [...]}`` as JSON (creating the folder)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"header": dict(head), "rows": list(rows)}, f, indent=1, default=str)
