"""The user-facing flow: extract -> search (or a given plan) -> apply -> TileLang.

``schedule`` finds a plan for a PrimFunc; ``schedule_template`` adds the
inter-EU level over a template's tile candidates; ``lower`` and ``compile``
write the plan in and hand the result to ``tilelang.lower`` /
``tilelang.compile``. Plans are cached on disk by kernel structure, shapes,
target and versions. A target without a hardware model falls back to
TileLang's own schedule with a warning.
"""
from __future__ import annotations

import warnings
from typing import Any, Mapping, Sequence

from . import hw
from .cost import Calibration, load_calibration
from .plan import ExecutionPlan
from .search import SearchResult, SearchSpace, search

__all__ = ["schedule", "schedule_template", "planned_func", "lower", "lower_planned", "compile", "FallbackWarning"]


class FallbackWarning(UserWarning):
    """pt-tvm has no model for the target and leaves scheduling to TileLang."""


def _vdevice(target: Any) -> hw.VDevice | None:
    try:
        return hw.for_target(target)
    except hw.HardwareError as e:
        warnings.warn(f"{e}; falling back to TileLang's own schedule", FallbackWarning, stacklevel=3)
        return None


def _calibration(vdev: hw.VDevice, calibration: Calibration | None) -> Calibration | None:
    return calibration if calibration is not None else load_calibration(vdev.name)


def schedule(func: Any, target: Any, *, space: SearchSpace = SearchSpace(), seed: int = 0,
             calibration: Calibration | None = None, cache: Any = None) -> SearchResult:
    """Search a plan for one PrimFunc (its tile is fixed; the intra-EU level only).

    ``cache`` is a :class:`pt_tvm.cache.PlanCache` (or None): a hit skips the search
    and returns a result holding the cached plan, re-verified and re-priced.
    """
    from .cache import plan_key
    from .cost import estimate
    from .passes import extract_stask_graph
    from .search import Candidate

    vdev = hw.for_target(target)
    graph = extract_stask_graph(func, vdev)
    cal = _calibration(vdev, calibration)
    key = plan_key(graph, vdev.name, {"space": space, "seed": seed, "calibration": cal}) if cache is not None else None
    hit = cache.get(key) if key is not None else None
    if hit is not None and not hit.violations(graph, vdev):  # a stale entry is searched again and replaced
        best = Candidate(hit, estimate(hit, graph, vdev, cal), graph, "from the plan cache")
        return SearchResult(best, (best,), 0, {}, 0.0)
    result = search([graph], vdev, space=space, seed=seed, calibration=cal)
    if key is not None:
        cache.put(key, result.best.plan, {"note": result.best.note})
    return result


def _tile_candidates(template: Any, problem: Mapping[str, Any], vdev: hw.VDevice,
                     tiles: Sequence[Mapping[str, Any]] | None) -> list[dict]:
    """The template's tile space, minus combinations it rejects; threads only matter without warp specialization."""
    import itertools

    from .templates import TemplateError

    if tiles is not None:
        return [dict(t) for t in tiles]
    space = dict(template.tile_space)
    ws = "warp_specialization" in vdev.features and "threads" in space
    out, seen = [], set()
    for values in itertools.product(*space.values()):
        tile = dict(zip(space, values))
        key = tuple((k, v) for k, v in tile.items() if not (ws and k == "threads"))
        if key in seen:
            continue  # warp-specialized plans set the warps themselves: one threads value per tile suffices
        try:
            template.resolve(**problem, **tile)
        except TemplateError:
            continue
        seen.add(key)
        out.append(tile)
    return out


