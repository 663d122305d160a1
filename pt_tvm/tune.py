"""Measured refinement: compile the cost model's best few (diverse) plans, time them on the GPU, keep the model's
first pick unless another plan measured clearly faster (:data:`REFINE_MARGIN`).

The cost model ranks hundreds of plans on a CPU in seconds; the GPU then
settles what the model cannot see. Candidates are compiled in parallel
processes (filling TileLang's kernel cache), then checked against the
template's PyTorch reference on fresh inputs and timed in this process.
Each measurement is also a calibration sample for :func:`pt_tvm.cost.calibrate`.
"""
from __future__ import annotations

import concurrent.futures
import functools
import math
import multiprocessing
import os
import platform
import socket
import subprocess
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import tilelang
import torch

from . import __version__, hw, templates
from .compiler import planned_func, schedule_template
from .errors import one_line
from .graph import Placement
from .measure import REL_TOL, SETTLE_MS, as_outputs, check_call, input_sets, kernel_outputs, time_replayed
from .passes import apply_plan
from .plan import ExecutionPlan
from .search import Candidate, SearchResult, SearchSpace
from .tunedb import prefer_first

__all__ = ["Measured", "TuneResult", "Searched", "diverse_top", "compile_jobs", "compile_one", "warm", "refined",
           "tune_template", "measure_one", "report", "DEFAULT_TOP_K", "REFINE_MARGIN"]

DEFAULT_TOP_K = 8  # plans measured per kernel unless told otherwise
# Measured refinement replaces the model's first pick only with a plan that measured faster by more than this share.
# Where the suites timed both picks again (settled, alternating rounds), the tuner's switches won by less than 1.5% in
# tuning ran 0.995x the model's pick in geometric mean (17 switches, 12 of them slower: timing noise between runs on a
# power-capped GPU), those won by more 1.028x (13 of 14 faster); GEMM, attention and Mamba2 rows of
# benchmarks/results/2026-11-27-x4-suites, 2026-11-28-h200-x2-suites and 2026-11-28-h200-x2-gemm.
REFINE_MARGIN = 0.015


@dataclass(frozen=True)
class Measured:
    candidate: Candidate
    ms: float | None
    rel_err: float | None
    error: str = ""

    @property
    def valid(self) -> bool:
        return self.ms is not None and not self.error


@dataclass(frozen=True)
class TuneResult:
    best: Measured
    kernel: Callable
    measured: tuple[Measured, ...]
    search: SearchResult
    problem: Mapping[str, Any]
    timing: str  # how the candidates were timed: pt_tvm.measure.GRAPH, or QUEUED where a capture failed

    def samples(self) -> list[tuple]:
        """(plan, graph, seconds) triples for :func:`pt_tvm.cost.calibrate`."""
        return [(m.candidate.plan, m.candidate.graph, m.ms * 1e-3) for m in self.measured if m.valid]


def _tensor_positions(c: Candidate) -> tuple:
    """Where the tensor-core sTasks sit in each role's loop program."""
    return tuple(tuple(i for i, a in enumerate(c.plan.program(r.name, c.graph, Placement.LOOP))
                       if a.seu.value == "tensor_core") for r in c.plan.roles)


def _measure_class(c: Candidate) -> tuple:
    """The plan's measurement class: tile, roles, pipelines, stages and how its warpgroups synchronize
    (turns taken, gemms kept in flight): everything but the order."""
    return (tuple(sorted(c.plan.tile.items())), c.plan.roles, c.plan.pipelines,
            tuple(sorted((a.stask, a.stage) for a in c.plan.appends)), c.plan.handoffs,
            tuple(sorted(c.plan.in_flight())), c.plan.row_split)


def _partition(c: Candidate) -> tuple:
    """The partition of the output tile: tile, roles (consumer warpgroups) and how a gemm tile is split
    over them."""
    return (tuple(sorted(c.plan.tile.items())), c.plan.roles, c.plan.row_split)


_WORTH_MEASURING = 1.25  # a partition or class predicted this much slower than the best is not worth a GPU slot


