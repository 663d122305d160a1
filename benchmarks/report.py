"""A run's JSON as a Markdown table and bar charts (TFLOP/s per config per system, as in the FA3 paper).

``table.md`` has, per kernel, the TFLOP/s of every system and the best peer,
then the ratio of pt-tvm to each other system and to the best peer (pt-tvm
TFLOP/s over theirs: above 1 means pt-tvm is faster) with geometric means
over the configs where both rows are valid, and beside each the same mean
over the configs where every system fills the GPU (:func:`fills_gpu`). Peers
are the systems that are not pt-tvm's own (names starting with ``pt-tvm``).
Times are the headline of each row: replayed from a CUDA graph where the run
captured one, else calls queued back to back; the report lists where the two
differ by more than 10 %, the systems that could not be captured, and the
outputs the check could not verify as NaN-prefilled. Invalid rows are listed
with their reason and left out of every ratio.
"""
from __future__ import annotations

import importlib.util
import io
import json
import math
import os
import re
import sys
from typing import Any, Iterable, Mapping, Sequence

from .runfile import load_run

__all__ = ["load_run", "merge_runs", "config_key", "config_label", "is_peer", "best_peer", "geomean", "fills_gpu",
           "speedups", "markdown", "plot", "save_chart", "write_report", "summary_lines", "FILL_WAVES", "FILL_MS",
           "TIMING_GAP"]

SUBJECT = "pt-tvm"
FILL_WAVES = 1.0  # a config fills the GPU when every kernel launches more blocks than the GPU has SMs ...
FILL_MS = 0.05  # ... and every call takes longer than 50 us (shorter ones are launch-bound)
TIMING_GAP = 0.10  # queued and CUDA-graph medians differing by more than this are listed


_PART_KEYS = ("date", "command", "shard", "wall_s", "configs", "partial")


def merge_runs(paths: Sequence[str], reruns: Sequence[str] = (), across_commits: bool = False,
               keep_first: bool = False) -> tuple[dict, list]:
    """(header, rows) of one run made of several (the shards of a suite run on the GPUs of one machine).

    The runs must come from one device model and one commit; a (kernel, config, system) measured
    twice is an error. The header keeps the shared provenance and lists each part's own under ``parts``.
    Each of ``reruns``, in order, a run of some of those configs again (same device and versions, any
    commit), replaces every row of its configs; its part records its commit, and where the grid's configs were
    then last measured at several commits the header names each (``f01c7c1+c87097f``). ``across_commits``: parts of one
    grid run at different commits (each config measured whole in one of them), each part recording its commit
    and the header all of them (``50593ce+0231e29``). ``keep_first``: a config measured in several runs (a queue
    of calls that measured it twice) keeps its first run's rows; the header counts the configs left out
    (``repeats_left_out``).
    """
    runs = [load_run(p, need_rows=False) for p in paths]
    heads = [r["header"] for r in runs]
    for key in ("device", "tilelang", "torch", "dry_run") + (() if across_commits else ("git_commit",)):
        values = {str(h.get(key))[:7] if key == "git_commit" else str(h.get(key)) for h in heads}  # hash or abbrev.
        if len(values) > 1:
            raise ValueError(f"runs differ in {key} ({', '.join(sorted(values))}): merge only shards of one run")
    rows, seen, repeats = [], set(), set()
    for path, run in zip(paths, runs):
        earlier = {config_key(row) for row in rows}
        for row in run["rows"]:
            key = (config_key(row), row["system"])
            if keep_first and key[0] in earlier:
                repeats.add(key[0])
                continue
            if key in seen:
                raise ValueError(f"{path}: {row['kernel']} {config_label(row)} {row['system']} is in two runs")
            seen.add(key)
            rows.append(row)
    head = {k: v for k, v in heads[0].items() if k not in _PART_KEYS}
    parts = [{**p, "git_commit": p.get("git_commit") or h.get("git_commit")} if across_commits else p
             for h in heads for p in _parts(h)]
    head.update(parts=parts, systems=sorted({s for h in heads for s in h.get("systems", [])}))
    if across_commits:
        head["git_commit"] = "+".join(dict.fromkeys(str(p["git_commit"])[:7] for p in parts))
    if keep_first:
        head["repeats_left_out"] = len(repeats) + sum(h.get("repeats_left_out") or 0 for h in heads)
    order = [str(head.get("git_commit"))]
    measured_at = dict.fromkeys((config_key(r) for r in rows), order[0])
    for rerun in reruns:
        again = load_run(rerun, need_rows=False)
        for key in ("device", "tilelang", "torch", "dry_run"):
            if str(again["header"].get(key)) != str(head.get(key)):
                raise ValueError(f"{rerun}: differs in {key} from the run it would patch")
        redone = {config_key(r) for r in again["rows"]}
        missing = redone - {config_key(r) for r in rows}
        if missing:
            raise ValueError(f"{rerun}: configs not in the run: {sorted(missing)[:3]}")
        rows = [r for r in rows if config_key(r) not in redone] + list(again["rows"])
        head["parts"] += [{**p, "git_commit": p.get("git_commit") or again["header"].get("git_commit"),
                           "rerun": len(redone)} for p in _parts(again["header"])]
        order.append(str(again["header"].get("git_commit")))
        measured_at.update(dict.fromkeys(redone, order[-1]))
    held = set(measured_at.values())  # in the parts' order, each commit whose rows the grid still holds
    commits = dict.fromkeys(c for commit in order if commit in held for c in commit.split("+"))
    if len(commits) > 1:  # a grid whose configs were last measured at several commits names each
        head["git_commit"] = "+".join(c[:7] for c in commits)
    head["configs"] = len({config_key(r) for r in rows})  # what the rows hold (not every part's header counted)
    return head, rows


