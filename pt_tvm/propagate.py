"""Propagate: carry a new tile extent from a few buffer dims to every sTask of a graph.

PipeThreader's Propagate primitive, by axis unification. The dims of the
on-chip (shared, fragment, local) buffers are grouped into classes of dims
that must share one tile extent: a gemm ties its operands' M, N and K dims, a
copy between two on-chip buffers ties their non-unit dims in order, a reduce
ties its source's kept dims to its destination's, and a ``T.Parallel`` nest
ties the dims one loop variable indexes. Fills relate nothing and global
buffers are never tiled. Setting an extent on one dim (an *anchor*) sets it on
its whole class; every buffer shape, sTask tile, work count, access extent,
the pipelined loop's trip count and the grid are then rescaled to match.

What is rescaled, and how
-------------------------
- Buffer shapes: each dim in an anchored class takes the anchor's extent.
- Access extents: an on-chip region's extent scales by its dim's new/old
  ratio (rounding up); a copy's (or atomic's) global region matches its
  non-unit dims, in order, with the non-unit dims of the on-chip side and
  scales with them. Offsets are left as written (``bx * 128`` stays ``bx * 128``
  after block_M becomes 64): they are strings of the original kernel, and the
  cost model reads only which launch indices they name (``block_vars``).
- Tiles and work: gemm (M, N, K) follow C's rows, C's columns and A's K dim,
  FLOPs scale by M*N*K and the operand bytes are recounted; copies, atomics,
  fills and reduces take their tiles from their rescaled regions as
  extraction does, and their FLOPs/SFU ops/bytes scale with the elements of
  their on-chip side (copy, atomic), source (reduce) or destination (fill);
  a ``T.Parallel`` nest's loop extents follow the dims its loop variables
  index, and its work scales with their product.
- Pipelined loop: a copy in the loop whose global offset names the loop
  variable (``K[.., k * 128, ..]``) tells which on-chip dim the loop advances;
  the trip count scales by that dim's old/new extent (rounded up when it was a
  whole number) and an integer-literal ``extent`` string is rewritten to match.
  A trip count averaged over the grid (a causal mask) is scaled as if it
  depended on that dim alone, which is exact only when the ceil-divisions it
  averages are exact (e.g. causal FA with block_M == block_N before and after).
- Grid: a launch index named in the global offset of a tiled (non-unit) dim of
  a copy (``Q[bz, bx * 128, ..]``) advances that dim's class; its extent scales
  by old/new, rounded up.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Iterable, Iterator, Mapping

from .graph import Access, BufferInfo, LoopInfo, OpKind, STask, STaskGraph, dtype_bytes

__all__ = ["Propagate", "PropagateError", "tile_anchors", "Dim"]

Dim = tuple[str, int]  # (buffer name, dim index)


class PropagateError(ValueError):
    """An anchor Propagate cannot honour, or a graph whose tiles it cannot relate."""


# ---------------------------------------------------------------- axis classes
class _Classes:
    """Union-find over the on-chip (buffer, dim) pairs: which dims share one tile extent."""

    def __init__(self, dims: Iterable[Dim]) -> None:
        self._parent: dict[Dim, Dim] = {d: d for d in dims}

    def __contains__(self, d: Dim) -> bool:
        return d in self._parent

    def find(self, d: Dim) -> Dim:
        """The representative of ``d``'s class (with path halving)."""
        while self._parent[d] != d:
            self._parent[d] = self._parent[self._parent[d]]
            d = self._parent[d]
        return d

    def union(self, a: Dim, b: Dim) -> None:
        """Merge the classes of ``a`` and ``b``; dims of global buffers are not tiled and are ignored."""
        if a in self and b in self:
            self._parent[self.find(a)] = self.find(b)


