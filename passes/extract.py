"""ExtractSTaskGraph: read a TileLang PrimFunc's tile ops into an sTask-graph.

Works on the tile-op IR as written (before layout inference): the body of the
``tilelang_root`` block is a sequence of tile-op calls (``tl.tileop.copy``,
``gemm``, ``fill``, ``reduce``, ...), ``T.Parallel`` nests, and one pipelined
loop (a serial loop annotated by ``T.Pipelined``). Each top-level statement of
the block and of the loop body becomes an sTask; dependences come from the
buffers each statement reads and writes (see :mod:`pt_tvm.passes.deps`).
"""
from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Any, Callable, Mapping, Sequence

import tvm_ffi
from tilelang import tvm
from tvm import tirx

from pt_tvm import hw
from pt_tvm.errors import SymbolicSizeWarning
from pt_tvm.graph import (
    BLOCK_SYNC,
    BOX_OFF_BOUNDARY,
    Access,
    BufferInfo,
    LoopInfo,
    OpKind,
    Placement,
    STask,
    STaskGraph,
    dtype_bytes,
    symbols_text,
)
from pt_tvm.hw import SEUKind

from .deps import dependences
from .ir import (
    LOOP_ID,
    PIPELINE_KEYS,
    ExtractionError,
    annotation_str,
    find_root_block,
    is_block_scalar,
    is_pipelined,
    launch_info,
    op_name,
    stask_ids,
    symbolic_sizes,
    text,
    top_level,
)

__all__ = ["ExtractSTaskGraph", "extract_stask_graph", "graph_of", "graph_for", "ExtractionError", "GRAPH_ATTR",
           "HINTS_ATTR", "SYMBOLIC_HINT"]

GRAPH_ATTR = "pt.stask_graph"  # PrimFunc attribute holding the graph as JSON
HINTS_ATTR = "pt.symbol_hints"  # PrimFunc attribute: {symbolic size: value to price it at}, the kernel author's
SYMBOLIC_HINT = 4096  # what a symbolic size (T.dynamic) is priced at when neither the caller nor the kernel says

# An error raised inside a pass crosses TVM's FFI; registered classes come back out of
# ``mod = pass(mod)`` as themselves instead of a RuntimeError.
for _error in (ExtractionError, hw.HardwareError):
    tvm_ffi.register_error(_error)
_MATH_CALLS = {"tirx.exp2": 1, "tirx.exp": 1, "tirx.log": 1, "tirx.log2": 1, "tirx.sqrt": 1,
               "tirx.rsqrt": 1, "tirx.tanh": 1, "tirx.sigmoid": 1, "tirx.sin": 1, "tirx.cos": 1,
               "tirx.pow": 1, "tirx.erf": 1}
_ARITH = (tirx.Add, tirx.Sub, tirx.Mul, tirx.Div, tirx.FloorDiv, tirx.FloorMod, tirx.Max, tirx.Min,
          tirx.Select)
_COPY_OPS = {"tl.tileop.copy", "tl.tileop.async_copy", "tl.tileop.tma_copy", "tl.tileop.transpose"}
_GEMM_OPS = {"tl.tileop.gemm", "tl.tileop.wgmma_gemm"}
_REDUCE_OPS = {"tl.tileop.reduce", "tl.tileop.cumsum", "tl.tileop.cummax"}
_ATOMIC_OPS = {"tl.tileop.atomicadd", "tl.tileop.atomicmax", "tl.tileop.atomicmin"}
_BLOCK_BARRIER = "tirx.tvm_storage_sync"  # T.sync_threads(): with no barrier id, every thread of the block


