"""The user-facing flow: extract -> search (or a given plan) -> apply -> TileLang.

``schedule`` finds a plan for a PrimFunc; ``schedule_template`` searches a
template's tiles too (both levels of :mod:`pt_tvm.search`); ``lower`` and
``compile`` write the plan in and hand the result to ``tilelang.lower`` /
``tilelang.compile``. Plans can be cached on disk by kernel structure, shapes,
chip and versions. A target without a hardware model falls back to TileLang's
own schedule with a warning.
"""
from __future__ import annotations

import math
import os
import shutil
import warnings
from dataclasses import replace
from typing import Any, Callable, Mapping, Sequence

import tilelang
from tilelang import tvm

from . import hw, templates
from .cache import PlanCache
from .cost import Calibration, load_calibration
from .errors import FallbackWarning, PtTvmError
from .graph import STaskGraph
from .passes import apply_plan, check_emitted, extract_stask_graph, graph_for, is_planned
from .passes import pass_configs as planned_configs
from .plan import ExecutionPlan
from .search import Candidate, SearchResult, SearchSpace, holds_walked, rank_key, schedule_graph, search_tiles

__all__ = ["extract", "schedule", "schedule_template", "planned_func", "lower", "lower_planned", "compile",
           "FallbackWarning", "ToolchainError", "require_toolchain"]


def extract(prim_func: Any, target: Any = None, hints: Mapping[str, int] | None = None) -> STaskGraph:
    """The sTask-graph of a TileLang PrimFunc for ``target`` (chip, chip name, TVM Target or target dict); symbolic
    sizes priced at ``hints`` (``{"M": 4096}``), else at :data:`pt_tvm.passes.SYMBOLIC_HINT` with a warning."""
    return extract_stask_graph(prim_func, target, hints)


def _vdevice(target: Any) -> hw.VDevice | None:
    try:
        return hw.for_target(target)
    except hw.HardwareError as e:
        warnings.warn(f"{e}; falling back to TileLang's own schedule", FallbackWarning, stacklevel=3)
        return None


def _calibration(vdev: hw.VDevice, calibration: Calibration | None) -> Calibration | None:
    return calibration if calibration is not None else load_calibration(vdev.name)


def schedule(func: Any, target: Any, *, space: SearchSpace = SearchSpace(), seed: int = 0,
             calibration: Calibration | None = None, cache: PlanCache | None = None,
             hints: Mapping[str, int] | None = None) -> SearchResult:
    """Search a plan for one PrimFunc (its tile is fixed; the intra-EU level only).

    ``cache`` is a :class:`pt_tvm.cache.PlanCache` (or None): a hit skips the search
    and returns a result holding the cached plan, re-verified and re-priced. Symbolic sizes
    (``T.dynamic``) are priced at ``hints`` (``{"M": 4096}``), else at
    :data:`pt_tvm.passes.SYMBOLIC_HINT` with a :class:`~pt_tvm.errors.SymbolicSizeWarning`;
    ``explain()`` says which.
    """
    vdev = hw.for_target(target)
    return schedule_graph(graph_for(func, vdev, hints), vdev, space=space, seed=seed,
                          calibration=_calibration(vdev, calibration), cache=cache)


def schedule_template(name: str, target: Any, *, params: Mapping[str, Any] | None = None,
                      tiles: Sequence[Mapping[str, Any]] | None = None, space: SearchSpace = SearchSpace(),
                      seed: int = 0, calibration: Calibration | None = None, jobs: int | None = None
                      ) -> tuple[SearchResult, dict, Callable[[Candidate | None], Any]]:
    """Two-level search for a built-in template: every candidate tile (inter-EU), then its plans (intra-EU),
    the tiles searched in ``jobs`` worker processes (:func:`pt_tvm.search.search_jobs`).

    Tile parameters among ``params`` (``block_M=64``) pin that dimension of the tile search; the shape is
    checked against the tiles the search may choose. Returns ``(result, problem, build)`` where
    ``build(candidate=None)`` returns the PrimFunc of a candidate (default: the winner) with its plan applied.
    """
    template = templates.get(name)
    problem, pins = template.resolve_problem(**dict(params or {}))
    vdev = hw.for_target(target)
    cands = [dict(t) for t in tiles] if tiles is not None else template.tile_candidates(problem, vdev.features, pins)
    funcs: dict[int, tuple[STaskGraph, Any]] = {}  # id(graph) -> (graph, its PrimFunc), the graph kept alive

    def graph_of(tile: Mapping[str, Any]) -> STaskGraph:
        func = template.build(**problem, **tile)
        graph = extract_stask_graph(func, vdev)
        funcs[id(graph)] = (graph, func)
        return graph

    result = search_tiles(cands, graph_of, vdev, space=space, seed=seed, flops=template.flops(problem),
                          calibration=_calibration(vdev, calibration), jobs=jobs, walked=template.walked)
    result = _preferring(_walked(result, template.walked), template.prefer)
    if template.extra_seconds is not None or template.padding_scale is not None:
        result = _adjusted(result, template, problem, vdev)

    def build(candidate: Candidate | None = None) -> Any:
        c = candidate or result.best
        return apply_plan(funcs[id(c.graph)][1], c.plan, vdev, c.graph)

    return result, problem, build