def diverse_top(result: SearchResult, k: int) -> list[Candidate]:
    """k candidates spread over the search's choices, best-predicted first.

    First the best plan of each partition (tile and roles), then the winner's class
    with its tensor-core sTasks placed most differently (on one H200, orders moved
    FlashAttention by 5%, pipeline depths by 1%), then the best of each remaining
    configuration class (depth, stages), partitions and classes only within 1.25x of
    the best prediction; then, per class, the plans whose tensor-core placement differs
    most from those already taken. The best plan of each emission style keeps a place
    whatever its prediction (see :func:`_with_every_style`).
    """
    out: list[Candidate] = []
    taken: dict[tuple, list[tuple]] = {}

    def take(c: Candidate) -> None:
        out.append(c)
        taken.setdefault(_measure_class(c), []).append(_tensor_positions(c))

    cutoff = result.ranked[0].seconds * _WORTH_MEASURING

    def distance(c: Candidate) -> int:
        pos = _tensor_positions(c)
        return min((sum(abs(a - b) for ra, rb in zip(pos, p) for a, b in zip(ra, rb))
                    for p in taken.get(_measure_class(c), [])), default=0)

    seen = set()
    for c in result.ranked:  # the best plan of each partition
        if len(out) < k and _partition(c) not in seen and c.seconds <= cutoff:
            seen.add(_partition(c))
            take(c)
    best_class = [c for c in result.ranked if _measure_class(c) == _measure_class(out[0]) and c not in out]
    if best_class and len(out) < k:  # the winner's class with its tensor-core sTasks placed most differently
        far = max(best_class, key=lambda c: (distance(c), -c.seconds))
        if distance(far):
            take(far)
    seen = {_measure_class(c) for c in out}
    for c in result.ranked:  # the best of every other depth / stage class
        if len(out) < k and _measure_class(c) not in seen and c.seconds <= cutoff:
            seen.add(_measure_class(c))
            take(c)
    classes: dict[tuple, list[Candidate]] = {}
    for c in result.ranked:
        if c not in out:
            classes.setdefault(_measure_class(c), []).append(c)

    while len(out) < k and any(classes.values()):
        for cfg, members in classes.items():
            if not members or len(out) == k:
                continue
            pick = max(members, key=lambda c: (distance(c), -c.seconds))
            members.remove(pick)
            if distance(pick) == 0:
                members.clear()
                continue
            take(pick)
    return _with_every_style(out, result, k)


def _with_every_style(picks: list[Candidate], result: SearchResult, k: int) -> list[Candidate]:
    """``picks`` with the best plan of every emission style among the last ``k`` places (for ``k > 1``).

    The styles differ in what the model sees least: a warp-specialized Hopper plan owns its SM
    (one block), a software-pipelined one shares it with other blocks and hides latency that way;
    only the GPU tells which wins on short loops (Mamba2's chunks), so each style gets measured.
    """
    best: dict[Any, Candidate] = {}
    for c in result.ranked:
        best.setdefault(c.plan.style, c)
    missing = [c for c in best.values() if c not in picks]
    if k <= 1 or not missing:
        return picks
    missing = missing[:k - 1]
    return picks[:min(len(picks), k - len(missing))] + missing


def compile_jobs(name: str, problem: Mapping[str, Any], vdev: hw.VDevice, cands: Any) -> list[tuple]:
    """Picklable jobs that compile the given candidates of template ``name`` (see :func:`warm`)."""
    return [(name, dict(problem), dict(c.plan.tile), c.plan.to_json(), vdev) for c in cands]


@dataclass(frozen=True)
class Searched:
    """A template's search done elsewhere (a worker process), for :func:`tune_template`: the result
    with ``ranked`` cut to the plans to measure (best first), and the resolved problem."""

    result: SearchResult
    problem: Mapping[str, Any]


def _candidates(name: str, vdev: hw.VDevice, params: Mapping[str, Any] | None, top_k: int, space: SearchSpace,
                seed: int, searched: Searched | None) -> tuple[SearchResult, dict, list[Candidate], Callable]:
    """(search result, problem, the plans to measure, candidate -> planned PrimFunc): searched here,
    or taken from ``searched``."""
    if searched is None:
        result, problem, build = schedule_template(name, vdev, params=params, space=space, seed=seed)
        return result, problem, diverse_top(result, top_k), build
    problem = dict(searched.problem)
    return (searched.result, problem, list(searched.result.ranked[:top_k]),
            lambda c: planned_func(name, problem, c, vdev))


def compile_one(job: tuple) -> str:
    """Worker: rebuild one candidate from its JSON plan and compile it (fills TileLang's kernel cache)."""
    name, problem, tile, plan_json, vdev = job
    template = templates.get(name)
    try:
        func = apply_plan(template.build(**problem, **tile), ExecutionPlan.from_json(plan_json), vdev)
        template.compile(func, vdev.tvm_target())
        return ""
    except Exception as e:  # reported by the in-process compile that follows
        return f"{type(e).__name__}: {e}"


def warm(jobs: list[tuple], workers: int) -> list[str]:
    """Compile jobs in ``workers`` spawned processes (one error string per job, "" when it compiled)."""
    if workers <= 1 or len(jobs) <= 1:
        return [compile_one(j) for j in jobs]
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(compile_one, jobs))


