"""The results README.md quotes, generated from the runs ``benchmarks/results/index.json`` names as current.

``python -m benchmarks readme`` rewrites the part of the top-level README.md
between ``<!-- results:begin -->`` and ``<!-- results:end -->`` and the whole of
``benchmarks/results/README.md`` (the index of current runs); ``--check`` only
says whether they are up to date. Every figure comes from a run's JSON through
:mod:`benchmarks.report`, so a table cannot drift from the run it cites.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .report import SUBJECT, _group, config_key, config_label, fills_gpu, geomean, is_peer, speedups
from .runfile import RunFileError, load_run

__all__ = ["Entry", "Index", "load_index", "readme_section", "results_index", "splice", "BEGIN", "END", "RESULTS",
           "ROOT"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "benchmarks", "results")
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"


@dataclass(frozen=True)
class Entry:
    """One current run of one suite on one GPU: its JSON and its report, relative to the results folder."""

    gpu: str
    suite: str
    run: str
    report: str
    note: str = ""


@dataclass(frozen=True)
class Index:
    """``index.json``: the current run per suite and GPU, and other kept results (``{path, what}``)."""

    current: tuple[Entry, ...]
    other: tuple[Mapping[str, str], ...] = ()


def load_index(path: str) -> Index:
    """``index.json`` (``{"current": [{gpu, suite, run, report, note?}, ...], "other": [{path, what}]}``),
    every file it names checked to exist."""
    try:
        with open(path) as f:
            data = json.load(f)
        index = Index(tuple(Entry(**e) for e in data["current"]),
                      tuple({"path": o["path"], "what": o["what"]} for o in data.get("other", ())))
    except FileNotFoundError:
        raise RunFileError(f"{path}: no such file") from None
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise RunFileError(f"{path}: not an index of runs ({type(e).__name__}: {e})") from None
    folder = os.path.dirname(os.path.abspath(path))
    named = [(f"{e.gpu} {e.suite}", rel) for e in index.current for rel in (e.run, e.report)]
    for what, rel in named + [(o["what"], o["path"]) for o in index.other]:
        if not os.path.exists(os.path.join(folder, rel)):
            raise RunFileError(f"{path}: {what}: {rel} does not exist")
    return index


def _timing(rows: Sequence[Mapping[str, Any]]) -> str:
    if any("timing" in r for r in rows):
        return "CUDA-graph replay (calls queued back to back beside it in the report)"
    return "calls queued back to back (the run predates CUDA-graph timing)"


def _peers(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    seen: list[str] = []
    for r in rows:
        if is_peer(r["system"]) and r["system"] not in seen:
            seen.append(r["system"])
    return seen


def _cell(every: list[float], full: list[float]) -> str:
    g, f = geomean(every), geomean(full)
    if g is None:
        return "—"
    return f"{g:.2f}x ({len(every)}) / " + (f"{f:.2f}x ({len(full)})" if f is not None else "— (0)")


def _date(head: Mapping[str, Any]) -> str:
    """The run's date (a merged run's: its last part's)."""
    dates = [head.get("date")] + [p.get("date") for p in head.get("parts", ())]
    return max((str(d)[:10] for d in dates if d), default="?")


def _commit(head: Mapping[str, Any]) -> str:
    """The run's commit, abbreviated; a grid merged across commits names each (``50593ce+0231e29``)."""
    commit = str(head.get("git_commit", "?"))
    return commit if "+" in commit else commit[:7]


def _run_table(entry: Entry, run: Mapping[str, Any], link: str) -> list[str]:
    head, rows = run["header"], run["rows"]
    peers = _peers(rows)
    commit = _commit(head)
    lines = [f"**{entry.suite}** on {head.get('device', entry.gpu)} ([table and charts]({link}), "
             f"commit `{commit}`, {_date(head)}; timing: {_timing(rows)})"
             + (f". {entry.note}" if entry.note else ""), ""]
    cols = [f"vs {p}" for p in peers] + ["vs best peer"]
    lines += ["| kernel | configs | " + " | ".join(cols) + " |", "|---" * (len(cols) + 2) + "|"]
    # pt-tvm's ops under torch.compile (the layers suite) are a system of ours too: a row each
    subjects = [SUBJECT] + sorted({r["system"] for r in rows if r["system"].startswith(SUBJECT + "+")})
    for kernel, configs in _group(rows).items():
        for subject in subjects:
            cells = [_cell(*speedups(configs, subject, p)) for p in [*peers, None]]
            name = kernel if subject == SUBJECT else f"{kernel} ({subject})"
            lines.append(f"| {name} | {len(configs)} | " + " | ".join(cells) + " |")
    headline = _headline(rows)
    return lines + ([""] + headline if headline else []) + [""]


