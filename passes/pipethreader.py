"""PipeThreader: extract + search + apply as one pass, for a user's own pass sequence."""
from __future__ import annotations

import warnings
from typing import Any

from tilelang import tvm
from tvm import tirx

from pt_tvm import hw

from .apply import apply_plan
from .extract import extract_stask_graph

__all__ = ["PipeThreader"]


def PipeThreader(target: Any = None, *, space: Any = None, seed: int = 0, cache: Any = None) -> tvm.transform.Pass:
    """Schedule every PrimFunc of the module: extract its sTask-graph, search a plan, write it in.

    Lower or compile the result with :func:`pt_tvm.passes.pass_configs` of each function: some
    plans need TileLang pass configs (a software-pipelined Hopper plan turns warp specialization off).

    Parameters
    ----------
    target : Target, dict or str, optional
        Defaults to the current ``with Target``. A target pt-tvm has no model for
        leaves the functions unchanged (TileLang's own schedule) with a warning.
    space : pt_tvm.search.SearchSpace, optional
    seed : int
        Search seed (the search is deterministic for a given seed).
    cache : pt_tvm.cache.PlanCache, optional
        Reuse plans found earlier for the same kernel structure, shapes and target.
    """
    from pt_tvm.compiler import FallbackWarning, schedule
    from pt_tvm.search import SearchSpace

    def transform(func: tirx.PrimFunc, mod: Any, ctx: Any) -> tirx.PrimFunc:
        tgt = target if target is not None else tvm.target.Target.current(allow_none=True)
        try:
            vdev = hw.for_target(tgt) if tgt is not None else None
        except hw.HardwareError as e:
            warnings.warn(f"{e}; PipeThreader leaves the schedule to TileLang", FallbackWarning, stacklevel=2)
            return func
        if vdev is None:
            raise hw.HardwareError("PipeThreader needs a target: pass target=... or run inside `with Target(...)`")
        graph = extract_stask_graph(func, vdev)
        result = schedule(func, vdev, space=space or SearchSpace(), seed=seed, cache=cache)
        return apply_plan(func, result.best.plan, graph)

    return tirx.transform.prim_func_pass(transform, opt_level=0, name="pt.PipeThreader")