def _axis_classes(graph: STaskGraph) -> _Classes:
    """The dim classes of ``graph``'s on-chip buffers, unified over every sTask's relations."""
    classes = _Classes((name, d) for name, b in graph.buffers.items() if b.scope != "global"
                       for d in range(len(b.shape)))
    for t in graph.stasks:
        for a, b in _relations(t, graph.buffers):
            classes.union(a, b)
    return classes


def _relations(t: STask, buffers: Mapping[str, BufferInfo]) -> Iterator[tuple[Dim, Dim]]:
    """Pairs of dims that ``t`` forces to share one extent."""
    if t.op == OpKind.GEMM:
        yield from _gemm_relations(t, buffers)
    elif t.op in (OpKind.COPY, OpKind.ATOMIC) and "global" not in (t.reads[0].scope, t.writes[0].scope):
        yield from zip(_nonunit_dims(t.reads[0]), _nonunit_dims(t.writes[0]))
    elif t.op == OpKind.REDUCE:
        yield from _reduce_relations(t, buffers)
    elif t.op == OpKind.ELEMENTWISE:
        yield from _elementwise_relations(t)


def _gemm_dims(t: STask, buffers: Mapping[str, BufferInfo]) -> dict[str, list[Dim]]:
    """``{"M": [...], "N": [...], "K": [...]}``: the operand dims of each gemm axis (C's first)."""
    a, b, c = t.reads[0].buffer, t.reads[1].buffer, t.writes[0].buffer
    ra, rb, rc = (len(buffers[x].shape) for x in (a, b, c))
    trans_a, trans_b = t.attrs.get("trans_a") == "True", t.attrs.get("trans_b") == "True"
    a_m, a_k = (ra - 1, ra - 2) if trans_a else (ra - 2, ra - 1)
    b_k, b_n = (rb - 1, rb - 2) if trans_b else (rb - 2, rb - 1)
    return {"M": [(c, rc - 2), (a, a_m)], "N": [(c, rc - 1), (b, b_n)], "K": [(a, a_k), (b, b_k)]}


def _gemm_relations(t: STask, buffers: Mapping[str, BufferInfo]) -> Iterator[tuple[Dim, Dim]]:
    """A/B/C dims of one gemm axis are one class."""
    for dims in _gemm_dims(t, buffers).values():
        yield from zip(dims, dims[1:])


def _reduce_relations(t: STask, buffers: Mapping[str, BufferInfo]) -> Iterator[tuple[Dim, Dim]]:
    """The source's kept dims pair in order with the destination's (which may keep the reduced dim)."""
    src, dst = t.reads[0].buffer, t.writes[0].buffer
    rs, rd = len(buffers[src].shape), len(buffers[dst].shape)
    dim = int(t.attrs.get("dim", "-1")) % rs
    kept = [d for d in range(rs) if d != dim]
    targets = [d for d in range(rd) if d != dim] if rd == rs else list(range(rd))
    if len(kept) != len(targets):
        raise PropagateError(f"sTask {t.id}: cannot relate the dims of reduce {src} (rank {rs}, dim {dim}) "
                             f"-> {dst} (rank {rd})")
    yield from (((src, s), (dst, d)) for s, d in zip(kept, targets))


def _elementwise_relations(t: STask) -> Iterator[tuple[Dim, Dim]]:
    """Dims indexed by the same loop variable are one class."""
    by_var: dict[str, list[Dim]] = {}
    for buf, names in _parse_axes(t.attrs.get("axes", "")):
        for d, var in enumerate(names):
            if var != "-":
                by_var.setdefault(var, []).append((buf, d))
    for dims in by_var.values():
        yield from zip(dims, dims[1:])


def _parse_axes(axes: str) -> list[tuple[str, list[str]]]:
    """``"acc_s:i,j;scores_max:i"`` -> ``[("acc_s", ["i", "j"]), ("scores_max", ["i"])]``."""
    out = []
    for entry in filter(None, axes.split(";")):
        buf, _, names = entry.rpartition(":")
        out.append((buf, names.split(",") if names else []))
    return out