def extract_stask_graph(func: tirx.PrimFunc, target: Any = None, hints: Mapping[str, int] | None = None
                        ) -> STaskGraph:
    """The sTask-graph of a TileLang PrimFunc for ``target`` (TVM Target, dict or chip name).

    Symbolic sizes (``T.dynamic``) are priced at ``hints`` (``{"M": 4096}``), else at the values the kernel's
    attribute :data:`HINTS_ATTR` gives; one without either at :data:`SYMBOLIC_HINT`, with a
    :class:`~pt_tvm.errors.SymbolicSizeWarning` naming it. The graph records the values in ``symbols``.

    Raises
    ------
    ExtractionError
        The function is not a TileLang kernel, has no (or more than one) pipelined
        loop, uses a tile op pt-tvm does not model, or ``hints`` name no symbolic size of it.
    """
    if not isinstance(func, tirx.PrimFunc):
        raise ExtractionError(f"expected a tirx.PrimFunc, got {type(func).__name__}")
    vdev = hw.for_target(_current_target() if target is None else target)
    name = text(func.attrs["global_symbol"]) if func.attrs and "global_symbol" in func.attrs else "main"
    block = find_root_block(func, name)
    symbols = _symbols(func, name, hints or {})
    grid, threads = launch_info(func, block, symbols)
    buffers = _buffers(func, block, symbols)
    binds = {s.var: s.value for s in top_level(block.body) if isinstance(s, tirx.Bind)}
    stmts = [s for s in top_level(block.body) if not is_block_scalar(s)]
    loops = [i for i, s in enumerate(stmts) if is_pipelined(s)]
    if not loops and _has_nested_pipelined(block.body):
        raise ExtractionError(
            f"PrimFunc {name!r}: its T.Pipelined loop is nested inside another statement (a T.serial loop, a "
            f"branch); pt-tvm schedules a pipelined loop written at the top level of the kernel body")
    if not loops:
        raise ExtractionError(
            f"PrimFunc {name!r} has no pipelined loop: pt-tvm schedules the loop written with "
            f"T.Pipelined(...) (a serial loop annotated with one of {', '.join(PIPELINE_KEYS)})")
    if len(loops) > 1:
        raise ExtractionError(f"PrimFunc {name!r} has {len(loops)} pipelined loops; pt-tvm schedules exactly one")
    loop = stmts[loops[0]]
    extent = tirx.stmt_functor.substitute(loop.extent, {**binds, **symbols}) if binds or symbols else loop.extent
    body = [s for s in top_level(loop.body) if not isinstance(s, tirx.Bind)]
    pro, epi = stmts[:loops[0]], stmts[loops[0] + 1:]
    ids = stask_ids([*pro, *body, *epi], [_kind_of(s, name) for s in [*pro, *body, *epi]])
    block_vars = _Launch.of(grid, [s for s in top_level(block.body) if isinstance(s, tirx.Bind)])

    steps = _Steps(loop.loop_var, extent, grid, block_vars.binds)

    def make(stmts_: Sequence[tirx.Stmt], placement: Placement, offset: int) -> list[STask]:
        return [_stask(s, ids[offset + i], placement, i, buffers, vdev, block_vars, name,
                       steps if placement == Placement.LOOP else None)
                for i, s in enumerate(stmts_)]

    stasks = [*make(pro, Placement.PROLOGUE, 0), *make(body, Placement.LOOP, len(pro)),
              *make(epi, Placement.EPILOGUE, len(pro) + len(body))]
    _check_loaded_in_full(stasks, name)
    trips = _trip_counts(extent, grid)
    loop_info = LoopInfo(
        id=annotation_str(loop.annotations.get("tl.ws_op_id")) or LOOP_ID,
        var=loop.loop_var.name,
        extent=text(loop.extent),
        trip_count=trips[0],
        annotations={text(k): text(v) for k, v in loop.annotations.items()},
        max_trip_count=trips[1] if trips[1] > trips[0] else 0.0,
        block_trips=trips[2],
        trips_index=trips[3],
    )
    return STaskGraph(name=name, target=vdev.name, stasks=tuple(stasks), edges=dependences(stasks, buffers),
                      buffers=buffers, loop=loop_info, grid={k: v[1] for k, v in grid.items()}, threads=threads,
                      symbols={text(v.name): n for v, n in symbols.items()})


def ExtractSTaskGraph(target: Any = None, sink: Callable[[STaskGraph], None] | None = None,
                      hints: Mapping[str, int] | None = None) -> tvm.transform.Pass:
    """An analysis pass: attaches each PrimFunc's sTask-graph (JSON) as attribute ``pt.stask_graph``.

    Parameters
    ----------
    target : Target, dict or str, optional
        The target to map sTasks onto; defaults to the current ``with Target``.
    sink : callable, optional
        Called with each extracted :class:`STaskGraph` (e.g. ``graphs.append``).
    hints : mapping, optional
        Values to price symbolic sizes at (see :func:`extract_stask_graph`).
    """

    def transform(func: tirx.PrimFunc, mod: Any, ctx: Any) -> tirx.PrimFunc:
        graph = extract_stask_graph(func, target, hints)
        if sink is not None:
            sink(graph)
        return func.with_attr(GRAPH_ATTR, graph.to_json(indent=None))

    return tirx.transform.prim_func_pass(transform, opt_level=0, name="pt.ExtractSTaskGraph")


def graph_of(func: tirx.PrimFunc) -> STaskGraph | None:
    """The graph an earlier ExtractSTaskGraph attached to ``func``, if any."""
    if func.attrs is None or GRAPH_ATTR not in func.attrs:
        return None
    return STaskGraph.from_json(str(func.attrs[GRAPH_ATTR]))


def graph_for(func: tirx.PrimFunc, target: Any = None, hints: Mapping[str, int] | None = None) -> STaskGraph:
    """``func``'s sTask-graph for ``target``: the one ExtractSTaskGraph attached, when it was extracted for
    this chip (and the symbolic sizes ``hints`` name were priced at those values), else extracted now (the
    passes after the extraction read its attribute instead of re-reading the IR)."""
    vdev = hw.for_target(_current_target() if target is None else target)
    attached = graph_of(func)
    if attached is not None and attached.target == vdev.name and all(vdev.eu.has(t.seu) for t in attached.stasks) \
            and all(attached.symbols.get(k) == v for k, v in (hints or {}).items()):
        return attached
    return extract_stask_graph(func, vdev, hints)


# ---------------------------------------------------------------- helpers
def _check_loaded_in_full(stasks: Sequence[STask], fname: str) -> None:
    """Refuse a loop whose copies into a shared tile write fewer elements than a gemm of the loop reads from it
    (and nothing before the loop writes it): the gemm would read elements no copy wrote, a silently wrong kernel.
    A count, not a proof of coverage: it catches a template whose copies leave part of the tile unloaded."""
    loop = [t for t in stasks if t.placement == Placement.LOOP]
    before = {b for t in stasks if t.placement == Placement.PROLOGUE for b in t.write_buffers()}
    for gemm in (t for t in loop if t.op == OpKind.GEMM):
        for read in gemm.reads:
            writers = [t for t in loop if read.buffer in t.write_buffers()]
            writes = [a.elements() for t in writers for a in t.writes if a.buffer == read.buffer]
            if (read.scope != "shared" or read.buffer in before or not any(t.op == OpKind.COPY for t in writers)
                    or None in (read.elements(), *writes)):
                continue
            written = sum(writes)
            if written < read.elements():
                raise ExtractionError(
                    f"PrimFunc {fname!r}: the pipelined loop writes {written} elements of {read.buffer} a step "
                    f"and its gemm {gemm.id} reads {read.elements()} ({read.describe()}): the copies leave part of "
                    f"the tile unloaded")