def tune_template(name: str, target: Any, *, params: Mapping[str, Any] | None = None, top_k: int = DEFAULT_TOP_K,
                  workers: int | None = None, space: SearchSpace = SearchSpace(), seed: int = 0,
                  warmup_ms: float = 50.0, rep_ms: float = 500.0, settle_ms: float = SETTLE_MS,
                  searched: Searched | None = None) -> TuneResult:
    """Search, then measure the ``top_k`` diverse best-predicted plans on the local GPU and keep the model's first
    pick unless another measured faster by more than :data:`REFINE_MARGIN` (:func:`refined`).

    The candidates compile in ``workers`` processes first (default: one per candidate, up to the
    cores); ``workers=1`` compiles them here, one by one (a caller that warmed TileLang's kernel
    cache with :func:`search_jobs` and :func:`warm` then only loads them, and can hand over the
    search those workers did as ``searched``).

    Candidates are timed in alternating rounds, so drift during the run cannot favour one of them, each
    replayed from a CUDA graph (``pt_tvm.measure.time_replayed``): queued calls of a short kernel time the
    host's launch path, the same for every plan, and would pick among them by noise. Each candidate runs
    ``settle_ms`` untimed before each of its rounds, as the benchmarks time systems (``measure.SETTLE_MS``).
    """
    vdev = hw.for_target(target)
    template = templates.get(name)
    result, problem, cands, build = _candidates(name, vdev, params, top_k, space, seed, searched)
    if workers != 1:  # workers=1: the caller has compiled them already (or compiles in this process)
        jobs = compile_jobs(name, problem, vdev, cands)
        warm(jobs, workers or min(len(jobs), os.cpu_count() or 1))

    def make(seed_: int) -> tuple:
        return template.make_inputs(problem, "cuda", torch.Generator(device="cuda").manual_seed(seed_))

    sets = input_sets(make, sum(t.numel() * t.element_size() for t in make(0)), vdev.l2_bytes, max_sets=8)
    check = make(123_456)
    refs = as_outputs(template.reference(*check, **problem))
    tol = REL_TOL.get(problem.get("dtype", "float16"), 1e-2)
    checked: list[tuple[Candidate, float]] = []
    failed: list[Measured] = []
    kernels: dict[int, Callable] = {}
    for c in cands:
        try:
            kernel = template.compile(build(c), vdev.tvm_target())
            err = max(o.rel_err for o in check_call(kernel_outputs(template, kernel), check, refs,
                                                    inout=template.inout_idx))  # every output, NaN-prefilled
            if not err <= tol:
                failed.append(Measured(c, None, err, f"wrong result: relative error {err:.3g}"))
                continue
            kernels[id(c)] = kernel
            checked.append((c, err))
        except Exception as e:  # a candidate that fails to compile or launch is reported, not fatal
            failed.append(Measured(c, None, None, f"{type(e).__name__}: {str(e).strip()[-300:]}"))
    checked, suspect = _error_outliers(checked)
    failed += [Measured(c, None, err, f"suspect result: relative error {err:.3g} is over {_OUTLIER:g}x the "
                        f"smallest of the other plans (a race?)") for c, err in suspect]
    way, times = time_replayed({str(id(c)): kernels[id(c)] for c, _ in checked}, sets,
                               warmup_ms=warmup_ms, round_ms=rep_ms / 5, settle_ms=settle_ms)
    measured = [Measured(c, times[str(id(c))].ms, err) for c, err in checked] + failed
    valid = [m for m in measured if m.valid]
    if not valid:
        raise RuntimeError("no candidate plan compiled and ran correctly:\n"
                           + "\n".join(f"  {m.candidate.note}: {m.error}" for m in measured))
    best = refined(valid, cands[0])
    return TuneResult(best, kernels[id(best.candidate)], tuple(measured), result, problem, way)


def refined(valid: list[Measured], first: Candidate) -> Measured:
    """The plan measured refinement keeps among the ``valid`` measurements: the model's ``first`` pick, unless it
    is not among them or another plan measured faster by more than :data:`REFINE_MARGIN`."""
    return prefer_first(next((m for m in valid if m.candidate is first), None), min(valid, key=lambda m: m.ms),
                        REFINE_MARGIN)