def _nonunit_dims(a: Access) -> list[Dim]:
    """The dims of a region whose extent is not 1, in order (how copies pair dims)."""
    return [(a.buffer, d) for d, e in enumerate(a.extents) if e != 1]


# ---------------------------------------------------------------- anchors -> shapes
def _new_shapes(graph: STaskGraph, classes: _Classes, tile: Mapping[Dim, int]) -> dict[str, tuple]:
    """Every on-chip buffer's shape with the anchors' extents set on their whole classes."""
    extent_of: dict[Dim, tuple[Dim, int]] = {}
    for anchor, extent in tile.items():
        _check_anchor(graph, anchor, extent)
        root = classes.find(anchor)
        if root in extent_of and extent_of[root][1] != extent:
            other, prior = extent_of[root]
            raise PropagateError(f"conflicting anchors: {anchor}={extent} and {other}={prior} "
                                 f"are dims of one class and must share an extent")
        extent_of[root] = (anchor, extent)
    return {name: tuple(extent_of.get(classes.find((name, d)), (None, s))[1] for d, s in enumerate(b.shape))
            for name, b in graph.buffers.items() if b.scope != "global"}


def _check_anchor(graph: STaskGraph, anchor: Dim, extent: int) -> None:
    """An anchor names a dim of an on-chip buffer and a positive int extent."""
    if not (isinstance(anchor, tuple) and len(anchor) == 2):
        raise PropagateError(f"an anchor is a (buffer, dim) pair, got {anchor!r}")
    name, dim = anchor
    info = graph.buffers.get(name)
    if info is None:
        raise PropagateError(f"anchor {anchor}: graph {graph.name!r} has no buffer {name!r}")
    if info.scope == "global":
        raise PropagateError(f"anchor {anchor}: {name!r} is a global buffer, whose shape is the problem's, "
                             f"not a tile")
    if not isinstance(dim, int) or isinstance(dim, bool) or not 0 <= dim < len(info.shape):
        raise PropagateError(f"anchor {anchor}: {name!r} has dims 0..{len(info.shape) - 1}")
    if not isinstance(extent, int) or isinstance(extent, bool) or extent <= 0:
        raise PropagateError(f"anchor {anchor}: the extent must be a positive int, got {extent!r}")


# ---------------------------------------------------------------- rescaling
@dataclass(frozen=True)
class _Scaling:
    """Old buffers and new on-chip shapes: the new/old ratio of each on-chip dim."""

    buffers: Mapping[str, BufferInfo]
    shapes: Mapping[str, tuple]

    def ratio(self, dim: Dim) -> Fraction:
        """New over old extent of an on-chip dim (1 when either is unknown)."""
        name, d = dim
        old, new = self.buffers[name].shape[d], self.shapes[name][d]
        return Fraction(new, old) if old and new else Fraction(1)

    def local(self, a: Access) -> Access:
        """An on-chip region with each extent scaled by its dim's ratio."""
        return replace(a, extents=tuple(_scale(e, self.ratio((a.buffer, d))) for d, e in enumerate(a.extents)))

    def global_(self, a: Access, local: Access) -> Access:
        """A copy's global region, its non-unit dims scaled with the on-chip side's, in order."""
        pairs = _matched(a, local)
        if pairs is None:
            if any(self.ratio(d) != 1 for d in _nonunit_dims(local)):
                raise PropagateError(f"cannot match the dims of {a.describe()} with {local.describe()}")
            return a
        extents = list(a.extents)
        for gd, ld in pairs:
            extents[gd] = _scale(extents[gd], self.ratio(ld))
        return replace(a, extents=tuple(extents))

    def access(self, a: Access, local: Access | None) -> Access:
        """Any region: on-chip ones scale with their dims, global ones with ``local`` (if given)."""
        if a.scope != "global":
            return self.local(a)
        return self.global_(a, local) if local is not None else a