def _current_target() -> Any:
    target = tvm.target.Target.current(allow_none=True)
    if target is None:
        raise ExtractionError("no target: pass target=... or call inside `with tvm.target.Target(...)`")
    return target


def _scope(buf: tirx.Buffer) -> str:
    s = buf.scope()
    if s.startswith("shared"):
        return "shared"
    if s == "local.fragment":
        return "fragment"
    if s.startswith("local"):
        return "local"
    return "global"


def _ints(values: Sequence[Any]) -> tuple[int | None, ...]:
    return tuple(int(v) if isinstance(v, tirx.IntImm) else None for v in values)


def _buffers(func: tirx.PrimFunc, block: tirx.SBlock, symbols: Mapping[tirx.Var, int]) -> dict[str, BufferInfo]:
    bufs = {}
    views = []  # T.decl_buffer views of a parameter's memory, declared ahead of the kernel's launch
    tirx.stmt_functor.post_order_visit(func.body, lambda n: views.append(n.buffer)
                                       if isinstance(n, tirx.DeclBuffer) else None)
    for b in [*func.buffer_map.values(), *block.alloc_buffers, *views]:
        shape, strides = ([tirx.stmt_functor.substitute(d, dict(symbols)) for d in dims] if symbols else dims
                          for dims in (b.shape, b.strides))
        bufs[text(b.name)] = BufferInfo(name=text(b.name), shape=_ints(shape), dtype=text(b.dtype), scope=_scope(b),
                                        strides=_ints(strides))
    return bufs


def _symbols(func: tirx.PrimFunc, fname: str, hints: Mapping[str, int]) -> dict[tirx.Var, int]:
    """The symbolic sizes of ``func``'s buffers (``T.dynamic``), each with the value it is priced at: its hint,
    else :data:`SYMBOLIC_HINT` with a warning naming it."""
    found = symbolic_sizes(func)
    if func.attrs is not None and HINTS_ATTR in func.attrs:
        hints = {**{text(k): int(v) for k, v in func.attrs[HINTS_ATTR].items()}, **hints}
    unknown = sorted(set(hints) - set(found))
    if unknown:
        raise ExtractionError(f"hints name {', '.join(map(repr, unknown))}, which PrimFunc {fname!r} has no symbolic "
                              f"size of (its symbolic sizes: {', '.join(found) or 'none'})")
    for key, value in hints.items():
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ExtractionError(f"hint {key!r} must be a positive int (the size to price), got {value!r}")
    values = {found[k]: hints.get(k, SYMBOLIC_HINT) for k in found}
    missing = [k for k in found if k not in hints]
    if missing:
        priced = symbols_text({k: SYMBOLIC_HINT for k in missing})
        warnings.warn(f"PrimFunc {fname!r}: symbolic sizes priced at {priced}, pt-tvm's default (pass hints="
                      f"{{{', '.join(f'{k!r}: ...' for k in missing)}}} for the sizes you run)", SymbolicSizeWarning,
                      stacklevel=3)
    return values


def _kind_of(stmt: tirx.Stmt, fname: str) -> str:
    """Short kind name used for sTask ids (copy, gemm, fill, reduce, par, ...)."""
    stmt = _unwrap(stmt)
    if isinstance(stmt, tirx.Evaluate) and isinstance(stmt.value, tirx.Call):
        op = op_name(stmt.value)
        return op.rsplit(".", 1)[-1] if op.startswith("tl.tileop.") else "call"
    if isinstance(stmt, tirx.IfThenElse) and isinstance(stmt.then_case, (tirx.For, tirx.Evaluate)):
        return _kind_of(stmt.then_case, fname)  # a nest or tile op applied where a condition holds: named as it
    if isinstance(stmt, tirx.For):
        return "par" if stmt.kind == tirx.ForKind.PARALLEL else "loop"
    return "stmt"


def _unwrap(stmt: tirx.Stmt) -> tirx.Stmt:
    while isinstance(stmt, tirx.AttrStmt) and stmt.attr_key == "tl.ws_op_id":
        stmt = stmt.body
    return stmt


@dataclasses.dataclass(frozen=True)
class _Launch:
    """The launch indices (``{name: (var, extent)}``) and the values bound from them (``m0 = by * 128``, a macro's
    argument), to tell which indices move a tile."""

    grid: dict
    binds: dict

    @classmethod
    def of(cls, grid: dict, binds: Sequence[tirx.Bind]) -> "_Launch":
        resolved: dict = {}
        for b in binds:
            resolved[b.var] = tirx.stmt_functor.substitute(b.value, resolved) if resolved else b.value
        return cls(grid, resolved)

    def moves(self, offset: Any, extent: int | None) -> set[str]:
        """The launch indices that move a region's offset ``offset`` (of ``extent`` elements) by a whole extent
        or more over their range: a residue's start shifted by a few elements (a row group's first 16-byte
        boundary) reads the same tile as its neighbours' and is no index of the tile's. An offset not evaluated
        at compile time, or over an index of one value, moves with every index it reads."""
        expr = tirx.stmt_functor.substitute(offset, self.binds) if self.binds else offset
        free = _vars(expr)
        names = {n.name for n in free}
        analyzer = tvm.arith.Analyzer()
        moved = set()
        for name, (var, ext) in self.grid.items():
            if var.name not in names:
                continue
            fixed = {n: tirx.IntImm(n.dtype, 0 if n.name not in self.grid else 1) for n in free if n is not var}
            at = sorted({round(j * ((ext or 1) - 1) / 63) for j in range(64)})  # across the index's whole range
            points = [analyzer.simplify(tirx.stmt_functor.substitute(expr, {**fixed, var: tirx.IntImm(var.dtype, i)}))
                      for i in at]
            if len(points) < 2 or not all(isinstance(p, tirx.IntImm) for p in points) or extent is None \
                    or max(p.value for p in points) - min(p.value for p in points) >= extent:
                moved.add(name)
        return moved


