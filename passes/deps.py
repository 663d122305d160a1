"""Data dependences between sTasks, from the buffers they read and write.

The kernel is a straight-line prologue, a loop body repeated ``trip_count``
times, and an epilogue. For each buffer, a read depends on the writes that
reach it (RAW), a write on the reads and the write it overwrites (WAR, WAW).
Inside the loop a dependence that reaches around the back edge is
loop-carried, distance 1. A write that covers the whole buffer without
reading it ends the search (it kills older values), which keeps e.g. a score
tile re-initialised every iteration free of carried edges. Two accesses whose
regions provably share no element (constant offsets that do not meet in some
dimension: the query heads packed into one tile, loaded a box each) make no
edge, so copies into disjoint parts of one buffer are not ordered.
"""
from __future__ import annotations

from typing import Iterator, Mapping, Sequence

from pt_tvm.graph import Access, BufferInfo, DepKind, Edge, Placement, STask

__all__ = ["dependences", "kills"]


def kills(task: STask, buffer: str, buffers: Mapping[str, BufferInfo]) -> bool:
    """Whether ``task`` overwrites every element of ``buffer`` without reading it."""
    if buffer not in task.write_buffers() or buffer in task.read_buffers():
        return False
    info = buffers.get(buffer)
    if info is None or info.scope == "global":
        return False
    if "full_writes" in task.attrs:
        return buffer in task.attrs["full_writes"].split(",")
    return any(a.buffer == buffer and all(o == "0" for o in a.offsets) and tuple(a.extents) == tuple(info.shape)
               for a in task.writes)


def _disjoint(a: Access, b: Access) -> bool:
    """Whether two regions of one buffer share no element: in some dimension both offsets are constants and
    their ranges do not meet."""
    for oa, ea, ob, eb in zip(a.offsets, a.extents, b.offsets, b.extents):
        if oa.lstrip("-").isdigit() and ob.lstrip("-").isdigit() and ea is not None and eb is not None:
            if int(oa) + ea <= int(ob) or int(ob) + eb <= int(oa):
                return True
    return False


def _meet(these: Sequence[Access], those: Sequence[Access], buffer: str) -> bool:
    """Whether some access of ``buffer`` among ``these`` may touch an element that one among ``those`` does."""
    return any(not _disjoint(a, b) for a in these if a.buffer == buffer for b in those if b.buffer == buffer)


def _backward(task: STask, pro: Sequence[STask], loop: Sequence[STask],
              epi: Sequence[STask]) -> Iterator[tuple[STask, int]]:
    """Earlier statement instances, nearest first, with their loop distance (one iteration back at most)."""
    p = task.index
    if task.placement == Placement.PROLOGUE:
        yield from ((t, 0) for t in reversed(pro[:p]))
    elif task.placement == Placement.LOOP:
        yield from ((t, 0) for t in reversed(loop[:p]))
        yield from ((t, 1) for t in reversed(loop[p:]))
        yield from ((t, 0) for t in reversed(pro))
    else:
        yield from ((t, 0) for t in reversed(epi[:p]))
        yield from ((t, 0) for t in reversed(loop))
        yield from ((t, 0) for t in reversed(pro))


def dependences(stasks: Sequence[STask], buffers: Mapping[str, BufferInfo]) -> tuple[Edge, ...]:
    """RAW, WAR and WAW edges (with loop distances) between ``stasks`` in program order."""
    pro = [t for t in stasks if t.placement == Placement.PROLOGUE]
    loop = [t for t in stasks if t.placement == Placement.LOOP]
    epi = [t for t in stasks if t.placement == Placement.EPILOGUE]
    edges: dict[tuple, Edge] = {}

    def add(src: STask, dst: STask, kind: DepKind, buf: str, dist: int) -> None:
        edge = Edge(src.id, dst.id, kind, buf, dist)
        edges.setdefault((edge.src, edge.dst, kind, buf, dist), edge)

    for task in stasks:
        for buf in sorted(task.read_buffers()):  # RAW: the writes that reach this read
            for prev, dist in _backward(task, pro, loop, epi):
                if _meet(prev.writes, task.reads, buf):
                    add(prev, task, DepKind.RAW, buf, dist)
                    if kills(prev, buf, buffers):
                        break
        for buf in sorted(task.write_buffers()):  # WAR / WAW: what this write must not overtake
            rmw = buf in task.read_buffers()
            for prev, dist in _backward(task, pro, loop, epi):
                if prev is task:
                    if not rmw:
                        add(prev, task, DepKind.WAW, buf, dist)
                    break
                if _meet(prev.reads, task.writes, buf):
                    add(prev, task, DepKind.WAR, buf, dist)
                if _meet(prev.writes, task.writes, buf):
                    add(prev, task, DepKind.WAW, buf, dist)
                    break
    return tuple(edges.values())