def _scale(extent: int | None, ratio: Fraction) -> int | None:
    """``extent * ratio`` rounded up; unknown extents stay unknown."""
    return None if extent is None else math.ceil(extent * ratio)


def _matched(g: Access, local: Access) -> list[tuple[int, Dim]] | None:
    """Pairs (global dim, on-chip dim) of a copy's non-unit dims in order; None if the counts differ."""
    gdims = [d for d, e in enumerate(g.extents) if e != 1]
    ldims = _nonunit_dims(local)
    return list(zip(gdims, ldims)) if len(gdims) == len(ldims) else None


def _elements_ratio(old: Access, new: Access) -> Fraction:
    """New over old element count of one region (1 when unknown or empty)."""
    o, n = old.elements(), new.elements()
    return Fraction(n, o) if o and n else Fraction(1)


def _nonunit(extents: tuple) -> tuple[int, ...]:
    """A tile from region extents, as extraction forms it: unit and unknown dims dropped."""
    return tuple(e for e in extents if e is not None and e != 1) or (1,)


def _rescale_stask(t: STask, s: _Scaling) -> STask:
    """``t`` with its regions, tile and work rescaled to the new shapes."""
    if t.op == OpKind.GEMM:
        return _rescale_gemm(t, s)
    if t.op == OpKind.ELEMENTWISE:
        return _rescale_elementwise(t, s)
    local = _local_side(t)
    reads = tuple(s.access(a, local) for a in t.reads)
    writes = tuple(s.access(a, local) for a in t.writes)
    if t.op in (OpKind.COPY, OpKind.ATOMIC):
        ratio = _elements_ratio(local, s.local(local)) if local is not None else Fraction(1)
        tile = _nonunit(writes[0].extents)
    elif t.op == OpKind.REDUCE:
        tile, ratio = _nonunit(reads[0].extents), _elements_ratio(t.reads[0], reads[0])
    else:  # FILL
        tile, ratio = _nonunit(writes[0].extents), _elements_ratio(t.writes[0], writes[0])
    return _with_work(t, tile, reads, writes, ratio)


def _local_side(t: STask) -> Access | None:
    """The on-chip region a copy or atomic moves (its source when both sides are on chip)."""
    if t.op not in (OpKind.COPY, OpKind.ATOMIC):
        return None
    return next((a for a in (t.reads[0], t.writes[0]) if a.scope != "global"), None)


def _with_work(t: STask, tile: tuple[int, ...], reads: tuple[Access, ...], writes: tuple[Access, ...],
               ratio: Fraction) -> STask:
    """``t`` with new regions and tile, FLOPs/SFU ops/bytes scaled by ``ratio``."""
    return replace(t, tile_shape=tile, reads=reads, writes=writes, flops=float(t.flops * ratio),
                   sfu_ops=float(t.sfu_ops * ratio), bytes=float(t.bytes * ratio))


def _rescale_gemm(t: STask, s: _Scaling) -> STask:
    """(M, N, K) follow C's rows and columns and A's K dim; FLOPs scale by M*N*K, bytes are recounted."""
    dims = _gemm_dims(t, s.buffers)
    tile = tuple(_scale(e, s.ratio(dims[axis][0])) for e, axis in zip(t.tile_shape, "MNK"))
    reads, writes = tuple(s.access(a, None) for a in t.reads), tuple(s.access(a, None) for a in t.writes)
    operand_bytes = sum((a.elements() or 0) * dtype_bytes(s.buffers[a.buffer].dtype)
                        for a in reads[:2] if a.scope == "shared")
    ratio = Fraction(math.prod(tile), math.prod(t.tile_shape))
    return replace(_with_work(t, tile, reads, writes, ratio), bytes=float(operand_bytes))