def _region(arg: Any, buffers: dict[str, BufferInfo], block_vars: _Launch):
    """A tile-op operand -> (Access, access mask), or None for scalar arguments."""
    mins = _mins(arg)
    if mins is None:
        return None
    if isinstance(arg, tirx.Call):
        load, mask = arg.args[0], int(arg.args[1])
        # tl.region lists one extent per buffer dim (unit dims included)
        return _access(load.buffer, mins, _ints(arg.args[2:]), buffers, block_vars), mask
    if isinstance(arg, tirx.BufferRegion):
        return _access(arg.buffer, mins, _ints([r.extent for r in arg.region]), buffers, block_vars), 3
    return _access(arg.buffer, mins, (1,) * len(mins), buffers, block_vars), 1


def _mins(arg: Any) -> list | None:
    """A tile-op operand's start in each dimension of its buffer, or None for scalar arguments."""
    if isinstance(arg, tirx.Call) and op_name(arg) == "tl.region":
        return list(arg.args[0].indices)
    if isinstance(arg, tirx.BufferRegion):
        return [r.min for r in arg.region]
    if isinstance(arg, tirx.BufferLoad):
        return list(arg.indices)
    return None


def _access(buf: tirx.Buffer, mins: list, exts: tuple, buffers: dict[str, BufferInfo],
            block_vars: _Launch) -> Access:
    used = set().union(*(block_vars.moves(m, e) for m, e in zip(mins, exts)))
    return Access(buffer=text(buf.name), scope=buffers[buf.name].scope if buf.name in buffers else _scope(buf),
                  offsets=tuple(text(m) for m in mins), extents=tuple(exts), block_vars=tuple(sorted(used)))


def _stask(stmt: tirx.Stmt, sid: str, placement: Placement, index: int, buffers: dict[str, BufferInfo],
           vdev: hw.VDevice, block_vars: _Launch, fname: str, steps: _Steps | None) -> STask:
    inner = _unwrap(stmt)
    if _is_tile_op(inner):
        return _tile_op(inner.value, sid, placement, index, buffers, vdev, block_vars, fname)
    if isinstance(inner, tirx.IfThenElse) and isinstance(inner.then_case, tirx.For) \
            and isinstance(inner.else_case, (tirx.For, type(None))):
        sides = [_scalar_nest(s, sid, placement, index, buffers, vdev, block_vars, fname)
                 for s in (inner.then_case, inner.else_case) if s is not None]
        return _branch(sides, steps.share(inner.condition) if steps else None)
    if isinstance(inner, tirx.IfThenElse) and _is_tile_op(inner.then_case) \
            and isinstance(inner.else_case, (tirx.For, type(None))):
        op = _tile_op(inner.then_case.value, sid, placement, index, buffers, vdev, block_vars, fname)
        other = [_scalar_nest(inner.else_case, sid, placement, index, buffers, vdev, block_vars, fname)] \
            if inner.else_case is not None else []
        return _branch([op, *other], steps.share(inner.condition) if steps else None)
    copied = _nest_copy(inner, sid, placement, index, buffers, block_vars)
    if copied is not None:
        return copied
    if isinstance(inner, (tirx.For, tirx.BufferStore, tirx.IfThenElse, tirx.SeqStmt)):
        return _scalar_nest(inner, sid, placement, index, buffers, vdev, block_vars, fname)
    raise ExtractionError(f"PrimFunc {fname!r}: unsupported statement {type(inner).__name__} "
                          f"in the {placement.value}: {str(inner)[:200]}")


def _is_tile_op(stmt: tirx.Stmt) -> bool:
    return isinstance(stmt, tirx.Evaluate) and isinstance(stmt.value, tirx.Call) \
        and op_name(stmt.value).startswith("tl.tileop.")