# How far above the tile without them the cost model may price a tile with a template's preferred values and still
# have it taken instead: it priced FlashAttention's key tail step 1.02-1.07x the whole masked block's kernel, which
# it ran 0.96-0.98x the time of on six shapes of one H200 (benchmarks/results/2026-12-01-h200-key-tail)
PREFER_TOLERANCE = 0.10


def _walked(result: SearchResult, walked: Mapping[str, Any]) -> SearchResult:
    """``result`` without the launched plans of tiles holding a template's ``walked`` values (each its twin's
    launched plan again)."""
    if not walked:
        return result
    kept = [c for c in result.ranked if c.plan.persistent or not holds_walked(c.plan.tile, walked)]
    return replace(result, best=kept[0], ranked=tuple(kept))


def _preferring(result: SearchResult, prefer: Mapping[str, Any]) -> SearchResult:
    """``result`` under a template's ``prefer``: a tile with the preferred values whose best pipelined plan (two
    stages or more: what was measured; one stage leaves every load exposed) the model prices within
    :data:`PREFER_TOLERANCE` of its twin without them takes the twin's place in the ranking, at the twin's price
    (its plans' own estimates kept); other tiles rank by their prices as ever."""
    if not prefer:
        return result

    def key(tile: Mapping[str, Any]) -> tuple:
        return tuple(sorted(tile.items()))

    best: dict[tuple, float] = {}
    pipelined: dict[tuple, float] = {}  # the same over plans of two or more stages
    for c in result.ranked:
        k = key(c.plan.tile)
        best[k] = min(c.seconds, best.get(k, math.inf))
        if c.plan.num_stages >= 2:
            pipelined[k] = min(c.seconds, pipelined.get(k, math.inf))
    taken: dict[tuple, float] = {}  # a preferred tile's key -> its twins' best price
    twins = set()
    for twin, price in best.items():
        preferred = key({**dict(twin), **prefer})
        if preferred != twin and pipelined.get(preferred, math.inf) <= price * (1 + PREFER_TOLERANCE):
            taken[preferred] = min(price, taken.get(preferred, math.inf))
            twins.add(twin)
    effective = {k: price / pipelined[k] for k, price in taken.items()}  # the factor on a taken tile's prices
    kept = [c for c in result.ranked if key(c.plan.tile) not in twins
            and (c.plan.num_stages >= 2 or key(c.plan.tile) not in taken)]
    priced = {id(c): c.seconds * effective.get(key(c.plan.tile), 1.0) for c in kept}
    fastest = min(priced.values())
    order = sorted(kept, key=lambda c: rank_key(replace(c.estimate, seconds=priced[id(c)]), c.plan, c.note, fastest))
    return replace(result, best=order[0], ranked=tuple(order))


def _adjusted(result: SearchResult, template: templates.Template, problem: Mapping[str, Any],
              vdev: hw.VDevice) -> SearchResult:
    """``result`` with each plan's price times the template's padding scale at its tile, plus the seconds of the
    template's other kernels there, re-ranked by price, the shallower pipeline first among equal prices: not
    :func:`pt_tvm.search.rank_key`'s tie rule, whose deeper pipeline where DRAM binds moved the decoding picks of
    six configs one stage deeper (2 to 3), which measured 4-6% slower at batch 1 x 16k keys on an H200
    (2026-11-26 and 2026-11-29, docs/NOTES-parity.md)."""
    def adjusted(c: Candidate) -> Candidate:
        tile = c.plan.tile
        scale = template.padding_scale(problem, tile) if template.padding_scale else 1.0
        extra = template.extra_seconds(problem, tile, vdev) if template.extra_seconds else 0.0
        return replace(c, estimate=replace(c.estimate, seconds=c.seconds * scale + extra))

    ranked = sorted(map(adjusted, result.ranked), key=lambda c: (c.seconds, c.plan.num_stages, c.note))
    return replace(result, best=ranked[0], ranked=tuple(ranked))