def _rescale_elementwise(t: STask, s: _Scaling) -> STask:
    """Loop extents follow the dims their variables index; work scales with the iteration count."""
    reads, writes = tuple(s.access(a, None) for a in t.reads), tuple(s.access(a, None) for a in t.writes)
    loops = _loop_dims(t)
    if len(loops) != len(t.tile_shape):
        if any(s.ratio((buf, d)) != 1 for buf, names in _parse_axes(t.attrs.get("axes", "")) if buf in s.shapes
               for d in range(len(names))):
            raise PropagateError(f"sTask {t.id}: cannot tell which of its {len(t.tile_shape)} loops each "
                                 f"index variable of {t.attrs.get('axes')!r} is")
        return replace(t, reads=reads, writes=writes)
    tile = tuple(e if d is None else _scale(e, s.ratio(d))
                 for e, d in zip(t.tile_shape, loops))
    return _with_work(t, tile, reads, writes, Fraction(math.prod(tile), math.prod(t.tile_shape) or 1))


def _loop_dims(t: STask) -> list[Dim | None]:
    """For each loop variable of a ``T.Parallel`` nest, an on-chip dim it indexes (None if it indexes none).

    The graph keeps no loop order, so the variables are taken to nest in the order they first
    index the written buffers, then the read ones (``for i, j in T.Parallel(..): C[i, j] = ..``).
    """
    written = t.write_buffers()
    axes = _parse_axes(t.attrs.get("axes", ""))
    ordered = [x for x in axes if x[0] in written] + [x for x in axes if x[0] not in written]
    dims: dict[str, list[Dim]] = {}
    for buf, names in ordered:
        for d, var in enumerate(names):
            if var != "-":
                dims.setdefault(var, []).append((buf, d))
    local = {a.buffer for a in (*t.reads, *t.writes) if a.scope != "global"}
    return [next((d for d in ds if d[0] in local), None) for ds in dims.values()]


def _single_ratio(dims: Iterable[Dim], s: _Scaling, what: str) -> Fraction:
    """The one new/old ratio shared by ``dims`` (1 for none); raises if they disagree."""
    ratios = {d: s.ratio(d) for d in dims}
    if len(set(ratios.values())) > 1:
        listing = ", ".join(f"{d}: x{r}" for d, r in ratios.items())
        raise PropagateError(f"{what} advances dims whose tiles change differently ({listing})")
    return next(iter(ratios.values()), Fraction(1))


def _tied_dims(var: str, stasks: Iterable[STask]) -> list[Dim]:
    """On-chip dims whose copies' global offsets name ``var`` on a tiled dim."""
    pattern = re.compile(rf"(?<![\w.]){re.escape(var)}(?![\w.])")
    out = []
    for t in stasks:
        local = _local_side(t)
        for g in (a for a in (*t.reads, *t.writes) if a.scope == "global" and local is not None):
            out += [ld for gd, ld in _matched(g, local) or () if pattern.search(g.offsets[gd])]
    return out


def _rescale_loop(graph: STaskGraph, s: _Scaling) -> LoopInfo:
    """The pipelined loop's trip count divided by the growth of the dim it advances."""
    loop = graph.loop
    ratio = _single_ratio(_tied_dims(loop.var, graph.loop_stasks), s, f"loop {loop.var!r}")
    trips = loop.trip_count / ratio
    if float(loop.trip_count).is_integer():
        trips = math.ceil(trips)
    extent = str(int(trips)) if loop.extent.isdigit() else loop.extent
    return replace(loop, trip_count=float(trips), extent=extent)


def _rescale_grid(graph: STaskGraph, s: _Scaling) -> dict[str, int | None]:
    """Each launch extent divided (rounding up) by the growth of the dim its index tiles."""
    grid = {}
    for var, extent in graph.grid.items():
        ratio = _single_ratio(_tied_dims(var, graph.stasks), s, f"launch index {var!r}")
        grid[var] = None if extent is None else math.ceil(extent / ratio)
    return grid