def _tile_op(call: tirx.Call, sid: str, placement: Placement, index: int, buffers: dict[str, BufferInfo],
             vdev: hw.VDevice, block_vars: _Launch, fname: str) -> STask:
    op = op_name(call)
    regions = [r for r in (_region(a, buffers, block_vars) for a in call.args) if r is not None]
    reads = [a for a, m in regions if m & 1]
    writes = [a for a, m in regions if m & 2]
    scalars = [a for a in call.args if _region(a, buffers, block_vars) is None]
    attrs: dict[str, str] = {"tileop": op}
    flops = sfu = nbytes = 0.0
    if op in _COPY_OPS:
        kind = OpKind.COPY
        src, dst = regions[0][0], regions[1][0]
        tile = _nonunit(dst.extents)
        elems = src.elements() or 0
        nbytes = float(elems * _elem_bytes(src, buffers))
        seu = _copy_seu(src, dst, vdev, buffers)
        if seu == SEUKind.CUDA_CORE:
            flops = float(elems)  # a register-to-register cast
        out = buffers.get(dst.buffer)  # a store's narrower vectors; loads keep the 16-byte rate (not measured apart)
        width = _row_vector(out) if seu == SEUKind.LSU and out is not None and out.scope == "global" else 16
        if width < 16:
            attrs["vector_bytes"] = str(width)
        glob = src if src.scope == "global" else dst
        if seu == SEUKind.TMA and _off_boundary(call.args[0 if glob is src else 1], buffers[glob.buffer].dtype):
            attrs[BOX_OFF_BOUNDARY] = "1"
        dtype = buffers[src.buffer].dtype
    elif op in _GEMM_OPS:
        kind = OpKind.GEMM
        a, b, c = (r for r, _ in regions[:3])
        trans_a, trans_b = bool(scalars[0]), bool(scalars[1])
        m, n, k = (int(x) for x in scalars[2:5])
        tile = (m, n, k)
        flops = 2.0 * m * n * k
        nbytes = float(sum((r.elements() or 0) * _elem_bytes(r, buffers) for r in (a, b) if r.scope == "shared"))
        attrs.update(trans_a=str(trans_a), trans_b=str(trans_b), a_scope=a.scope,
                     policy=str(int(scalars[5])) if len(scalars) > 5 else "0")
        if len(scalars) > 6 and not bool(scalars[6]):  # clear_accum=False: C is accumulated
            reads = _with(reads, c)
        seu = SEUKind.TENSOR_CORE
        dtype = buffers[a.buffer].dtype
    elif op == "tl.tileop.fill":
        kind = OpKind.FILL
        dst = regions[0][0]
        tile = _nonunit(dst.extents)
        flops = float(dst.elements() or 0)
        seu = SEUKind.CUDA_CORE
        dtype = buffers[dst.buffer].dtype
    elif op in _REDUCE_OPS:
        kind = OpKind.REDUCE
        src, dst = regions[0][0], regions[1][0]
        tile = _nonunit(src.extents)
        flops = float(src.elements() or 0)
        reduce_type = next((text(s.value) for s in scalars if isinstance(s, tirx.StringImm)), op.rsplit(".", 1)[-1])
        clear = next((bool(s) for s in scalars if isinstance(s, tirx.IntImm) and s.dtype == "bool"), True)
        dim = next((int(x) for x in scalars if isinstance(x, tirx.IntImm) and x.dtype != "bool"), -1)
        attrs.update(reduce=reduce_type, clear=str(clear), dim=str(dim))
        if not clear:  # accumulates into dst: the old value is read
            reads = _with(reads, dst)
        seu = SEUKind.CUDA_CORE
        dtype = buffers[src.buffer].dtype
    elif op in _ATOMIC_OPS:
        kind = OpKind.ATOMIC
        dst = writes[0] if writes else regions[-1][0]
        tile = _nonunit(dst.extents)
        reads = _with(reads, dst)
        flops = float(dst.elements() or 0)
        nbytes = float((dst.elements() or 0) * _elem_bytes(dst, buffers))
        seu = SEUKind.LSU
        dtype = buffers[dst.buffer].dtype
    else:
        raise ExtractionError(f"PrimFunc {fname!r}: tile op {op!r} is not supported by pt-tvm's extractor "
                              f"(supported: copy, gemm, fill, reduce, cumsum, cummax, atomic add/max/min)")
    if not vdev.eu.has(seu):
        seu = SEUKind.CUDA_CORE if seu == SEUKind.SFU else SEUKind.LSU
    label = f"{kind.value} {', '.join(a.buffer for a in reads)} -> {', '.join(a.buffer for a in writes)}"
    return STask(id=sid, op=kind, placement=placement, index=index, label=label, tile_shape=tile,
                 reads=tuple(reads), writes=tuple(writes), flops=flops, sfu_ops=sfu, bytes=nbytes, seu=seu,
                 dtype=dtype, attrs=attrs)


def _branch(sides: list[STask], share: float | None) -> STask:
    """A branch around nests (``if c: nest``, a mask on the blocks that need it, or ``if c: nest else: nest``) or
    around a tile op (``if c: copy else: nest``, a tile stored by TMA where it can be and an element a thread at
    the edges) as one sTask: reading and writing what either side does, killing what every side writes in full
    (nothing without an ``else``: where the condition fails the buffers keep what they held), priced at the mean
    over the loop's steps of the side each step runs (``share``: of the steps taking the ``then`` side), or, where
    that share is not known at compile time, as its ``then`` side alone (one side, or a tile op: the other side
    serves the edge blocks) or its costlier side (two nests)."""
    ops = [t for t in sides if "tileop" in t.attrs]
    costly = ops[0] if ops else max(sides, key=lambda t: (t.flops + 4.0 * t.sfu_ops, t.flops))  # exp: 4 ALU ops
    if share is None:
        weights = [1.0] if len(sides) == 1 else [float(t is costly) for t in sides]
    else:
        weights = [share, 1.0 - share][:len(sides)]
    kills = set.intersection(*(set(filter(None, t.attrs.get("full_writes", "").split(","))) for t in sides)) \
        if len(sides) == 2 else set()
    ordered = [costly, *(t for t in sides if t is not costly)]  # a buffer both sides touch: the priced side's
    union = lambda accs: tuple({a.buffer: a for t in reversed(ordered) for a in accs(t)}.values())  # noqa: E731
    mean = lambda cost: sum(w * cost(t) for w, t in zip(weights, sides))  # noqa: E731
    return dataclasses.replace(
        costly, reads=union(lambda t: t.reads), writes=union(lambda t: t.writes),
        flops=mean(lambda t: t.flops), sfu_ops=mean(lambda t: t.sfu_ops),
        attrs={**costly.attrs, "full_writes": ",".join(sorted(kills)),
               "branch_share": "unknown" if share is None else f"{share:.4g}"})


