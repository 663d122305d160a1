"""Checks of the CUDA that TileLang emits for a plan: what verifying the plan cannot see.

A software-pipelined plan leaves the cp.async bookkeeping to TileLang, which
groups the loop's loads into commit groups and puts ``cp_async_wait<N>``
before their readers. :func:`cp_async_hazards` replays the steady-state loop
body of the emitted kernel and checks, for every read of a shared buffer the
loop loads, that the wait in force covers the group that loaded the data the
read needs: the data of ``d`` iterations earlier, ``d`` being the plan's stage
distance from the load to its readers.

:func:`named_barrier_clash` checks that TileLang's own partial-block syncs
keep off the named barriers a plan's handoffs take.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

from .errors import PtTvmError
from .graph import DepKind, Placement, STaskGraph
from .plan import ExecutionPlan, Style

__all__ = ["cp_async_hazards", "stage_distances", "named_barrier_clash", "EmissionError"]

_SHARED = re.compile(r"void\* (\w+) = \(\(void\*\)\(\(char\*\)buf_dyn_shmem|__shared__ [^;]*?\b(\w+)\[")
_LOAD = re.compile(r"cp_async_gs\w*<\d+>\(\(&\(\(\(\w+\*\)(\w+)\)")
_WAIT = re.compile(r"cp_async_wait<(\d+)>")
_FOR = re.compile(r"^\s*for \(.*\{\s*$")
_PARTIAL_SYNC = re.compile(r"__sync_thread_partial\((\d+),")


class EmissionError(PtTvmError, RuntimeError):
    """TileLang emitted a kernel that does not do what its plan says (e.g. a cp.async wait too short)."""


@dataclass(frozen=True)
class _Event:
    kind: str  # commit, wait, load, read
    arg: str | int = ""


def _loops(lines: list[str]) -> Iterator[list[str]]:
    """Bodies of the outermost for-loops that commit cp.async groups."""
    i = 0
    while i < len(lines):
        if not _FOR.match(lines[i]):
            i += 1
            continue
        depth, j = 0, i
        while j < len(lines):
            depth += lines[j].count("{") - lines[j].count("}")
            if depth == 0:
                break
            j += 1
        body = lines[i + 1:j]
        if any("cp_async_commit" in line for line in body):
            yield body
            i = j + 1
        else:
            i += 1


def _events(body: list[str], shared: set[str]) -> list[_Event]:
    names = re.compile(r"\b(" + "|".join(sorted(shared)) + r")\b") if shared else None
    out = []
    for line in body:
        if "cp_async_commit" in line:
            out.append(_Event("commit"))
        elif m := _WAIT.search(line):
            out.append(_Event("wait", int(m.group(1))))
        elif m := _LOAD.search(line):
            out.append(_Event("load", m.group(1)))
        elif names is not None:
            out += [_Event("read", name) for name in sorted(set(names.findall(line)))]
    return out


def stage_distances(plan: ExecutionPlan, graph: STaskGraph) -> dict[str, int]:
    """Buffer -> the smallest stage distance from a loop write of it to a loop reader of it (what
    :func:`cp_async_hazards` needs of a software-pipelined plan; empty for other styles)."""
    if plan.style != Style.SOFTWARE_PIPELINE:
        return {}
    loop = {t.id for t in graph.placed(Placement.LOOP)}
    out: dict[str, int] = {}
    for e in graph.edges:
        if e.kind == DepKind.RAW and not e.distance and e.src in loop and e.dst in loop:
            d = plan.append_of(e.dst).stage - plan.append_of(e.src).stage
            out[e.buffer] = min(out.get(e.buffer, d), d)
    return out


def cp_async_hazards(source: str, distance: dict[str, int]) -> list[str]:
    """Reads in the emitted pipelined loop that may see shared memory a cp.async is still filling;
    ``distance`` is :func:`stage_distances` of the kernel's plan."""
    lines = source.splitlines()
    shared = {a or b for line in lines for a, b in _SHARED.findall(line)}
    found = []
    for body in _loops(lines):
        events = _events(body, shared)
        commits = [k for k, e in enumerate(events) if e.kind == "commit"]
        waits = [k for k, e in enumerate(events) if e.kind == "wait"]
        groups = len(commits)
        group_of = {}  # buffer -> the group (0..groups-1) of its last load in the body
        for k, e in enumerate(events):
            if e.kind == "load":
                group_of[e.arg] = sum(c < k for c in commits)
        for p, e in enumerate(events):
            if e.kind != "read" or e.arg not in group_of or e.arg not in distance:
                continue
            j, d = group_of[e.arg], distance[e.arg]
            if j >= groups:
                found.append(f"{e.arg} is loaded with cp.async but its group is never committed in the loop")
                continue
            if not waits:
                found.append(f"the loop reads {e.arg} but waits for no cp.async group")
                continue
            before = [w for w in waits if w < p]
            w, back = (before[-1], 0) if before else (waits[-1], 1)  # else the last wait of the iteration before
            after = (d - back) * groups + sum(c < w for c in commits) - 1 - j  # groups committed after the needed one
            need = events[w].arg
            if after < need:
                found.append(f"{e.arg} (loaded in cp.async group {j} of {groups} per iteration, read {d} "
                             f"iteration(s) later) is read after cp_async_wait<{need}>, which leaves it in "
                             f"flight; it needs cp_async_wait<{max(after, 0)}>")
    return sorted(set(found))


def named_barrier_clash(source: str, taken: list[int]) -> list[str]:
    """TileLang's partial-block syncs (``__sync_thread_partial(<id>, n)``) on a named barrier in ``taken``."""
    used = sorted({int(m) for m in _PARTIAL_SYNC.findall(source)} & set(taken))
    return [f"TileLang syncs its threads on named barrier {i}, which a handoff between warpgroups takes"
            for i in used]