def planned_func(name: str, problem: Mapping[str, Any], candidate: Candidate, target: Any) -> Any:
    """The PrimFunc of built-in template ``name`` at ``problem`` and the candidate's tile, with its plan applied
    (what ``schedule_template``'s ``build`` returns, for a candidate kept from an earlier search)."""
    func = templates.get(name).build(**problem, **candidate.plan.tile)
    return apply_plan(func, candidate.plan, target, candidate.graph)


def _planned(func: Any, vdev: hw.VDevice, plan: ExecutionPlan | None, **search_kw: Any) -> Any:
    """``func`` with ``plan`` (searched when None, unless ``func`` already carries one) applied."""
    if plan is None and is_planned(func):
        return func
    if plan is None:
        best = schedule(func, vdev, **search_kw).best
        return apply_plan(func, best.plan, vdev, best.graph)
    return apply_plan(func, plan, vdev, graph_for(func, vdev, search_kw.get("hints")))


def lower(func: Any, target: Any, plan: ExecutionPlan | None = None, *,
          pass_configs: Mapping[str, Any] | None = None, **search_kw: Any) -> Any:
    """``tilelang.lower`` of ``func`` with ``plan`` (searched when None) applied; works without a GPU."""
    vdev = _vdevice(target)
    tvm_target = vdev.tvm_target() if vdev else target
    if not isinstance(tvm_target, tvm.target.Target):  # a target dict of a chip pt-tvm has no model for
        tvm_target = tvm.target.Target(tvm_target)
    if vdev is not None:
        func = _planned(func, vdev, plan, **search_kw)
    return lower_planned(func, tvm_target, pass_configs)


def lower_planned(func: Any, target: Any, pass_configs: Mapping[str, Any] | None = None) -> Any:
    """``tilelang.lower`` of a PrimFunc that already carries its plan (or TileLang's own schedule)."""
    with tilelang.transform.PassContext(config=planned_configs(func, pass_configs)), target:
        artifact = tilelang.lower(func, target=target)
    check_emitted(func, artifact.kernel_source)
    return artifact


class ToolchainError(PtTvmError, RuntimeError):
    """The machine lacks the compiler a kernel for the target needs (nvcc for CUDA, hipcc for ROCm)."""


def require_toolchain(target: Any) -> str | None:
    """The path of the device compiler a kernel for ``target`` needs (nvcc for CUDA, hipcc for ROCm: on PATH, else
    under CUDA_HOME or ROCM_PATH), None for a target that needs none; fails in one line, before TileLang tries,
    where the machine lacks it."""
    kind = str(getattr(getattr(target, "kind", None), "name", "")) or dict(target).get("kind", "")
    tool = {"cuda": "nvcc", "hip": "hipcc"}.get(kind)
    if tool is None:
        return None
    home = tilelang.env.CUDA_HOME if kind == "cuda" else os.environ.get("ROCM_PATH", "/opt/rocm")
    found = shutil.which(tool) or (os.path.join(home, "bin", tool) if home else None)
    if found is None or not os.path.exists(found):
        raise ToolchainError(f"compiling a {kind} kernel needs {tool}, which this machine lacks; "
                             f"pt_tvm.lower gives the kernel source without it")
    return found


def compile(func: Any, target: Any = None, plan: ExecutionPlan | None = None, *,
            out_idx: Sequence[int] | int | None = None, pass_configs: Mapping[str, Any] | None = None,
            **search_kw: Any) -> Any:
    """``tilelang.compile`` of ``func`` with ``plan`` (searched when None) applied.

    ``target`` defaults to the current ``with Target``; a target pt-tvm has no model
    for compiles ``func`` unchanged (TileLang's own schedule) with a FallbackWarning. The emitted
    CUDA is checked against the plan (:func:`pt_tvm.passes.check_emitted`).
    """
    if target is None:
        target = tvm.target.Target.current(allow_none=False)
    vdev = _vdevice(target)
    tvm_target = vdev.tvm_target() if vdev else tvm.target.Target(target) if isinstance(target, Mapping) else target
    require_toolchain(tvm_target)
    if vdev is not None:
        func = _planned(func, vdev, plan, **search_kw)
    kernel = tilelang.compile(func, out_idx=list(out_idx) if isinstance(out_idx, Sequence) else out_idx,
                              target=tvm_target,
                              pass_configs=planned_configs(func, pass_configs))
    check_emitted(func, kernel.get_kernel_source())
    return kernel