def _nest_copy(stmt: tirx.Stmt, sid: str, placement: Placement, index: int, buffers: dict[str, BufferInfo],
               block_vars: _Launch) -> STask | None:
    """A nest that only copies elements between global memory and a shared tile, as the copy it is, on the LSU
    (TileLang lowers it to every thread's vector loads or stores; a load in a software pipeline to cp.async):
    ``dst[i, j] = src[.., min(r0 + i, last), j]`` (rows past a tensor's end clamped to its last), its region the
    unclamped one; a load guarded by a condition and zero elsewhere, or a store under a condition, at addresses
    the nest reckons itself (a row's aligned chunks of a flat buffer), the global side's region the nest's element
    count from its first, moving with every launch index it reads. Its bytes are the elements the nest reaches; a
    store moves vectors of its loop's ``coalesced_width`` (else an element). None for any other statement."""
    loops, _ = _loops(stmt)
    loop_vars, extents, body = _nest(stmt)
    if isinstance(body, tirx.IfThenElse) and body.else_case is None:
        body = body.then_case
    if not loop_vars or None in extents or not isinstance(body, tirx.BufferStore):
        return None
    src, dst = _guarded_load(body.value), body
    if src is None or src.buffer.dtype != dst.buffer.dtype \
            or (_scope(src.buffer), _scope(dst.buffer)) not in (("global", "shared"), ("shared", "global")):
        return None
    span = dict(zip(loop_vars, extents))

    def access(n: Any) -> Access | None:
        region = _nest_region(n.indices, span)
        if region is not None:
            return _access(n.buffer, *region, buffers, block_vars)
        if _scope(n.buffer) == "shared":
            return _access(n.buffer, [tirx.IntImm("int32", 0)] * len(n.buffer.shape), _ints(n.buffer.shape),
                           buffers, block_vars)
        if len(n.indices) != 1:
            return None
        first = tirx.stmt_functor.substitute(n.indices[0], {v: tirx.IntImm(v.dtype, 0) for v in loop_vars})
        return dataclasses.replace(_access(n.buffer, [first], (math.prod(extents),), buffers, block_vars),
                                   block_vars=tuple(sorted(block_vars.moves(first, None))))

    read, write = access(src), access(dst)
    if read is None or write is None:
        return None
    elem = dtype_bytes(text(src.buffer.dtype))
    attrs = {}
    if _scope(dst.buffer) == "global":
        width = loops[0].annotations.get("coalesced_width")
        vector = elem * (int(width) if width is not None else 1)
        if vector < 16:
            attrs["vector_bytes"] = str(vector)
    return STask(id=sid, op=OpKind.COPY, placement=placement, index=index,
                 label=f"copy {read.buffer} -> {write.buffer} (a nest)",
                 tile_shape=_nonunit(write.extents if _scope(dst.buffer) == "shared" else read.extents),
                 reads=(read,), writes=(write,), flops=0.0, sfu_ops=0.0, bytes=float(math.prod(extents) * elem),
                 seu=SEUKind.LSU, dtype=text(src.buffer.dtype), attrs=attrs)


def _guarded_load(value: Any) -> tirx.BufferLoad | None:
    """The load a nest stores: ``src[..]``, or ``if_then_else(c, src[..], k)`` (a constant ``k`` where ``c``
    fails, zero as cp.async's predicate fills); None for any other value."""
    if isinstance(value, tirx.Call) and op_name(value) == "tirx.if_then_else":
        _, value, other = value.args
        other = other.value if isinstance(other, tirx.Cast) else other
        if not isinstance(other, (tirx.IntImm, tirx.FloatImm)):
            return None
    return value if isinstance(value, tirx.BufferLoad) else None


def _nest_region(indices: Sequence[Any], span: dict) -> tuple[list, tuple] | None:
    """``(mins, extents)`` of the elements a nest's indices reach over the loop variables' ``span`` (``{var:
    extent}``): an index ``base + v`` spans ``v``'s extent from ``base``, one free of them a single element, and
    ``min``/``max`` against a bound free of them (a clamp) the region of its other side; None for any other."""
    analyzer = tvm.arith.Analyzer()
    mins, exts = [], []
    for idx in indices:
        while isinstance(idx, (tirx.Min, tirx.Max)):
            free = [x for x in (idx.a, idx.b) if not set(_vars(x)) & span.keys()]
            if len(free) != 1:
                return None
            idx = idx.b if free[0] is idx.a else idx.a
        used = [v for v in span if v in set(_vars(idx))]
        if not used:
            mins.append(idx)
            exts.append(1)
            continue
        if len(used) > 1:
            return None
        base = analyzer.simplify(tirx.stmt_functor.substitute(idx, {used[0]: tirx.IntImm(used[0].dtype, 0)}))
        if not analyzer.can_prove_equal(idx - base, used[0]):
            return None
        mins.append(base)
        exts.append(span[used[0]])
    return mins, tuple(exts)


