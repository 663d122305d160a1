"""PipeThreader: extract + search + apply as one pass, for a user's own pass sequence."""
from __future__ import annotations

import warnings
from typing import Any, Mapping

from tilelang import tvm
from tvm import tirx

from pt_tvm import hw
from pt_tvm.cache import PlanCache
from pt_tvm.cost import load_calibration
from pt_tvm.errors import FallbackWarning
from pt_tvm.search import SearchSpace, schedule_graph

from .apply import apply_plan, is_planned
from .extract import graph_for
from .ir import ExtractionError

__all__ = ["PipeThreader"]


def PipeThreader(target: Any = None, *, space: SearchSpace = SearchSpace(), seed: int = 0,
                 cache: PlanCache | None = None, hints: Mapping[str, int] | None = None) -> tvm.transform.Pass:
    """Schedule every PrimFunc of the module: extract its sTask-graph (or read the one
    :func:`~pt_tvm.passes.ExtractSTaskGraph` attached), search a plan, write it in.

    A function pt-tvm cannot schedule (no pipelined loop, a tile op it does not model) is left
    unchanged with a :class:`~pt_tvm.errors.FallbackWarning` naming it, as is every function for a
    target pt-tvm has no model of; a function that already carries a plan is left as it is (the pass
    runs once per function, however often a pipeline applies it). Lower or compile the result with
    :func:`pt_tvm.passes.pass_configs` of each function: some plans need TileLang pass configs (a
    software-pipelined Hopper plan turns warp specialization off).

    Parameters
    ----------
    target : Target, dict, str or VDevice, optional
        Defaults to the current ``with Target``.
    space : pt_tvm.search.SearchSpace, optional
    seed : int
        Search seed (the search is deterministic for a given seed).
    cache : pt_tvm.cache.PlanCache, optional
        Reuse plans found earlier for the same kernel structure, shapes and chip.
    hints : mapping, optional
        Values to price symbolic sizes at (``{"M": 4096}``; see :func:`~pt_tvm.passes.extract_stask_graph`).
    """

    def transform(func: tirx.PrimFunc, mod: Any, ctx: Any) -> tirx.PrimFunc:
        if is_planned(func):
            return func
        tgt = target if target is not None else tvm.target.Target.current(allow_none=True)
        if tgt is None:
            raise hw.HardwareError("PipeThreader needs a target: pass target=... or run inside `with Target(...)`")
        try:
            vdev = hw.for_target(tgt)
        except hw.HardwareError as e:
            warnings.warn(f"{e}; PipeThreader leaves the schedule to TileLang", FallbackWarning, stacklevel=2)
            return func
        try:
            graph = graph_for(func, vdev, hints)
        except ExtractionError as e:
            warnings.warn(f"PipeThreader leaves this function's schedule to TileLang: {e}", FallbackWarning,
                          stacklevel=2)
            return func
        result = schedule_graph(graph, vdev, space=space, seed=seed, calibration=load_calibration(vdev.name),
                                cache=cache)
        return apply_plan(func, result.best.plan, vdev, graph)

    return tirx.transform.prim_func_pass(transform, opt_level=0, name="pt.PipeThreader")