# ---------------------------------------------------------------- entry points
def Propagate(graph: STaskGraph, tile: Mapping[Dim, int]) -> STaskGraph:
    """``graph`` retiled: each anchor ``(buffer, dim) -> extent`` set on its class, all else rescaled.

    Raises PropagateError for an unknown or global buffer, a dim out of range, a non-positive
    extent, or two anchors in one class with different extents. Edges are unchanged.
    """
    shapes = _new_shapes(graph, _axis_classes(graph), tile)
    s = _Scaling(graph.buffers, shapes)
    buffers = {name: replace(b, shape=shapes[name]) if name in shapes else b for name, b in graph.buffers.items()}
    return replace(graph, stasks=tuple(_rescale_stask(t, s) for t in graph.stasks), buffers=buffers,
                   loop=_rescale_loop(graph, s), grid=_rescale_grid(graph, s))


def tile_anchors(graph: STaskGraph, tile_params: Mapping[str, int]) -> dict[Dim, int]:
    """Anchors for the conventional tile names ``block_M``, ``block_N`` and ``block_K``.

    - ``block_M``: dim 0 of the output fragment, the fragment whose copies feed the kernel's
      last copy into a global buffer (``C_l``, ``acc_o``).
    - ``block_K``: the on-chip dim the pipelined loop advances (``A_s`` dim 1).
    - ``block_N``: that loop-advanced dim when its class holds a gemm's output columns (the loop
      walks key blocks, as in attention: ``K_shared`` dim 0), else dim 1 of the output fragment.

    Any other name (``threads`` included) raises PropagateError: pass only tile extents.
    """
    anchors = {}
    for name, value in tile_params.items():
        if name == "block_M":
            anchor = (_output_fragment(graph), 0)
        elif name == "block_K":
            anchor = _loop_advanced(graph)
        elif name == "block_N":
            anchor = _block_n(graph)
        else:
            raise PropagateError(f"tile parameter {name!r} has no conventional anchor "
                                 f"(known: block_M, block_N, block_K); pass (buffer, dim) anchors")
        anchors[anchor] = value
    return anchors


def _output_fragment(graph: STaskGraph) -> str:
    """The fragment the last global store copies out, found by following its copies back."""
    stores = [t for t in graph.stasks if t.op == OpKind.COPY and t.writes[0].scope == "global"]
    if not stores:
        raise PropagateError(f"graph {graph.name!r} has no copy into a global buffer: no output fragment")
    pos, src = graph.stasks.index(stores[-1]), stores[-1].reads[0]
    while src.scope != "fragment":
        feeders = [i for i, t in enumerate(graph.stasks[:pos])
                   if t.op == OpKind.COPY and src.buffer in t.write_buffers()]
        if not feeders:
            raise PropagateError(f"graph {graph.name!r}: the output {src.buffer!r} is not copied from a fragment")
        pos, src = feeders[-1], graph.stasks[feeders[-1]].reads[0]
    return src.buffer


def _loop_advanced(graph: STaskGraph) -> Dim:
    """The on-chip dim the pipelined loop advances (named by its variable in a copy's global offset)."""
    dims = _tied_dims(graph.loop.var, graph.loop_stasks)
    if not dims:
        raise PropagateError(f"graph {graph.name!r}: no copy in the loop offsets a global buffer by "
                             f"{graph.loop.var!r}, so no dim is known to be advanced by the loop")
    return dims[0]


def _block_n(graph: STaskGraph) -> Dim:
    """``block_N``: the loop-advanced dim if it is a gemm's output columns, else output fragment dim 1."""
    classes = _axis_classes(graph)
    advanced = _tied_dims(graph.loop.var, graph.loop_stasks)
    columns = {classes.find(_gemm_dims(t, graph.buffers)["N"][0]) for t in graph.stasks if t.op == OpKind.GEMM}
    if advanced and classes.find(advanced[0]) in columns:
        return advanced[0]
    frag = _output_fragment(graph)
    if len(graph.buffers[frag].shape) < 2:
        raise PropagateError(f"graph {graph.name!r}: output fragment {frag!r} has no dim 1 for block_N")
    return frag, 1