def _scalar_nest(stmt: tirx.Stmt, sid: str, placement: Placement, index: int, buffers: dict[str, BufferInfo],
                 vdev: hw.VDevice, block_vars: _Launch, fname: str) -> STask:
    """A T.Parallel nest (or other scalar loop): per-element ops times the trip counts."""
    loop_vars, extents, body = _nest(stmt)
    reads, writes, ops, sfu, nested, barriers = {}, {}, [0], [0], [], [0]

    def visit(n: Any) -> None:
        if isinstance(n, tirx.BufferStore):
            writes.setdefault(n.buffer.name, n)
        elif isinstance(n, tirx.BufferLoad):
            reads.setdefault(n.buffer.name, n)
        elif isinstance(n, _ARITH):
            ops[0] += 1
            if isinstance(n, tirx.Div) and n.dtype.startswith("float"):
                sfu[0] += 1  # a float division is a reciprocal on the SFU (MUFU.RCP), IEEE or fast-math alike
        elif isinstance(n, tirx.Call):
            name = op_name(n)
            if name in _MATH_CALLS:
                sfu[0] += _MATH_CALLS[name]
            elif name.startswith("tl.tileop."):
                nested.append(name)
            elif name == "tirx.if_then_else":
                ops[0] += 1
            elif name == _BLOCK_BARRIER and len(n.args) == 1:
                barriers[0] += 1

    tirx.stmt_functor.post_order_visit(body, visit)
    if nested:
        raise ExtractionError(f"PrimFunc {fname!r}: tile op {nested[0]!r} nested inside a "
                              f"{type(stmt).__name__} in the {placement.value} is not supported; "
                              f"write tile ops at the top level of the kernel or of the pipelined loop")
    trips = math.prod(e for e in extents if e is not None) if extents else 1

    def acc(node: Any) -> Access:
        buf = node.buffer
        full = tuple(buffers[buf.name].shape) if buf.name in buffers else _ints(buf.shape)
        return _access(buf, [tirx.IntImm("int32", 0)] * len(full), full, buffers, block_vars)

    kill = {name: _covers(store, loop_vars, extents, buffers) for name, store in writes.items()}
    acc_reads = tuple(acc(n) for n in reads.values())
    acc_writes = tuple(acc(n) for n in writes.values())
    seu = SEUKind.SFU if sfu[0] and vdev.eu.has(SEUKind.SFU) else SEUKind.CUDA_CORE
    label = (f"elementwise {', '.join(reads)} -> {', '.join(writes)}"
             + (f" ({sfu[0]} transcendental/elem)" if sfu[0] else ""))
    return STask(id=sid, op=OpKind.ELEMENTWISE, placement=placement, index=index, label=label,
                 tile_shape=tuple(e for e in extents if e is not None), reads=acc_reads, writes=acc_writes,
                 flops=float(ops[0] * trips), sfu_ops=float(sfu[0] * trips), bytes=0.0, seu=seu,
                 dtype=text(next(iter(writes.values())).buffer.dtype) if writes else "",
                 attrs={"full_writes": ",".join(sorted(k for k, v in kill.items() if v)),
                        "axes": _axes([*reads.values(), *writes.values()], loop_vars),
                        **({BLOCK_SYNC: "1"} if barriers[0] else {})})


def _axes(nodes: list, loop_vars: list) -> str:
    """``buf:i,j;...``: which loop variable indexes each dim (``-`` for other index expressions)."""
    names = {v.name for v in loop_vars}
    return ";".join(f"{n.buffer.name}:" + ",".join(i.name if isinstance(i, tirx.Var) and i.name in names else "-"
                                                  for i in n.indices) for n in nodes)


def _loops(stmt: tirx.Stmt) -> tuple[list[tirx.For], tirx.Stmt]:
    """A loop nest's loops, outermost first, and its innermost body."""
    loops = []
    while isinstance(stmt, tirx.For):
        loops.append(stmt)
        stmt = stmt.body
    return loops, stmt


def _nest(stmt: tirx.Stmt) -> tuple[list[tirx.Var], list[int | None], tirx.Stmt]:
    """A loop nest's variables, extents (None where not a constant) and innermost body."""
    loops, body = _loops(stmt)
    return ([f.loop_var for f in loops],
            [int(f.extent) if isinstance(f.extent, tirx.IntImm) else None for f in loops], body)


def _covers(store: tirx.BufferStore, loop_vars: list, extents: list, buffers: dict[str, BufferInfo]) -> bool:
    """Whether a nest's store writes every element of its buffer (indices are the loop vars, extents match)."""
    info = buffers.get(store.buffer.name)
    if info is None or info.scope == "global":
        return False
    idx = list(store.indices)
    if len(idx) != len(info.shape) or not all(isinstance(i, tirx.Var) for i in idx):
        return False
    pos = {v.name: e for v, e in zip(loop_vars, extents)}
    return all(i.name in pos and pos[i.name] == s for i, s in zip(idx, info.shape)) and \
        len({i.name for i in idx}) == len(idx)


def _copy_seu(src: Access, dst: Access, vdev: hw.VDevice, buffers: dict[str, BufferInfo]) -> SEUKind:
    if src.scope == "fragment" and dst.scope == "fragment":
        return SEUKind.CUDA_CORE
    if {src.scope, dst.scope} == {"global", "shared"} and vdev.eu.has(SEUKind.TMA):
        glob = buffers.get(src.buffer if src.scope == "global" else dst.buffer)
        if glob is None or _tma_strides(glob):
            return SEUKind.TMA
    return SEUKind.LSU


def _off_boundary(arg: Any, dtype: str) -> bool:
    """Whether a copy operand's innermost start provably lies off every 16-byte boundary (its start known modulo a
    multiple of 16 bytes, and that residue not 0): a tensor map's box starting there stops the kernel with an
    illegal instruction (``templates/gemm.py``'s row groups; the conv's boxes a token of a group, 2026-12-06)."""
    known, size = tvm.arith.Analyzer().modular_set(_mins(arg)[-1]), dtype_bytes(dtype)
    return int(known.coeff) * size % 16 == 0 and int(known.base) * size % 16 != 0


