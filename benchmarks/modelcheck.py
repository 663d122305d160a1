"""Does the cost model pick the winner? Its prices of the plans a run measured, against their measured times.

``python -m benchmarks model-check RUN.json [...] [--target h100] [--json]`` re-prices every measured pt-tvm
candidate with the current cost model (the sTask graph re-extracted, as :mod:`benchmarks.calibration` does)
and reports per kernel and overall: how far the model's first pick is behind the fastest measured plan
(geometric mean and worst over the configs) and the Spearman rank correlation of price and measured time
per config (mean and worst; configs with fewer than ``MIN_PLANS`` measured plans are left out and counted), and
the share of the pairs of plans measured more than ``APART`` apart that the model orders the same way: plans
within the timing's noise of each other (a GEMM plan timed twice in one suite run, 0.982-1.005x) move Spearman
without saying anything of the model. The bar of issue 15: first pick within 3% (geomean per suite), Spearman >=
0.8. ``--offered`` leaves out the candidates whose tile the current search no longer offers (:func:`offered`), so
a run recorded before a search change is judged on the plans the search would still rank.
"""
from __future__ import annotations

import argparse
import json
import math
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from pt_tvm import cost, hw, templates
from pt_tvm.search import offers_depth, rank_key

from .calibration import samples_from_run
from .report import geomean
from .roofline import chip_of_device
from .runfile import checked_run, read_json

__all__ = ["MIN_PLANS", "APART", "ConfigCheck", "Summary", "ranks", "spearman", "pairs_apart", "offered",
           "check_rows", "summarize", "load_runs", "table", "cmd_model_check"]

MIN_PLANS = 3  # fewer measured plans make a rank correlation meaningless (two plans: always +1 or -1)
APART = 0.03  # measured times further apart than this share are told apart by one timing (the pairs' column)


