"""Regression check: a run against a baseline run, row by row.

Rows are matched on (kernel, config, system). A row regresses when it was
valid in the baseline and is invalid (or missing its time) now, or when its
median time grew by more than ``threshold`` (0.05: 5 % slower): the headline
times (CUDA-graph replay), or the times of calls queued back to back when one
of the runs predates CUDA-graph timing. Only pt-tvm's
rows are checked unless ``all_systems``. A config recorded before a template
parameter existed matches the same config at that parameter's default. Rows present in only one of the runs
are listed but do not fail the check (a run may be a subset). Two dry runs
compare validity only (nothing was timed); a dry run cannot be compared
with a timed run. :func:`ratio_moves` lists instead where pt-tvm's speed-up
over a peer moved between two runs (what a re-run changed, and where).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from pt_tvm import templates

from .report import SUBJECT, config_key, config_label, geomean, is_peer
from .runfile import load_run

__all__ = ["Comparison", "compare_runs", "compare_files", "RatioMove", "ratio_moves"]


@dataclass(frozen=True)
class Comparison:
    """What a check found; ``ok`` is False when anything regressed."""

    regressions: tuple[str, ...]
    improvements: tuple[str, ...]
    compared: int
    only_in_run: tuple[str, ...] = ()
    only_in_baseline: tuple[str, ...] = ()
    speedup_geomean: float | None = None  # baseline ms / run ms over rows timed in both
    notes: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return not self.regressions

    def text(self, threshold: float) -> str:
        lines = [f"REGRESSION {r}" for r in self.regressions]
        lines += [f"improved   {r}" for r in self.improvements]
        lines += [f"note: {n}" for n in self.notes]
        if self.only_in_baseline:
            lines.append(f"not in this run ({len(self.only_in_baseline)}): " + "; ".join(self.only_in_baseline[:10])
                         + (" ..." if len(self.only_in_baseline) > 10 else ""))
        if self.only_in_run:
            lines.append(f"not in the baseline ({len(self.only_in_run)}): " + "; ".join(self.only_in_run[:10])
                         + (" ..." if len(self.only_in_run) > 10 else ""))
        speed = f"; speed vs baseline, geomean {self.speedup_geomean:.3f}x" if self.speedup_geomean else ""
        verdict = "FAIL" if self.regressions else "OK"
        lines.append(f"{verdict}: {self.compared} rows compared, {len(self.regressions)} regressed beyond "
                     f"{threshold:.1%}{speed}")
        return "\n".join(lines)


def _identity(row: Mapping[str, Any]) -> str:
    """A row's :func:`benchmarks.report.config_key` over the template's current defaults: a run made before a
    parameter existed (``trans_B``, ``softmax_scale``) ran at its default."""
    try:
        defaults = dict(templates.get(row["kernel"]).problem)
    except templates.TemplateError:  # a layer of the layers suite, not a template
        defaults = {}
    return config_key({**row, "config": {**defaults, **row["config"]}})


def _name(row: Mapping[str, Any]) -> str:
    return f"{row['kernel']} [{config_label(row)}] {row['system']}"


def _ms(row: Mapping[str, Any], queued: bool = False) -> float | None:
    """A valid row's median time: its headline, or (``queued``) its calls queued back to back."""
    ms = (row.get("queued") or {}).get("ms", row.get("ms")) if queued else row.get("ms")
    return float(ms) if row.get("valid") is True and isinstance(ms, (int, float)) and ms > 0 else None


def _why(row: Mapping[str, Any]) -> str:
    if row.get("error"):
        return str(row["error"])
    if row.get("rel_err") is not None:
        return f"relative error {row['rel_err']}"
    return "not valid" if row.get("valid") is not True else "no time recorded"


