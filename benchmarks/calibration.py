"""Cost-model calibration from a benchmark run: the pt-tvm candidates it measured become fit samples.

``python -m benchmarks calibrate RUN.json --target h200`` fits per-sEU occupancy scales and a
per-iteration overhead (:func:`pt_tvm.cost.calibrate`) to those candidates and writes the fit
where the search reads it (the pt-tvm cache dir, or ``--out``).
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import warnings
from typing import Any, Mapping

from pt_tvm import cost, hw, templates
from pt_tvm.graph import STaskGraph
from pt_tvm.passes import extract_stask_graph
from pt_tvm.plan import ExecutionPlan
from pt_tvm.verify import violations

from .runfile import read_json

__all__ = ["samples_from_run", "with_graphs", "StalePlanWarning", "cmd_calibrate"]


def samples_from_run(run: Mapping[str, Any], target: Any) -> list[tuple]:
    """(plan, graph, seconds) calibration samples from a benchmark run's measured pt-tvm candidates. A row that
    carries the sTask-graphs of the kernels it measured (``graphs``, by tile: :func:`with_graphs`) is priced on
    those, else on the graphs the current templates give; a recorded plan that names sTasks those graphs lack,
    or orders them against their dependences (one recorded before its template changed), is left out with a
    :class:`StalePlanWarning`."""
    vdev = hw.for_target(target)
    out = []
    for row in run["rows"]:
        frozen, stale = row.get("graphs", {}), 0
        for c in row.get("candidates", ()):
            if c.get("ms") is None or "plan" not in c:
                continue
            key, plan = _tile_key(c["tile"]), ExecutionPlan.from_dict(c["plan"])
            if key in frozen:
                if not isinstance(frozen[key], STaskGraph):  # read once per tile, its candidates share it
                    frozen = {**frozen, key: STaskGraph.from_dict(frozen[key])}
                graph = frozen[key]
            else:
                graph = extract_stask_graph(_kernel(row["kernel"], _items(row["config"]), _items(c["tile"])), vdev)
                if any(v.rule in _STRUCTURAL for v in violations(plan, graph, vdev)):
                    stale += 1
                    continue
            out.append((plan, graph, c["ms"] * 1e-3))
        if stale:
            warnings.warn(f"{stale} measured plan(s) of {row['kernel']} {dict(row['config'])} left out: they do not "
                          f"fit the sTask-graph its template gives now (recorded before the template changed; a "
                          f"row that carries its kernels' graphs stays priceable: benchmarks.calibration."
                          f"with_graphs)", StalePlanWarning, stacklevel=2)
    return out


class StalePlanWarning(UserWarning):
    """Recorded plans left out because their template has changed since they were measured."""


_STRUCTURAL = {"coverage", "dependence", "deadlock"}  # rules under which a plan cannot be priced on a graph


def with_graphs(row: Mapping[str, Any], target: Any) -> dict:
    """``row`` carrying the sTask-graph of each measured candidate's kernel, as the templates build it now: what
    keeps a recorded row priceable once a template's statements change (run it with the templates the row
    measured)."""
    vdev = hw.for_target(target)
    tiles = {_tile_key(c["tile"]): c["tile"] for c in row.get("candidates", ()) if c.get("tile")}  # once a tile
    return {**row, "graphs": {key: extract_stask_graph(_kernel(row["kernel"], _items(row["config"]), _items(tile)),
                                                       vdev).to_dict() for key, tile in tiles.items()}}


def _tile_key(tile: Mapping[str, Any]) -> str:
    return json.dumps(dict(tile), sort_keys=True)


def _items(d: Mapping[str, Any]) -> tuple:
    """``d`` as a hashable key for :func:`_kernel` (a run's JSON holds lists, e.g. attention's view strides)."""
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in d.items()))


@functools.lru_cache(maxsize=1024)
def _kernel(kernel: str, config: tuple, tile: tuple) -> Any:
    """A template's PrimFunc at a config and tile, built once: building is the slow part of re-pricing a
    run, and the candidates of a row (and the rows of several runs) share tiles."""
    template = templates.get(kernel)
    problem, _ = template.resolve(**dict(config))
    return template.build(**problem, **dict(tile))


def cmd_calibrate(args: argparse.Namespace) -> int:
    """Fit the cost model to the runs' measured candidates, print the error before and after, write the fit."""
    vdev = hw.get(args.target)
    samples = []
    for path in args.runs:
        samples += samples_from_run(read_json(path), vdev)
    if not samples:
        print("benchmarks calibrate: no measured pt-tvm candidates in the given runs (run the suite with pt-tvm)")
        return 2
    before = cost.Calibration(vdev.name)
    cal = dataclasses.replace(cost.calibrate(samples, vdev), source=", ".join(os.path.basename(p) for p in args.runs))
    for name, c in (("before", before), ("after", cal)):
        err = sum(abs(cost.estimate(p, g, vdev, c).seconds / s - 1) for p, g, s in samples) / len(samples)
        print(f"{name}: mean |predicted/measured - 1| = {err:.1%} over {len(samples)} measured plans")
    print(f"per-sEU occupancy scales {dict(cal.scale)}, overhead {cal.overhead} cycles/iteration")
    print(f"wrote {cost.save_calibration(cal, args.out)}")
    return 0
