"""The base of the errors pt-tvm raises on purpose: one class to catch, each subclass naming the problem."""
from __future__ import annotations

__all__ = ["PtTvmError", "FallbackWarning", "SymbolicSizeWarning", "one_line"]


class PtTvmError(Exception):
    """An error pt-tvm raises on purpose, with a message that names the problem. Subclasses for bad input
    (a chip, template, graph, plan or kernel pt-tvm cannot take) are also ``ValueError`` s."""


class FallbackWarning(UserWarning):
    """pt-tvm leaves a kernel's schedule to TileLang: no hardware model for the target, or nothing it can
    schedule in the kernel."""


class SymbolicSizeWarning(UserWarning):
    """A symbolic size (``T.dynamic``) priced at pt-tvm's default hint: the search's times are for that size,
    not the one the kernel will run at."""


def one_line(e: BaseException) -> str:
    """``Type: message`` in one line (TVM's errors carry a traceback: their last line says what happened)."""
    lines = [line.strip() for line in str(e).strip().splitlines() if line.strip()]
    last = lines[-1][:300] if lines else ""
    return last if last.startswith(type(e).__name__) else f"{type(e).__name__}: {last}"
