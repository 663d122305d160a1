"""The errors pt-tvm raises for bad input, gathered so the CLI can report them in one line."""
from __future__ import annotations

from .graph import GraphError
from .hw import HardwareError
from .plan import PlanError

__all__ = ["USER_ERRORS"]


def _user_errors() -> tuple[type[Exception], ...]:
    from pt_tvm.passes import ExtractionError, ScheduleMismatch
    from pt_tvm.templates import TemplateError

    return (HardwareError, GraphError, ExtractionError, TemplateError, PlanError, ScheduleMismatch)


USER_ERRORS = _user_errors()