def _headline(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Configs where every system fills the GPU are the ones to quote; name those that do not."""
    small = [f"{kernel} {config_label(next(iter(by.values())))}" for kernel, configs in _group(rows).items()
             for by in configs.values() if not fills_gpu(by)]
    if not small:
        return []
    return [f"Not filling the GPU (launch- or latency-bound, left out of the second mean): {', '.join(small)}."]


def readme_section(entries: Sequence[Entry], results_dir: str = RESULTS, readme_dir: str = ROOT) -> str:
    """The text between README.md's markers: per current run, pt-tvm's speed-up over each peer (links
    relative to ``readme_dir``)."""
    lines = [BEGIN, "<!-- generated by `python -m benchmarks readme` from benchmarks/results/index.json: "
             "edit the index or rerun, not this text -->", "",
             f"Geometric means of {SUBJECT}'s TFLOP/s over each peer's per kernel, over every config where both "
             "passed the check (count in brackets), then over the configs where every system fills the GPU "
             "(more than one wave of thread blocks and more than 50 us per call). The history of earlier runs is "
             "in [benchmarks/RESULTS.md](benchmarks/RESULTS.md); the runs behind these tables are indexed in "
             "[benchmarks/results/README.md](benchmarks/results/README.md).", ""]
    for gpu in dict.fromkeys(e.gpu for e in entries):
        lines += [f"### {gpu}", ""]
        for e in (e for e in entries if e.gpu == gpu):
            run = load_run(os.path.join(results_dir, e.run))
            lines += _run_table(e, run, os.path.relpath(os.path.join(results_dir, e.report), readme_dir))
    return "\n".join(lines + [END])


def results_index(index: Index, results_dir: str = RESULTS) -> str:
    """``benchmarks/results/README.md``: the current run per suite and GPU, and how a run folder is laid out."""
    lines = ["# Benchmark results", "",
             "<!-- generated by `python -m benchmarks readme` from index.json -->", "",
             "One folder per run: its JSON (the rows, with the command, versions and commit in the header), its "
             "log, the script that made it (`run.sh`), and its report (`table.md` and charts, from "
             "`python -m benchmarks report`). `index.json` names the current run per suite and GPU; runs they "
             "superseded are removed from the tree (git history keeps them, see `benchmarks/RESULTS.md`).", "",
             "| GPU | suite | run | report | commit | date | configs | rows |", "|---|---|---|---|---|---|---|---|"]
    for e in index.current:
        run = load_run(os.path.join(results_dir, e.run))
        head = run["header"]
        configs = len({config_key(r) for r in run["rows"]})
        lines.append(f"| {e.gpu} | {e.suite} | [{e.run}]({e.run}) | [{e.report}]({e.report}) | "
                     f"`{_commit(head)}` | {_date(head)} | {configs} | "
                     f"{len(run['rows'])} |")
    if index.other:
        lines += ["", "Also kept:", ""] + [f"- [{o['path']}]({o['path']}): {o['what']}" for o in index.other]
    return "\n".join(lines) + "\n"


def splice(readme: str, section: str, path: str = "README.md") -> str:
    """``readme`` with the text between its markers (markers included) replaced by ``section``."""
    if readme.count(BEGIN) != 1 or readme.count(END) != 1 or readme.index(BEGIN) > readme.index(END):
        raise RunFileError(f"{path}: needs exactly one {BEGIN} ... {END} pair")
    return readme[:readme.index(BEGIN)] + section + readme[readme.index(END) + len(END):]