def ranks(values: Sequence[float]) -> np.ndarray:
    """1-based ranks of ``values``, tied values sharing the mean of the ranks they span."""
    v = np.asarray(values, dtype=float)
    order = np.argsort(v, kind="stable")
    out = np.empty(len(v))
    sorted_v = v[order]
    i = 0
    while i < len(v):
        j = i
        while j + 1 < len(v) and sorted_v[j + 1] == sorted_v[i]:
            j += 1
        out[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation: Pearson's of the (tie-averaged) ranks. 0.0 when either side is all
    ties (no order to agree with)."""
    if len(x) != len(y) or len(x) < 2:
        raise ValueError(f"spearman needs two sequences of equal length >= 2, got {len(x)} and {len(y)}")
    rx, ry = ranks(x), ranks(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    norm = math.sqrt(float(rx @ rx) * float(ry @ ry))
    return float(rx @ ry) / norm if norm else 0.0


def pairs_apart(predicted: Sequence[float], measured: Sequence[float], apart: float = APART) -> tuple[float, int]:
    """(right, pairs): over the pairs of plans whose measured times differ by more than ``apart`` (a share of the
    faster), how many the predicted times order the same way (a tie in price counts half), and how many pairs."""
    right, pairs = 0.0, 0
    for i in range(len(measured)):
        for j in range(i + 1, len(measured)):
            fast, slow = (i, j) if measured[i] < measured[j] else (j, i)
            if measured[slow] > measured[fast] * (1 + apart):
                pairs += 1
                if predicted[fast] <= predicted[slow]:
                    right += 1.0 if predicted[fast] < predicted[slow] else 0.5
    return right, pairs


@dataclass(frozen=True)
class ConfigCheck:
    """One row (a config) of a run: its measured plans, the model's first pick's measured time over the
    fastest (``gap`` 1.0: the model picked the winner), and the rank correlation (None below MIN_PLANS)."""

    kernel: str
    config: Mapping[str, Any]
    plans: int
    gap: float
    spearman: float | None
    predicted_ms: tuple[float, ...]
    measured_ms: tuple[float, ...]


@dataclass(frozen=True)
class Summary:
    """The checks of one kernel (or all): first-pick gap (geomean, worst) and Spearman (mean, worst)."""

    kernel: str
    configs: int
    gap_geomean: float
    gap_worst: float
    spearman_mean: float | None
    spearman_worst: float | None
    few_plans: int  # configs left out of the Spearman figures (fewer than MIN_PLANS measured plans)
    pairs_right: float | None = None  # share of the pairs measured more than APART apart the model orders right
    pairs: int = 0


def offered(row: Mapping[str, Any], vdev: hw.VDevice) -> dict:
    """``row`` with only the candidates whose tile the current search offers on ``vdev`` (its template's
    :meth:`tile_candidates`; e.g. no software-pipelined plans at a tile's other thread counts since e952937). A
    recorded tile is read over the template's defaults, so one recorded before a tile parameter existed (gemm's
    ``swap_ab``) is the tile it ran; so are the offered tiles, whose parameters outside the searched space (a
    pin such as chunk_scan's ``block_H``) keep their defaults."""
    template = templates.get(row["kernel"])
    problem, _ = template.resolve(**dict(row["config"]))
    tiles = [{**template.tile, **t} for t in template.tile_candidates(problem, vdev.features)]
    return {**row, "candidates": [c for c in row.get("candidates", ())
                                  if c.get("tile") and {**template.tile, **c["tile"]} in tiles]}


def check_rows(rows: Iterable[Mapping[str, Any]], vdev: hw.VDevice,
               calibration: cost.Calibration | None = None, offered_only: bool = False) -> list[ConfigCheck]:
    """A check per row with two or more measured pt-tvm candidates (with ``offered_only``, of those the current
    search offers: their tile, and their depth where the loop is L2-bound), priced on ``vdev``."""
    out = []
    for row in rows:
        samples = samples_from_run({"rows": [offered(row, vdev) if offered_only else row]}, vdev)
        if offered_only:
            samples = [(p, g, s) for p, g, s in samples if offers_depth(g, vdev, p.num_stages)]
        if len(samples) < 2:
            continue
        estimates = [cost.estimate(p, g, vdev, calibration) for p, g, _ in samples]
        predicted = tuple(e.seconds * 1e3 for e in estimates)
        measured = tuple(s * 1e3 for _, _, s in samples)
        fastest = min(e.seconds for e in estimates)  # ties as the search counts them
        pick = min(range(len(samples)), key=lambda i: rank_key(estimates[i], samples[i][0], fastest=fastest))
        rho = spearman(predicted, measured) if len(samples) >= MIN_PLANS else None
        out.append(ConfigCheck(row["kernel"], dict(row["config"]), len(samples), measured[pick] / min(measured),
                               rho, predicted, measured))
    return out


def _summary(kernel: str, checks: Sequence[ConfigCheck]) -> Summary:
    gaps = [c.gap for c in checks]
    rhos = [c.spearman for c in checks if c.spearman is not None]
    counts = [pairs_apart(c.predicted_ms, c.measured_ms) for c in checks]
    right, pairs = sum(r for r, _ in counts), sum(n for _, n in counts)
    return Summary(kernel, len(checks), geomean(gaps), max(gaps),
                   sum(rhos) / len(rhos) if rhos else None, min(rhos) if rhos else None, len(checks) - len(rhos),
                   right / pairs if pairs else None, pairs)


def summarize(checks: Sequence[ConfigCheck]) -> list[Summary]:
    """One summary per kernel (sorted by name), then ``all`` over every check."""
    kernels = sorted({c.kernel for c in checks})
    out = [_summary(k, [c for c in checks if c.kernel == k]) for k in kernels]
    return out + [_summary("all", checks)] if checks else out


def table(summaries: Sequence[Summary]) -> str:
    """A markdown table of the summaries."""
    fmt = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
    lines = ["| kernel | configs | first pick: geomean gap | worst gap | Spearman: mean | worst | "
             f"left out (< {MIN_PLANS} plans) | pairs > {APART:.0%} apart ordered right |",
             "|---|---|---|---|---|---|---|---|"]
    for s in summaries:
        pairs = "-" if s.pairs_right is None else f"{s.pairs_right:.0%} of {s.pairs}"
        lines.append(f"| {s.kernel} | {s.configs} | {s.gap_geomean - 1:.1%} | {s.gap_worst - 1:.1%} | "
                     f"{fmt(s.spearman_mean)} | {fmt(s.spearman_worst)} | {s.few_plans} | {pairs} |")
    return "\n".join(lines)


def load_runs(path: str) -> list[tuple[str, dict]]:
    """(name, run) of a run JSON, or of each run of a recorded bundle (``{"runs": {name: run}}``, as in
    tests/data); ``.gz`` files are read through gzip; every row checked as :func:`benchmarks.runfile.load_run`
    does. A run's device is in its header or at its top."""
    data = read_json(path)
    runs = data.get("runs") if isinstance(data, dict) else None
    named = list(runs.items()) if isinstance(runs, dict) else [(path, data)]
    return [(name, checked_run(name, run, need_rows=False)) for name, run in named]


def _device(run: Mapping[str, Any]) -> str:
    return str((run.get("header") or {}).get("device") or run.get("device") or "")


def cmd_model_check(args: argparse.Namespace) -> int:
    """Print (or write as JSON) how the cost model ranks the plans the runs measured."""
    checks: list[ConfigCheck] = []
    for path in args.runs:
        for _, run in load_runs(path):
            vdev = hw.get(args.target) if args.target else chip_of_device(_device(run))
            checks += check_rows(run["rows"], vdev, offered_only=args.offered)
    if not checks:
        print("benchmarks model-check: no pt-tvm row with two or more measured candidates in the given runs")
        return 2
    summaries = summarize(checks)
    if args.json:
        print(json.dumps({"summaries": [asdict(s) for s in summaries],
                          "configs": [asdict(c) for c in checks]}, indent=1))
    else:
        print(table(summaries))
    return 0
