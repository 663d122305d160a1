"""Every system timed two ways in one run: calls queued back to back, and replayed from a captured CUDA graph.

Queued calls (:class:`pt_tvm.measure.Queued`) are what a Python caller gets:
where the host cannot launch as fast as the GPU runs, its launch path shows.
A CUDA graph replays the same calls with the host out of the way, as serving
stacks run their kernels; it is the headline timing. A system whose calls
cannot be captured keeps its queued timing and says why (``graph_error``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import torch

from pt_tvm.measure import GRAPH, QUEUED, Graphed, Queued, Timing, capture, time_samplers

__all__ = ["TwoWays", "time_two_ways"]


@dataclass(frozen=True)
class TwoWays:
    """One system's timings; ``graph`` is None when its calls could not be captured or timed (``graph_error``),
    ``queued`` when its queued calls failed (``queued_error``: out of memory beside the others' graphs)."""

    queued: Timing | None
    graph: Timing | None = None
    graph_error: str = ""
    queued_error: str = ""

    @property
    def headline(self) -> tuple[str, Timing] | None:
        """(how, timing) the headline uses: the CUDA graph's, else the queued calls', else None."""
        if self.graph is not None:
            return GRAPH, self.graph
        return None if self.queued is None else (QUEUED, self.queued)


def time_two_ways(fns: Mapping[str, Callable[..., Any]], sets: Sequence[tuple], *, rounds: int = 5,
                  warmup_ms: float = 100.0, round_ms: float = 100.0, settle_ms: float = 0.0,
                  describe: Callable[[BaseException], str] = repr) -> dict[str, TwoWays]:
    """Queued and CUDA-graph timings of every callable, all interleaved in the same rounds (half of
    ``round_ms`` each way, each after ``settle_ms`` untimed: :func:`pt_tvm.measure.time_samplers`); a failed
    capture or timing is described by ``describe`` and leaves the other way, and the other systems are timed
    on."""
    graphs: dict[str, Graphed] = {}
    errors: dict[tuple[str, str], str] = {}
    for name, fn in fns.items():
        try:
            graphs[name] = capture(fn, sets)
        except Exception as e:  # a system that cannot be captured is timed queued only, and says why
            errors[(name, GRAPH)] = describe(e)
            torch.cuda.synchronize()  # a capture that broke the CUDA context stops the run here, loudly
    samplers = {(name, QUEUED): Queued(fn, sets) for name, fn in fns.items()}
    samplers.update({(name, GRAPH): g for name, g in graphs.items()})

    def failed(key: tuple[str, str], e: Exception) -> None:
        errors[key] = f"timing: {describe(e)}"

    timings = time_samplers(samplers, rounds=rounds, warmup_ms=warmup_ms, round_ms=round_ms / 2, on_error=failed,
                            settle_ms=settle_ms)
    del graphs, samplers
    return {name: TwoWays(timings.get((name, QUEUED)), timings.get((name, GRAPH)), errors.get((name, GRAPH), ""),
                          errors.get((name, QUEUED), ""))
            for name in fns}
