"""The ``layers`` suite's report: per layer, the time of every system, pt-tvm's speed-ups, and the paper's ratio.

``table.md`` opens with pt-tvm's speed-up (geometric mean over the configs where both rows are valid and timed)
over ``torch.compile`` beside the PipeThreader paper's 1.79x (Transformer layer) and 1.92x (Mamba2 layer) over
Inductor, and over the best peer of each config (the fastest valid peer: eager, ``torch.compile`` in either mode,
and mamba-ssm for Mamba2), for both pt-tvm systems; then per layer the milliseconds per call, the speed-ups per
config, the relative errors against the float32 reference, and the rows skipped or invalid with their reasons.
The charts are :func:`benchmarks.report.plot`'s, TFLOP/s per system and config.
"""
from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

from ..report import config_key, config_label, geomean, is_peer, plot
from ..runfile import load_run
from .suite import PAPER_OVER_INDUCTOR

__all__ = ["markdown", "write_report", "speedup", "best_peer_ms", "SUBJECTS"]

SUBJECTS = ("pt-tvm", "pt-tvm+compile")
_BASELINES = ("torch-compile", "torch-compile-max-autotune", "eager", "mamba-ssm")
Configs = Mapping[str, Mapping[str, Mapping[str, Any]]]  # config key -> system -> row


def _ms(row: Mapping[str, Any] | None) -> float | None:
    """The headline time of a valid, timed row; None otherwise."""
    if not row or row.get("valid") is not True or not row.get("ms"):
        return None
    return float(row["ms"])


def best_peer_ms(by_system: Mapping[str, Mapping[str, Any]]) -> tuple[str, float] | None:
    """(system, ms) of the fastest valid peer of one config, or None."""
    timed = [(s, _ms(r)) for s, r in by_system.items() if is_peer(s) and _ms(r) is not None]
    return min(timed, key=lambda st: st[1]) if timed else None


def speedup(by_system: Mapping[str, Mapping[str, Any]], subject: str, other: str | None) -> float | None:
    """``other``'s time over ``subject``'s (> 1: the subject is faster); ``other`` None: the best peer."""
    mine = _ms(by_system.get(subject))
    theirs = best_peer_ms(by_system) if other is None else (other, _ms(by_system.get(other)))
    return theirs[1] / mine if mine and theirs and theirs[1] else None


def _mean(configs: Configs, subject: str, other: str | None) -> str:
    ratios = [r for r in (speedup(by, subject, other) for by in configs.values()) if r is not None]
    g = geomean(ratios)
    return f"{g:.2f}x ({len(ratios)})" if g is not None else "—"


def _group(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, dict[str, Mapping[str, Any]]]]:
    out: dict[str, dict[str, dict[str, Mapping[str, Any]]]] = {}
    for r in rows:
        out.setdefault(r["kernel"], {}).setdefault(config_key(r), {})[r["system"]] = r
    return out


def _systems(configs: Configs) -> list[str]:
    seen = list(dict.fromkeys(s for by in configs.values() for s in by))
    return sorted(seen, key=lambda s: (s.startswith("pt-tvm"), seen.index(s)))  # peers first, then ours


def _cell_ms(row: Mapping[str, Any] | None) -> str:
    if row is None:
        return "—"
    if row.get("valid") is None:
        return "skipped"
    if row.get("valid") is False:
        return "invalid"
    ms = _ms(row)
    return "not timed" if ms is None else f"{ms:.3f}" + ("q" if row.get("timing") == "queued" else "")


def _paper_table(groups: Mapping[str, Configs]) -> list[str]:
    lines = ["## Against the paper", "",
             "pt-tvm's speed-up (the other's time over pt-tvm's; geometric mean over the configs where both are "
             "valid and timed, their number in brackets) beside the PipeThreader paper's single-layer speed-up over "
             "PyTorch Inductor.", "",
             "| layer | system | over torch-compile | over max-autotune | over eager | over best peer | "
             "paper, over Inductor |", "|---|---|---|---|---|---|---|"]
    for layer, configs in groups.items():
        paper = PAPER_OVER_INDUCTOR.get(layer)
        for subject in SUBJECTS:
            cells = [_mean(configs, subject, o) for o in ("torch-compile", "torch-compile-max-autotune", "eager", None)]
            cells.append(f"{paper:.2f}x" if paper else "—")
            lines.append(f"| {layer} | {subject} | " + " | ".join(cells) + " |")
    return lines + [""]