def _parts(head: Mapping[str, Any]) -> list[dict]:
    """A run's parts: a merged run's own (so that merging merged runs keeps each part's date and command)."""
    return [dict(p) for p in head["parts"]] if head.get("parts") else [{k: head.get(k) for k in _PART_KEYS}]


def config_key(row: Mapping[str, Any]) -> str:
    """The identity of a row's config: kernel, problem as sorted JSON, and note (a suite may measure one
    shape under two names, e.g. GEMM 8192^3 as a square and as LLaMA-3 70B's o projection)."""
    key = row["kernel"] + " " + json.dumps(row["config"], sort_keys=True, default=str)
    return key + (f" ({row['note']})" if row.get("note") else "")


_DT = {"float16": "fp16", "bfloat16": "bf16"}


def config_label(row: Mapping[str, Any]) -> str:
    """A short human name for a row's config (``fp16 d128 s4096 b4 h16 causal``, ``fp16 8192x8192x8192``,
    ``bf16 d128 b1 q1 h32/8 kv16384 paged 16``)."""
    c = row["config"]
    dt = _DT.get(c.get("dtype"), c.get("dtype", ""))
    if row["kernel"] == "flash_attention":
        gqa = f"/{c['kv_heads']}" if c.get("kv_heads", c.get("heads")) != c.get("heads") else ""
        return (f"{dt} d{c['dim']} s{c['seq_len']} b{c['batch']} h{c['heads']}{gqa}"
                + (" causal" if c.get("causal") else ""))
    if {"seqlen", "headdim", "dstate"} <= set(c):  # Mamba2's chunk kernels
        return f"{dt} b{c.get('batch')} s{c['seqlen']} h{c.get('heads')} p{c['headdim']} n{c['dstate']}"
    if set(c) == {"batch", "seqlen", "dtype"}:  # a whole layer (benchmarks.layers)
        return f"{dt} b{c['batch']} s{c['seqlen']}" + (f" ({row['note']})" if row.get("note") else "")
    if row["kernel"] == "decode_attention":
        cache = f"paged {c['page_size']}" if c.get("page_size") else "contiguous"
        return (f"{dt} d{c['dim']} b{c['batch']} q{c['q_len']} h{c['heads']}/{c['kv_heads']} kv{c['kv_len']} "
                f"{cache}")
    if {"M", "N", "K"} <= set(c):
        note = row.get("note", "")
        shape = f"{c['M']}x{c['N']}x{c['K']}"
        return f"{dt} {shape}" + (f" ({note})" if note and not note.startswith("square") else "")
    return " ".join(f"{k}={v}" for k, v in c.items())


def is_peer(system: str) -> bool:
    """Peers are everyone else's systems; ``pt-tvm*`` are ours (the tuned kernel and its model-only ablation)."""
    return not system.startswith("pt-tvm")


def _tflops(row: Mapping[str, Any] | None) -> float | None:
    """TFLOP/s of a valid, timed row; None otherwise."""
    if not row or row.get("valid") is not True:
        return None
    tf = row.get("tflops")
    return float(tf) if isinstance(tf, (int, float)) and tf > 0 and math.isfinite(tf) else None


