"""pt-tvm: software-defined pipelining (PipeThreader, OSDI'25) for TileLang and its TVM.

The flow: a TileLang PrimFunc -> :func:`extract` (its sTask-graph) -> a
hardware model from :mod:`pt_tvm.hw` -> a searched execution plan -> the
plan written into the PrimFunc -> TileLang's own codegen.
"""
from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["__version__", "extract", "schedule", "schedule_template", "lower", "compile"]


def extract(prim_func: Any, target: Any = None):
    """The sTask-graph of a TileLang PrimFunc for ``target`` (TVM Target, target dict or chip name).

    See :func:`pt_tvm.passes.extract_stask_graph`.
    """
    from .passes import extract_stask_graph

    return extract_stask_graph(prim_func, target)


_LAZY_MODULES = ("passes", "templates", "search", "cost", "plan", "tune", "cache", "propagate", "compiler")


def __getattr__(name: str) -> Any:
    """The flow functions and passes import TileLang; load them on first use so ``import pt_tvm`` stays light."""
    import importlib

    if name in ("schedule", "schedule_template", "lower", "compile"):
        return getattr(importlib.import_module(".compiler", __name__), name)
    if name in _LAZY_MODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'pt_tvm' has no attribute {name!r}")