def _row_vector(buffer: BufferInfo) -> int:
    """The widest access (bytes, at most 16) that every row of ``buffer`` starts on: what TileLang 0.1.15
    vectorizes a copy of its rows to (8-byte loads at an fp16 K of 1004, one element at 1001; stores an element a
    thread at an output width of 50257, which cost GPT-2's lm_head 1.25x its twin's time on one H200 at one tile,
    benchmarks/results/2026-11-28-h200-row-groups, and are priced so)."""
    size = dtype_bytes(buffer.dtype)
    if buffer.strides:
        strides = [s for s in buffer.strides[:-1] if s is not None]
    else:
        strides, stride = [], 1
        for extent in reversed(buffer.shape[1:]):
            if extent is None:
                break
            stride *= extent
            strides.append(stride)
    return min([16, *((s * size) & -(s * size) for s in strides if s)])


def _tma_strides(buffer: BufferInfo) -> bool:
    """Whether TMA can address ``buffer``: each of its row strides a multiple of 16 bytes (a tensor map's rule).
    TileLang 0.1.15 lowers a copy of a tensor whose rows are not to element-wise loads and stores (a fp16 GEMM at
    K = 1004 does, at 1000 and 1008 it takes TMA); the strides are the buffer's own where it declares them
    (``T.StridedTensor``), else those of packed rows; a stride of symbolic size is taken as aligned."""
    return _row_vector(buffer) == 16


def _elem_bytes(a: Access, buffers: dict[str, BufferInfo]) -> int:
    return dtype_bytes(buffers[a.buffer].dtype) if a.buffer in buffers else 4


def _nonunit(exts: tuple) -> tuple[int, ...]:
    out = tuple(e for e in exts if e is not None and e != 1)
    return out or (1,)


def _with(accesses: list[Access], a: Access) -> list[Access]:
    return accesses if any(x.buffer == a.buffer for x in accesses) else [*accesses, a]


def _has_nested_pipelined(body: tirx.Stmt) -> bool:
    found = []
    tirx.stmt_functor.post_order_visit(body, lambda n: found.append(n) if is_pipelined(n) else None)
    return bool(found)


@dataclasses.dataclass(frozen=True)
class _Steps:
    """The pipelined loop's steps over the grid: ``var`` runs to ``extent``, which may depend on a launch index;
    ``binds``, the kernel's values bound from launch indices (:class:`_Launch`)."""

    var: tirx.Var
    extent: Any
    grid: dict
    binds: dict = dataclasses.field(default_factory=dict)
    limit: int = 1 << 17  # steps counted one by one; past this a branch's share is not known

    def share(self, cond: Any) -> float | None:
        """The share of the steps (of every block of the grid) in which ``cond`` holds; None where that is not
        known at compile time (the condition reads anything but the loop variable, one launch index, values
        bound from it and constants)."""
        cond = tirx.stmt_functor.substitute(cond, self.binds) if self.binds else cond
        by_name = {var.name: (var, ext) for var, ext in self.grid.values()}
        free = {n.name: n for e in (cond, self.extent) for n in _vars(e)}
        others = sorted(set(free) - {self.var.name})
        if len(others) > 1 or any(n not in by_name or not by_name[n][1] for n in others):
            return None
        points = ([{}] if not others else
                  [{by_name[others[0]][0]: tirx.IntImm(by_name[others[0]][0].dtype, i)}
                   for i in range(by_name[others[0]][1])])
        analyzer = tvm.arith.Analyzer()
        taken = total = 0
        for point in points:
            trips = analyzer.simplify(tirx.stmt_functor.substitute(self.extent, point))
            if not isinstance(trips, tirx.IntImm) or total + trips.value > self.limit:
                return None
            for k in range(trips.value):
                at = analyzer.simplify(tirx.stmt_functor.substitute(
                    cond, {**point, self.var: tirx.IntImm(self.var.dtype, k)}))
                if not isinstance(at, tirx.IntImm):
                    return None
                taken += bool(at.value)
            total += trips.value
        return taken / total if total else 1.0


def _vars(expr: Any) -> list[tirx.Var]:
    found = []
    tirx.stmt_functor.post_order_visit(expr, lambda n: found.append(n) if isinstance(n, tirx.Var) else None)
    return found


def _trip_counts(extent: Any, grid: dict) -> tuple[float, float, tuple[int, ...], str]:
    """The loop's mean and heaviest trip counts over the launch index it may depend on (causal masks), and where
    they vary, its trips at each value of that index and the index's name (the cost model walks the blocks)."""
    if isinstance(extent, tirx.IntImm):
        return float(extent.value), float(extent.value), (), ""
    analyzer = tvm.arith.Analyzer()
    by_var = {var.name: (name, var, ext) for name, (var, ext) in grid.items()}
    names = {v.name for v in _vars(extent)}
    if len(names) == 1 and next(iter(names)) in by_var and by_var[next(iter(names))][2]:
        name, var, ext = by_var[next(iter(names))]
        vals = [analyzer.simplify(tirx.stmt_functor.substitute(extent, {var: tirx.IntImm(var.dtype, i)}))
                for i in range(ext)]
        if all(isinstance(v, tirx.IntImm) for v in vals):
            trips = tuple(int(v.value) for v in vals)
            varies = max(trips) > min(trips)
            return sum(trips) / len(trips), float(max(trips)), trips if varies else (), name if varies else ""
    bound = analyzer.const_int_bound(extent)
    if bound.max_value < (1 << 30):
        return float(bound.max_value), float(bound.max_value), (), ""
    raise ExtractionError(f"cannot bound the pipelined loop's trip count {extent}")