def schedule_template(name: str, target: Any, *, params: Mapping[str, Any] | None = None,
                      tiles: Sequence[Mapping[str, Any]] | None = None, space: SearchSpace = SearchSpace(),
                      seed: int = 0, calibration: Calibration | None = None):
    """Two-level search for a built-in template: every candidate tile (inter-EU), then its plans (intra-EU).

    Returns ``(result, problem, build)`` where ``build(candidate=None)`` returns the
    PrimFunc of a candidate (default: the winner) with its plan applied.
    """
    from . import templates
    from .passes import apply_plan, extract_stask_graph

    template = templates.get(name)
    problem, _ = template.resolve(**dict(params or {}))
    vdev = hw.for_target(target)
    cands = _tile_candidates(template, problem, vdev, tiles)
    funcs, graphs = [], []
    for tile in cands:
        func = template.build(**problem, **tile)
        funcs.append(func)
        graphs.append(extract_stask_graph(func, vdev))
    result = search(graphs, vdev, space=space, seed=seed, calibration=_calibration(vdev, calibration),
                    tiles=cands, flops=template.flops(problem))
    func_of = {id(g): f for g, f in zip(graphs, funcs)}

    def build(candidate: Any = None) -> Any:
        c = candidate or result.best
        return apply_plan(func_of[id(c.graph)], c.plan, c.graph)

    return result, problem, build


def planned_func(name: str, problem: Mapping[str, Any], candidate: Any) -> Any:
    """The PrimFunc of built-in template ``name`` at ``problem`` and the candidate's tile, with its plan applied
    (what ``schedule_template``'s ``build`` returns, for a candidate kept from an earlier search)."""
    from . import templates
    from .passes import apply_plan

    func = templates.get(name).build(**problem, **candidate.plan.tile)
    return apply_plan(func, candidate.plan, candidate.graph)


def _plan_for(func: Any, vdev: hw.VDevice, plan: ExecutionPlan | None, **search_kw: Any) -> ExecutionPlan:
    return plan if plan is not None else schedule(func, vdev, **search_kw).best.plan


def lower(func: Any, target: Any, plan: ExecutionPlan | None = None, *,
          pass_configs: Mapping[str, Any] | None = None, **search_kw: Any) -> Any:
    """``tilelang.lower`` of ``func`` with ``plan`` (searched when None) applied; works without a GPU."""
    from tilelang import tvm

    from .passes import apply_plan

    vdev = _vdevice(target)
    tvm_target = vdev.tvm_target() if vdev else target
    if not isinstance(tvm_target, tvm.target.Target):  # a target dict of a chip pt-tvm has no model for
        tvm_target = tvm.target.Target(tvm_target)
    if vdev is not None:
        func = apply_plan(func, _plan_for(func, vdev, plan, **search_kw))
    return lower_planned(func, tvm_target, pass_configs)


def lower_planned(func: Any, target: Any, pass_configs: Mapping[str, Any] | None = None) -> Any:
    """``tilelang.lower`` of a PrimFunc that already carries its plan (or TileLang's own schedule)."""
    import tilelang

    from .passes import check_emitted
    from .passes import pass_configs as planned_configs

    with tilelang.transform.PassContext(config=planned_configs(func, pass_configs)), target:
        artifact = tilelang.lower(func, target=target)
    check_emitted(func, artifact.kernel_source)
    return artifact


def compile(func: Any, target: Any = None, plan: ExecutionPlan | None = None, *,
            out_idx: Sequence[int] | int | None = None, pass_configs: Mapping[str, Any] | None = None,
            **search_kw: Any) -> Any:
    """``tilelang.compile`` of ``func`` with ``plan`` (searched when None) applied.

    ``target`` defaults to the current ``with Target``; a target pt-tvm has no model
    for compiles ``func`` unchanged (TileLang's own schedule) with a FallbackWarning. The emitted
    CUDA is checked against the plan (:func:`pt_tvm.passes.check_emitted`).
    """
    import tilelang

    from .passes import apply_plan, check_emitted
    from .passes import pass_configs as planned_configs

    if target is None:
        from tilelang import tvm

        target = tvm.target.Target.current(allow_none=False)
    vdev = _vdevice(target)
    if vdev is not None:
        func = apply_plan(func, _plan_for(func, vdev, plan, **search_kw))
    kernel = tilelang.compile(func, out_idx=list(out_idx) if isinstance(out_idx, Sequence) else out_idx,
                              target=vdev.tvm_target() if vdev else target,
                              pass_configs=planned_configs(func, pass_configs))
    check_emitted(func, kernel.get_kernel_source())
    return kernel