def best_peer(by_system: Mapping[str, Mapping[str, Any]]) -> tuple[str, float] | None:
    """(system, TFLOP/s) of the fastest valid peer of one config, or None."""
    timed = [(s, _tflops(r)) for s, r in by_system.items() if is_peer(s)]
    timed = [(s, t) for s, t in timed if t is not None]
    return max(timed, key=lambda st: st[1]) if timed else None


def geomean(values: Iterable[float]) -> float | None:
    vals = [v for v in values if v and v > 0 and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


def fills_gpu(by_system: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether every valid, timed system of one config fills the GPU: more than :data:`FILL_WAVES` waves
    of blocks (``waves``, where the row knows its kernel's grid: TileLang's kernels) and more than
    :data:`FILL_MS` per call. Configs that fail this are launch- or latency-bound."""
    timed = [r for r in by_system.values() if _tflops(r) is not None]
    return bool(timed) and all(float(r["ms"]) > FILL_MS and (r.get("waves") is None or r["waves"] > FILL_WAVES)
                               for r in timed)


def _group(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, dict[str, Mapping[str, Any]]]]:
    """kernel -> config key -> system -> row, in first-appearance order."""
    out: dict[str, dict[str, dict[str, Mapping[str, Any]]]] = {}
    for r in rows:
        out.setdefault(r["kernel"], {}).setdefault(config_key(r), {})[r["system"]] = r
    return out


def _systems(configs: Mapping[str, Mapping[str, Any]], subject: str) -> list[str]:
    seen: list[str] = []
    for by_system in configs.values():
        seen += [s for s in by_system if s not in seen]
    return sorted(seen, key=lambda s: (s != subject, not s.startswith("pt-tvm")))  # stable otherwise


def _graph_timed(rows: Iterable[Mapping[str, Any]]) -> bool:
    """Whether the run timed its systems two ways (CUDA graph and queued), not queued only."""
    return any("timing" in r for r in rows)


def _cell(row: Mapping[str, Any] | None, two_ways: bool) -> str:
    if row is None:
        return "—"
    if row.get("valid") is False:
        return "invalid"
    tf = _tflops(row)
    if tf is None:
        return "not timed"
    return f"{tf:.0f}" + ("q" if two_ways and row.get("timing") == "queued" else "")


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b is not None else None


def _fmt_ratio(r: float | None) -> str:
    return f"{r:.2f}x" if r is not None else "—"


def speedups(configs: Mapping[str, Mapping[str, Mapping[str, Any]]], subject: str, other: str | None
             ) -> tuple[list[float], list[float]]:
    """The subject's TFLOP/s over ``other``'s (None: the best peer) per config where both are valid and
    timed: (over all such configs, over those where every system fills the GPU)."""
    every, full = [], []
    for by_system in configs.values():
        if other is None:
            best = best_peer(by_system)
            r = _ratio(_tflops(by_system.get(subject)), best[1] if best else None)
        else:
            r = _ratio(_tflops(by_system.get(subject)), _tflops(by_system.get(other)))
        if r is not None:
            every.append(r)
            if fills_gpu(by_system):
                full.append(r)
    return every, full


def _means(every: list[float], full: list[float]) -> str:
    """``**all** (n=..); fills GPU ... (n=..)``: a geometric mean beside its mean over full-GPU configs."""
    g, f = geomean(every), geomean(full)
    if g is None:
        return "—"
    return f"**{_fmt_ratio(g)}** (n={len(every)}); fills GPU {_fmt_ratio(f)} (n={len(full)})"


def _kernel_tables(kernel: str, configs: Mapping[str, Mapping[str, Mapping[str, Any]]], subject: str,
                   two_ways: bool) -> list[str]:
    systems = _systems(configs, subject)
    others = [s for s in systems if s != subject]
    timing = "CUDA-graph replay; `q`: calls queued back to back, the capture failed" if two_ways else \
        "calls queued back to back"
    lines = [f"## {kernel}", "", f"TFLOP/s (median, {timing}; `invalid`: failed the reference check or did not "
             "build)", ""]
    lines += ["| config | " + " | ".join(systems) + " | best peer | fills GPU |", "|---" * (len(systems) + 3) + "|"]
    for by_system in configs.values():
        label = config_label(next(iter(by_system.values())))
        best = best_peer(by_system)
        lines.append(f"| {label} | " + " | ".join(_cell(by_system.get(s), two_ways) for s in systems)
                     + f" | {f'{best[0]} ({best[1]:.0f})' if best else '—'} | "
                     + ("yes" if fills_gpu(by_system) else "no") + " |")
    if subject not in systems or not others:
        return lines + [""]
    lines += ["", f"Speed-up of {subject} (its TFLOP/s over the other's; > 1: {subject} is faster); geometric means "
              f"over all configs, then over those where every system fills the GPU (> {FILL_WAVES:g} wave, "
              f"> {FILL_MS * 1e3:.0f} us per call)", ""]
    cols = [f"{subject}/{s}" for s in others] + [f"{subject}/best peer"]
    lines += ["| config | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for by_system in configs.values():
        mine = _tflops(by_system.get(subject))
        best = best_peer(by_system)
        ratios = [_ratio(mine, _tflops(by_system.get(s))) for s in others]
        ratios.append(_ratio(mine, best[1] if best else None))
        label = config_label(next(iter(by_system.values())))
        lines.append(f"| {label} | " + " | ".join(_fmt_ratio(r) for r in ratios) + " |")
    lines.append("| **geomean** | " + " | ".join(_means(*speedups(configs, subject, s)) for s in [*others, None])
                 + " |")
    return lines + [""]


def summary_lines(rows: Sequence[Mapping[str, Any]], subject: str = SUBJECT) -> list[str]:
    """Per kernel: geomean of subject/best peer, how many configs the subject wins, and the geomean over the
    configs where every system fills the GPU."""
    out = []
    for kernel, configs in _group(rows).items():
        ratios, full = speedups(configs, subject, None)
        g = geomean(ratios)
        if g is None:
            out.append(f"{kernel}: {len(configs)} configs, no config with both {subject} and a peer valid and timed")
        else:
            wins = sum(r > 1 for r in ratios)
            f = geomean(full)
            out.append(f"{kernel}: {subject}/best peer geomean {g:.2f}x over {len(ratios)} configs "
                       f"({subject} fastest on {wins}); where every system fills the GPU "
                       + (f"{f:.2f}x over {len(full)}" if f is not None else "no config"))
    return out


def _timing_lines(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Where queued calls and CUDA-graph replays disagree by more than TIMING_GAP, and what was not captured."""
    gaps = []
    for r in rows:
        q, g = r.get("queued"), r.get("graph")
        if q and g and abs(q["ms"] / g["ms"] - 1.0) > TIMING_GAP:
            gaps.append(f"| {r['kernel']} | {config_label(r)} | {r['system']} | {q['ms'] * 1e3:.1f} | "
                        f"{g['ms'] * 1e3:.1f} | {q['ms'] / g['ms']:.2f} |")
    lines = ["## Queued calls vs CUDA graph", "",
             f"Rows whose median per call differs by more than {TIMING_GAP:.0%} between calls queued back to back "
             "and the same calls replayed from a CUDA graph (the headline): the host's launch path shows.", ""]
    if gaps:
        lines += ["| kernel | config | system | queued us | graph us | queued/graph |", "|---|---|---|---|---|---|"]
        lines += gaps
    else:
        lines.append("None.")
    failed = [r for r in rows if r.get("graph_error")]
    if failed:
        lines += ["", "Not captured (headline falls back to queued calls):", "",
                  "| kernel | config | system | why |", "|---|---|---|---|"]
        lines += [f"| {r['kernel']} | {config_label(r)} | {r['system']} | {str(r['graph_error']).replace('|', '/')} |"
                  for r in failed]
    unverified = [r for r in rows if "unverified" in (r.get("prefill") or ())]
    if unverified:
        lines += ["", "Outputs the check could not verify as NaN-prefilled (allocated outside the caching "
                  "allocator's poisoned memory; an unwritten element there may go unnoticed):", "",
                  "| kernel | config | system | outputs |", "|---|---|---|---|"]
        lines += [f"| {r['kernel']} | {config_label(r)} | {r['system']} | "
                  f"{', '.join(str(k) for k, p in enumerate(r['prefill']) if p == 'unverified')} |" for r in unverified]
    return lines + [""]


def markdown(run: Mapping[str, Any], subject: str = SUBJECT) -> str:
    """The whole ``table.md``: provenance, summary, per-kernel tables, timing, invalid rows."""
    head, rows = run.get("header", {}), run["rows"]
    two_ways = _graph_timed(rows)
    lines = ["# Benchmark results", ""]
    keys = ("device", "driver", "cuda", "torch", "tilelang", "pt_tvm", "git_commit", "git_commit_note", "date",
            "command")
    lines += [f"- {k}: `{head[k]}`" for k in keys if k in head]
    if head.get("partial"):
        lines.append("- **partial**: the run was cut off; these are the configs it finished")
    if head.get("amended"):
        lines.append(f"- amended after the run: {head['amended']}")
    if head.get("repeats_left_out"):
        lines.append(f"- {head['repeats_left_out']} configs measured again by a later part keep the first part's rows")
    for part in head.get("parts", []):  # a merged run: each shard's own provenance
        cut = ", cut off before its end" if part.get("partial") else ""
        what = (f"rerun of {part['rerun']} configs at {part.get('git_commit')}" if part.get("rerun")
                else (part.get("shard") or "whole") + (f" at {part['git_commit']}" if part.get("git_commit") else ""))
        lines.append(f"- part ({what}, {part.get('wall_s')} s{cut}, {part.get('date')}): "
                     f"`{part.get('command')}`")
    if any(r.get("dry_run") for r in rows):
        lines.append("- **dry run**: nothing was timed (CPU search and lowering only)")
    elif not two_ways:
        lines.append("- timing: calls queued back to back only (this run predates CUDA-graph timing)")
    lines += ["", "## Summary", ""] + [f"- {s}" for s in summary_lines(rows, subject)] + [""]
    for kernel, configs in _group(rows).items():
        lines += _kernel_tables(kernel, configs, subject, two_ways)
    if two_ways:
        lines += _timing_lines(rows)
    bad = [r for r in rows if r.get("valid") is False]
    if bad:
        lines += ["## Invalid rows", "", "| kernel | config | system | reason |", "|---|---|---|---|"]
        for r in bad:
            why = r.get("error") or (f"relative error {r['rel_err']}" if r.get("rel_err") is not None else "invalid")
            lines.append(f"| {r['kernel']} | {config_label(r)} | {r['system']} | {str(why).replace('|', '/')} |")
        lines.append("")
    untimed = [r for r in rows if r.get("valid") is True and _tflops(r) is None and r.get("error")]
    if untimed:  # correct, but neither way of timing finished (out of memory beside the other systems' graphs)
        lines += ["## Correct rows not timed", "", "| kernel | config | system | reason |", "|---|---|---|---|"]
        lines += [f"| {r['kernel']} | {config_label(r)} | {r['system']} | {str(r['error']).replace('|', '/')} |"
                  for r in untimed]
        lines.append("")
    return "\n".join(lines)


def _panel(row: Mapping[str, Any]) -> tuple[tuple, str, Any, str]:
    """(panel key, panel title, x value, x tick label): one chart per panel, one bar group per x."""
    c, kernel = row["config"], row["kernel"]
    dt = _DT.get(c.get("dtype"), c.get("dtype", ""))
    if kernel == "flash_attention":
        gqa = c["kv_heads"] != c["heads"]
        key = (kernel, c["dtype"], c["dim"], c["causal"], c["kv_heads"] if gqa else None)
        title = (f"Attention forward, {dt}, head dim {c['dim']}, " + ("causal" if c["causal"] else "non-causal")
                 + (f", GQA {c['heads']}/{c['kv_heads']} heads" if gqa else ""))
        s = c["seq_len"]
        return key, title, s, f"{s // 1024}k" if s >= 1024 and s % 1024 == 0 else str(s)
    label = config_label(row)
    tick = label.split(" ", 1)[-1].replace(" (", "\n(")  # shape, then the LLaMA projection below it
    return (kernel, c.get("dtype")), f"{kernel}, {dt}", label, tick


def _xlabel(row: Mapping[str, Any]) -> str:
    """What a chart's x axis shows for the panel of ``row``."""
    if row["kernel"] == "flash_attention":
        return "Sequence length"
    return "M x N x K" if {"M", "N", "K"} <= set(row["config"]) else "Configuration"


_PALETTE = {"pt-tvm": "#d62728", "pt-tvm-model": "#ff9896", "tilelang-auto": "#9467bd", "tilelang-autotune": "#c5b0d5",
            "tilelang-ws": "#6b4c9a", "cudnn-sdpa": "#1f77b4", "fa2-sdpa": "#aec7e8", "fa3": "#2ca02c",
            "torch-compile": "#7f7f7f", "cublas": "#1f77b4", "mamba-triton": "#ff7f0e", "eager": "#bcbd22",
            "torch-compile-max-autotune": "#4d4d4d", "mamba-ssm": "#ff7f0e", "pt-tvm+compile": "#8b0000"}
_OTHER = ("#8c564b", "#e377c2", "#bcbd22", "#17becf", "#ff7f0e")


def _color(system: str) -> str:
    """One colour per system across all charts (pt-tvm red, as the FA3 paper colours its own bars)."""
    if system in _PALETTE:
        return _PALETTE[system]
    return _OTHER[sum(map(ord, system)) % len(_OTHER)]


def _slug(parts: Iterable[Any]) -> str:
    text = "_".join(str(p) for p in parts if p is not None and p is not False)
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text)


def _panel_file(key: tuple) -> str:
    if key[0] == "flash_attention":
        kernel, dtype, dim, causal, kv = key
        return _slug([kernel, dtype, f"d{dim}", "causal" if causal else "noncausal",
                      f"gqa{kv}" if kv else None]) + ".png"
    return _slug(key) + ".png"


def plot(rows: Sequence[Mapping[str, Any]], out_dir: str, subject: str = SUBJECT) -> list[str]:
    """One grouped bar chart per panel (kernel, dtype, head dim, mask); only valid, timed rows are drawn."""
    import matplotlib  # optional: only the charts need it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after use("Agg"): no display where reports are written

    panels: dict[tuple, dict] = {}
    for r in rows:
        key, title, x, tick = _panel(r)
        p = panels.setdefault(key, {"title": title, "x": {}, "systems": [], "xlabel": _xlabel(r)})
        p["x"].setdefault(x, tick)
        if r["system"] not in p["systems"]:
            p["systems"].append(r["system"])
        p.setdefault("rows", {})[(x, r["system"])] = r
    paths = []
    for key, p in panels.items():
        if not any(_tflops(r) is not None for r in p["rows"].values()):
            continue  # nothing timed (a dry run, or every system failed)
        xs = sorted(p["x"]) if all(isinstance(x, (int, float)) for x in p["x"]) else list(p["x"])
        systems = sorted(p["systems"], key=lambda s: (s != subject, not s.startswith("pt-tvm")))
        width = 0.8 / len(systems)
        fig, ax = plt.subplots(figsize=(max(6.0, 1.4 * len(xs) * max(1, len(systems) / 4)) + 1.5, 4.2))
        for i, s in enumerate(systems):
            cells = [p["rows"].get((x, s)) for x in xs]
            heights = [_tflops(r) or 0.0 for r in cells]
            pos = [j + (i - (len(systems) - 1) / 2) * width for j in range(len(xs))]
            bars = ax.bar(pos, heights, width, label=s, color=_color(s))
            for b, h, r in zip(bars, heights, cells):
                x0 = b.get_x() + b.get_width() / 2
                if h:
                    ax.annotate(f"{h:.0f}", (x0, h), ha="center", va="bottom", fontsize=6, xytext=(0, 1),
                                textcoords="offset points")
                elif r is not None and r.get("valid") is False:  # failed: a mark where its bar would be
                    ax.annotate("x", (x0, 0), ha="center", va="bottom", fontsize=7, color=_color(s))
        ax.set_ylim(0, ax.get_ylim()[1] * 1.08)
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels([p["x"][x] for x in xs], fontsize=8)
        ax.set_xlabel(p["xlabel"])
        ax.set_ylabel("Speed (TFLOP/s)")
        ax.set_title(p["title"])
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
        fig.tight_layout()
        path = os.path.join(out_dir, _panel_file(key))
        save_chart(fig, path)
        plt.close(fig)
        paths.append(path)
    return paths


def save_chart(fig: Any, path: str) -> None:
    """``fig`` as a PNG of at most 256 colours: charts are flat colours and text, and a palette keeps them about
    2.4x smaller than RGBA (the results folder travels to the GPU machine with every device call)."""
    from PIL import Image  # matplotlib's own dependency

    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=120)
    png.seek(0)
    with Image.open(png) as im:
        flat = im.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    flat.save(path, optimize=True)


def write_report(run_path: str, out_dir: str, subject: str = SUBJECT) -> tuple[str, list[str]]:
    """Write ``out_dir/table.md`` and the PNG charts for a run JSON; returns their paths. The run is read and
    its table made before anything is written (a bad run leaves no file behind)."""
    run = load_run(run_path)
    text = markdown(run, subject)
    os.makedirs(out_dir, exist_ok=True)
    table = os.path.join(out_dir, "table.md")
    with open(table, "w") as f:
        f.write(text)
    if importlib.util.find_spec("matplotlib") is None:
        print("benchmarks report: no charts (matplotlib is not installed: pip install 'pt-tvm[plot]')",
              file=sys.stderr)
        return table, []
    return table, plot(run["rows"], out_dir, subject)