def compare_runs(run: Mapping[str, Any], baseline: Mapping[str, Any], *, threshold: float = 0.05,
                 systems: Sequence[str] | None = (SUBJECT,)) -> Comparison:
    """Compare two runs; ``systems=None`` checks every system."""
    if threshold < 0:
        raise ValueError(f"threshold must be >= 0, got {threshold}")
    dry = [any(r.get("dry_run") for r in x["rows"]) for x in (run, baseline)]
    if dry[0] != dry[1]:
        raise ValueError("cannot compare a dry run with a timed run ("
                         + ("the run" if dry[0] else "the baseline") + " is the dry run)")

    def index(rows: Sequence[Mapping[str, Any]]) -> dict[tuple, Mapping[str, Any]]:
        return {(_identity(r), r["system"]): r for r in rows if systems is None or r["system"] in systems}

    now, base = index(run["rows"]), index(baseline["rows"])
    # a run timed only by queued calls (before CUDA-graph timing) is compared queued with queued
    queued = any("timing" in r for r in run["rows"]) != any("timing" in r for r in baseline["rows"])
    regressions, improvements, speeds = [], [], []
    for key in (k for k in base if k in now):
        b, r = base[key], now[key]
        if dry[0]:  # validity of the CPU steps only
            if b.get("valid") is True and r.get("valid") is False:
                regressions.append(f"{_name(r)}: became invalid ({_why(r)})")
            continue
        b_ms, r_ms = _ms(b, queued), _ms(r, queued)
        if b_ms is not None and r_ms is None:
            regressions.append(f"{_name(r)}: became invalid ({_why(r)}); baseline {b_ms:.4f} ms")
        elif b_ms is None and r_ms is not None:
            improvements.append(f"{_name(r)}: now valid, {r_ms:.4f} ms (baseline: {_why(b)})")
        elif b_ms is not None and r_ms is not None:
            change = r_ms / b_ms - 1.0
            speeds.append(b_ms / r_ms)
            if change > threshold:
                regressions.append(f"{_name(r)}: {b_ms:.4f} ms -> {r_ms:.4f} ms ({change:+.1%}, "
                                   f"threshold {threshold:.1%})")
            elif -change > threshold:
                improvements.append(f"{_name(r)}: {b_ms:.4f} ms -> {r_ms:.4f} ms ({change:+.1%})")
    common = sum(1 for k in base if k in now)
    notes = ("dry runs: validity only, nothing was timed",) if dry[0] else \
        ("one run predates CUDA-graph timing: compared on calls queued back to back",) if queued else ()
    return Comparison(tuple(regressions), tuple(improvements), common,
                      only_in_run=tuple(_name(now[k]) for k in now if k not in base),
                      only_in_baseline=tuple(_name(base[k]) for k in base if k not in now),
                      speedup_geomean=geomean(speeds), notes=notes)


def compare_files(run_path: str, baseline_path: str, *, threshold: float = 0.05,
                  all_systems: bool = False, systems: Sequence[str] | None = None) -> Comparison:
    """:func:`compare_runs` on two JSON files; ``all_systems`` overrides ``systems`` (default pt-tvm)."""
    chosen = None if all_systems else tuple(systems or (SUBJECT,))
    return compare_runs(load_run(run_path), load_run(baseline_path), threshold=threshold, systems=chosen)


@dataclass(frozen=True)
class RatioMove:
    """pt-tvm's speed-up over one peer on one config (peer ms / pt-tvm ms) in a baseline and in a run."""

    kernel: str
    config: str
    peer: str
    before: float
    after: float
    after_queued: float | None  # the run's ratio on calls queued back to back (the baseline's way, if older)

    @property
    def change(self) -> float:
        return self.after / self.before - 1.0


def ratio_moves(run: Mapping[str, Any], baseline: Mapping[str, Any], *, threshold: float = 0.03) -> list[RatioMove]:
    """Every pt-tvm/peer speed-up of a config in both runs that moved by more than ``threshold``, each on the
    runs' headline timings, with the run's queued ratio beside it."""
    def index(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Mapping[str, Any]]]:
        out: dict[str, dict[str, Mapping[str, Any]]] = {}
        for r in rows:
            out.setdefault(_identity(r), {})[r["system"]] = r
        return out

    now, base = index(run["rows"]), index(baseline["rows"])
    moves = []
    for key in (k for k in now if k in base):
        n, b = now[key], base[key]
        if SUBJECT not in n or SUBJECT not in b:
            continue
        for peer in (s for s in n if is_peer(s) and s in b):
            times = [_ms(n[SUBJECT]), _ms(n[peer]), _ms(b[SUBJECT]), _ms(b[peer])]
            if None in times:
                continue
            after, before = times[1] / times[0], times[3] / times[2]
            q = [_ms(n[SUBJECT], queued=True), _ms(n[peer], queued=True)]
            if abs(after / before - 1.0) > threshold:
                moves.append(RatioMove(n[SUBJECT]["kernel"], config_label(n[SUBJECT]), peer, before, after,
                                       None if None in q else q[1] / q[0]))
    return moves
