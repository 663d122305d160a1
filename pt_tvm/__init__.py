"""pt-tvm: software-defined pipelining (PipeThreader, OSDI'25) for TileLang and its TVM.

The flow: a TileLang PrimFunc -> :func:`extract` (its sTask-graph) -> a
hardware model from :mod:`pt_tvm.hw` -> a searched execution plan -> the
plan written into the PrimFunc -> TileLang's own codegen.
"""
from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["__version__", "extract", "schedule", "schedule_template", "lower", "compile"]

_FLOW = ("extract", "schedule", "schedule_template", "lower", "compile")


def __getattr__(name: str) -> Any:
    """The flow functions of :mod:`pt_tvm.compiler`, loaded on first use: they import TileLang (seconds),
    which ``import pt_tvm`` alone (for the version, the chip models) need not."""
    if name in _FLOW:
        from . import compiler

        return getattr(compiler, name)
    raise AttributeError(f"module 'pt_tvm' has no attribute {name!r}")
