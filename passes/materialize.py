"""A plan's ``WSSchedule`` materialized by pt-tvm, for the rewrites TileLang's schedule cannot say.

TileLang lowers a ``WSSchedule`` in ``MaterializeWSSchedule``, among its early passes. A plan whose emission edits
the materialized kernel (gemms carried into the next step, :mod:`pt_tvm.passes.carry`; 2-CTA clusters,
:mod:`pt_tvm.passes.multicast`) runs that pass here first, after the passes it needs (target, launch, TMA-copy
annotation, and let inlining, which TileLang runs only when a pass config forces it); TileLang then runs its other
early passes on the result. A waiting 4096^3 plan materialized this way lowers to the same CUDA as by TileLang
alone.
"""
from __future__ import annotations

from typing import Any, Mapping

import tilelang
from tilelang import tvm
from tvm import tirx

__all__ = ["materialized"]


def materialized(func: tirx.PrimFunc, target: Any, configs: Mapping[str, Any]) -> tirx.PrimFunc:
    """``func`` (carrying a ``WSSchedule``) with its schedule materialized for ``target`` under pass ``configs``."""
    mod = tvm.IRModule({"main": func})
    with target, tvm.transform.PassContext(config=dict(configs)):
        for p in (tirx.transform.BindTarget(target),
                  tilelang.transform.MaterializeKernelLaunch(lower_thread_binding=True, default_threads=128),
                  tilelang.cuda.transform.AnnotateDeviceBoundTmaCopies(), tilelang.transform.LetInline(),
                  tilelang.cuda.transform.MaterializeWSSchedule()):
            mod = p(mod)
    return mod["main"]