def measure_one(job: Mapping[str, Any]) -> dict:
    """Worker (``pt-tvm worker``): build, check and time one plan on this GPU, with the protocol of
    :func:`tune_template` (every output checked NaN-prefilled on fresh inputs, then timed replayed from a CUDA
    graph).

    ``job``: ``template``, ``problem``, ``plan`` (an ExecutionPlan dict), ``chip`` (a VDevice dict),
    optionally ``warmup_ms``, ``rep_ms``, ``settle_ms``, ``seed``. Returns ``ms``, ``p20_ms``, ``p80_ms``,
    ``calls``, ``timing``, ``rel_err``, ``build_s`` and the worker's ``versions``; or ``error``, the plan's
    fault (it did not build, launch, or compute the right result).
    """
    template = templates.get(job["template"])
    problem = dict(job["problem"])
    vdev = hw.VDevice.from_dict(job["chip"])
    plan = ExecutionPlan.from_dict(job["plan"])
    out: dict[str, Any] = {"versions": _worker_versions()}
    t0 = time.perf_counter()
    try:
        kernel = template.compile(apply_plan(template.build(**problem, **plan.tile), plan, vdev), vdev.tvm_target())
    except Exception as e:  # the plan's fault, reported as its result
        return {**out, "error": f"build: {one_line(e)}"}
    out["build_s"] = round(time.perf_counter() - t0, 3)
    seed = int(job.get("seed", 0))

    def make(s: int) -> tuple:
        return template.make_inputs(problem, "cuda", torch.Generator(device="cuda").manual_seed(seed + s))

    check = make(123_456)  # fresh inputs the timing never sees
    try:
        err = max(o.rel_err for o in check_call(kernel_outputs(template, kernel), check,
                                                as_outputs(template.reference(*check, **problem)),
                                                inout=template.inout_idx))
    except Exception as e:
        return {**out, "error": f"launch: {one_line(e)}"}
    tol = REL_TOL.get(problem.get("dtype", "float16"), 1e-2)
    out["rel_err"] = err if math.isfinite(err) else None
    if not err <= tol:
        return {**out, "error": f"wrong result: relative error {err:.3g} (tolerance {tol:g})"}
    sets = input_sets(make, sum(t.numel() * t.element_size() for t in check), vdev.l2_bytes, max_sets=8)
    way, times = time_replayed({"plan": kernel}, sets, warmup_ms=float(job.get("warmup_ms", 50.0)),
                               round_ms=float(job.get("rep_ms", 500.0)) / 5,
                               settle_ms=float(job.get("settle_ms", SETTLE_MS)))
    t = times["plan"]
    return {**out, "ms": t.ms, "p20_ms": t.p20, "p80_ms": t.p80, "calls": t.calls, "timing": way}


@functools.lru_cache(maxsize=None)
def _host_versions() -> dict:
    """What a worker runs that does not change while it runs (asks no CUDA: servers call it before forking)."""
    driver = ""
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=30, check=True).stdout.split("\n")[0]
    except (OSError, subprocess.SubprocessError):
        pass
    return {"pt_tvm": __version__, "tilelang": tilelang.__version__, "torch": torch.__version__,
            "cuda": torch.version.cuda, "driver": driver.strip(), "python": platform.python_version(),
            "host": socket.gethostname(), "visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES", "")}


def _worker_versions() -> dict:
    return {**_host_versions(), "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"}


_OUTLIER = 4.0  # plans of one kernel agree to within ~1.1x in error; a race reads stale data (30x, chunk_scan)


def _error_outliers(checked: list[tuple[Candidate, float]]) -> tuple[list, list]:
    """(kept, suspect): plans whose error is over ``_OUTLIER`` times the smallest error among the checked
    ones. Every plan computes the same function in the same precision, so a plan far less accurate than
    its siblings is reading something it should not, even when it passes the tolerance."""
    if len(checked) < 2:
        return checked, []
    floor = max(min(err for _, err in checked), 1e-6)
    return ([(c, e) for c, e in checked if e <= _OUTLIER * floor],
            [(c, e) for c, e in checked if e > _OUTLIER * floor])


def report(tr: TuneResult) -> str:
    """A table of predicted vs measured time for each measured candidate."""
    flops = tr.search.flops or 0.0
    lines = ["measured refinement (predicted -> measured):"]
    for m in sorted(tr.measured, key=lambda m: (m.ms is None, m.ms or 0)):
        pred = m.candidate.seconds * 1e3
        got = f"{m.ms:.3f} ms ({flops / (m.ms * 1e-3) / 1e12:.0f} TFLOP/s)" if m.valid else m.error[:80]
        mark = "*" if m is tr.best else " "
        lines.append(f" {mark} {pred:.3f} ms -> {got}  {m.candidate.note} tile={dict(m.candidate.plan.tile)}")
    return "\n".join(lines)
