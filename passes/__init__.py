"""pt-tvm's TIR passes: sTask-graph extraction and plan emission, usable in a tvm.transform.Sequential."""
from .extract import (
    GRAPH_ATTR,
    HINTS_ATTR,
    SYMBOLIC_HINT,
    ExtractSTaskGraph,
    extract_stask_graph,
    graph_for,
    graph_of,
)
from .ir import ExtractionError

__all__ = ["ExtractSTaskGraph", "extract_stask_graph", "graph_of", "graph_for", "GRAPH_ATTR", "ExtractionError",
           "HINTS_ATTR", "SYMBOLIC_HINT"]
from .apply import (
    ApplyPipelineSchedule,
    ScheduleMismatch,
    apply_plan,
    check_emitted,
    pass_configs,
)

__all__ += ["ApplyPipelineSchedule", "apply_plan", "pass_configs", "check_emitted", "ScheduleMismatch"]
from .pipethreader import PipeThreader

__all__ += ["PipeThreader"]