def _layer_tables(layer: str, configs: Configs) -> list[str]:
    systems = _systems(configs)
    lines = [f"## {layer}", "", "Milliseconds per call (median of CUDA-graph replays; `q`: of calls queued back to "
             "back, the capture failed), and the fastest valid peer", "",
             "| config | " + " | ".join(systems) + " | best peer |", "|---" * (len(systems) + 2) + "|"]
    for by in configs.values():
        best = best_peer_ms(by)
        lines.append(f"| {config_label(next(iter(by.values())))} | " + " | ".join(_cell_ms(by.get(s)) for s in systems)
                     + f" | {f'{best[0]} ({best[1]:.3f})' if best else '—'} |")
    others = [s for s in _BASELINES if s in systems]
    cols = [(subject, o) for subject in SUBJECTS if subject in systems for o in [*others, None]]
    if cols:
        lines += ["", "Speed-up (the other's time over the pt-tvm system's; > 1: pt-tvm is faster)", "",
                  "| config | " + " | ".join(f"{s}/{o or 'best peer'}" for s, o in cols) + " |",
                  "|---" * (len(cols) + 1) + "|"]
        for by in configs.values():
            cells = [speedup(by, s, o) for s, o in cols]
            lines.append(f"| {config_label(next(iter(by.values())))} | "
                         + " | ".join(f"{r:.2f}x" if r is not None else "—" for r in cells) + " |")
        lines.append("| **geomean** | " + " | ".join(f"**{_mean(configs, s, o)}**" for s, o in cols) + " |")
    lines += ["", "Relative error against the float32 reference (LLaMA: of the layer's update, output minus input)",
              "", "| config | " + " | ".join(systems) + " |", "|---" * (len(systems) + 1) + "|"]
    for by in configs.values():
        errs = [by.get(s, {}).get("rel_err") for s in systems]
        lines.append(f"| {config_label(next(iter(by.values())))} | "
                     + " | ".join(f"{e:.1e}" if isinstance(e, (int, float)) else "—" for e in errs) + " |")
    return lines + [""]


def _reasons(rows: Sequence[Mapping[str, Any]], title: str, pick: Any, why: Any) -> list[str]:
    chosen = [r for r in rows if pick(r)]
    if not chosen:
        return []
    lines = [f"## {title}", "", "| layer | config | system | why |", "|---|---|---|---|"]
    lines += [f"| {r['kernel']} | {config_label(r)} | {r['system']} | {str(why(r)).replace('|', '/')} |"
              for r in chosen]
    return lines + [""]


def markdown(run: Mapping[str, Any]) -> str:
    """The whole ``table.md`` of a layers run."""
    head, rows = run.get("header", {}), run["rows"]
    lines = ["# Layer benchmark: LLaMA-3-8B decoder layer, Mamba2-1.3B mixer", ""]
    keys = ("device", "driver", "cuda", "torch", "tilelang", "pt_tvm", "git_commit", "date", "command", "tolerance")
    lines += [f"- {k}: `{head[k]}`" for k in keys if k in head]
    if head.get("partial"):
        lines.append("- **partial**: the run was cut off; these are the configs it finished")
    if any(r.get("dry_run") for r in rows):
        lines.append("- **dry run**: nothing was built or timed")
    groups = _group(rows)
    lines += [""] + _paper_table(groups)
    for layer, configs in groups.items():
        lines += _layer_tables(layer, configs)
    lines += _reasons(rows, "Skipped rows", lambda r: r.get("valid") is None and not r.get("dry_run"),
                      lambda r: r.get("skipped", ""))
    lines += _reasons(rows, "Invalid rows", lambda r: r.get("valid") is False,
                      lambda r: r.get("error") or f"relative error {r.get('rel_err')}")
    lines += _reasons(rows, "Not captured in a CUDA graph (timed as queued calls)", lambda r: r.get("graph_error"),
                      lambda r: r["graph_error"])
    return "\n".join(lines)


def write_report(run_path: str, out_dir: str) -> tuple[str, list[str]]:
    """``out_dir/table.md`` and the charts of a layers run; returns their paths."""
    run = load_run(run_path)
    text = markdown(run)
    os.makedirs(out_dir, exist_ok=True)
    table = os.path.join(out_dir, "table.md")
    with open(table, "w") as f:
        f.write(text + "\n")
    return table, plot(run["rows"], out_dir)
