"""pt-tvm's TIR passes: sTask-graph extraction and plan emission, usable in a tvm.transform.Sequential."""
from .apply import (
    PLAN_ATTR,
    ApplyPipelineSchedule,
    ScheduleMismatch,
    apply_plan,
    check_emitted,
    is_planned,
    pass_configs,
)
from .extract import (
    GRAPH_ATTR,
    HINTS_ATTR,
    SYMBOLIC_HINT,
    ExtractSTaskGraph,
    extract_stask_graph,
    graph_for,
    graph_of,
)
from .ir import ExtractionError, launch_extents, launch_grid, symbolic_sizes
from .pipethreader import PipeThreader

__all__ = ["ExtractSTaskGraph", "extract_stask_graph", "graph_of", "graph_for", "GRAPH_ATTR", "ExtractionError",
           "HINTS_ATTR", "SYMBOLIC_HINT", "ApplyPipelineSchedule", "apply_plan", "pass_configs", "check_emitted",
           "ScheduleMismatch", "PipeThreader", "is_planned", "PLAN_ATTR", "launch_extents",
           "launch_grid", "symbolic_sizes"]
