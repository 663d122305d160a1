"""Small readers of TileLang's tile-op IR shared by pt-tvm's passes."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from tilelang import tvm
from tvm import tirx

from pt_tvm.errors import PtTvmError

__all__ = [
    "ExtractionError",
    "WS_OP_ID",
    "LOOP_ID",
    "TILES_ID",
    "SWIZZLE_ATTR",
    "PIPELINE_KEYS",
    "find_root_block",
    "launch_info",
    "launch_grid",
    "launch_extents",
    "symbolic_sizes",
    "top_level",
    "is_pipelined",
    "is_block_exit",
    "is_block_scalar",
    "op_name",
    "op_call",
    "STAGE_RELEASE",
    "annotation_str",
    "text",
    "stask_ids",
]

WS_OP_ID = "tl.ws_op_id"
LOOP_ID = "loop"
TILES_ID = "tiles"  # ws_op_id of a persistent kernel's loop over its output tiles
SWIZZLE_ATTR = "threadblock_swizzle_pattern"  # T.use_swizzle: a tile order, which a plan decides itself
PIPELINE_KEYS = ("num_stages", "tl_pipeline_order", "tl_pipeline_stage")
STAGE_RELEASE = "tirx.ptx_arrive_barrier"  # a materialized schedule's release of a pipeline stage (an mbarrier arrive)


class ExtractionError(PtTvmError, ValueError):
    """The PrimFunc is not something pt-tvm can read into an sTask-graph."""


def op_name(call: tirx.Call) -> str:
    return text(call.op.name if hasattr(call.op, "name") else call.op)


def op_call(stmt: tirx.Stmt, *names: str) -> tirx.Call | None:
    """The call ``stmt`` evaluates when it is a call of one of the ops ``names``, else None."""
    call = stmt.value if isinstance(stmt, tirx.Evaluate) else None
    return call if isinstance(call, tirx.Call) and isinstance(call.op, tvm.ir.Op) and op_name(call) in names else None


def text(value: Any) -> str:
    """``str(value)`` as a plain Python str (TVM returns an ffi String subclass, which must not leak into
    pt-tvm's dataclasses: deep-copying it crashes)."""
    return str.__str__(str(value))


def annotation_str(value: Any) -> str:
    """Annotation values arrive as ffi String (loops) or StringImm (call annotations)."""
    if value is None:
        return ""
    return text(value.value if isinstance(value, tirx.StringImm) else value)


def find_root_block(func: tirx.PrimFunc, fname: str = "main") -> tirx.SBlock:
    """The ``tilelang_root`` block that ``T.Kernel`` creates."""
    found = []
    tirx.stmt_functor.post_order_visit(
        func.body, lambda n: found.append(n) if isinstance(n, tirx.SBlock) and n.name_hint == "tilelang_root" else None)
    if not found:
        raise ExtractionError(f"PrimFunc {fname!r} is not a TileLang kernel: no `with T.Kernel(...)` block "
                              f"(tilelang_root) found")
    return found[0]


def launch_extents(stmt: tirx.Stmt) -> dict[str, tuple[tirx.Var, tirx.PrimExpr]]:
    """{thread tag: (var, extent)} of the launch in ``stmt``: thread-bound loops (a ``T.Kernel`` as built) or
    ``thread_extent`` attributes (a launch TileLang has materialized, as a carried plan's is)."""
    out = {}

    def visit(n: Any) -> None:
        if isinstance(n, tirx.For) and n.thread_binding is not None:
            out[n.thread_binding.thread_tag] = (n.loop_var, n.extent)
        elif isinstance(n, tirx.AttrStmt) and n.attr_key == "thread_extent":
            out[n.node.thread_tag] = (n.node.var, n.value)

    tirx.stmt_functor.post_order_visit(stmt, visit)
    return out


def symbolic_sizes(func: tirx.PrimFunc) -> dict[str, tirx.Var]:
    """The symbolic sizes (``T.dynamic``) in ``func``'s buffer shapes, by name."""
    found: dict[str, tirx.Var] = {}
    for buf in func.buffer_map.values():
        for dim in buf.shape:
            tirx.stmt_functor.post_order_visit(
                dim, lambda n: found.setdefault(text(n.name), n) if isinstance(n, tirx.Var) else None)
    return found


def launch_grid(func: tirx.PrimFunc, values: Mapping[tirx.Var, int] | None = None) -> dict:
    """{block var name: (var, extent or None)} in blockIdx order; an extent that depends on symbolic sizes is
    evaluated at ``values`` when given, else None."""
    grid = {}
    for tag, (var, ext) in launch_extents(func.body).items():
        if tag.startswith("blockIdx."):
            if values and not isinstance(ext, tirx.IntImm):
                ext = tvm.arith.Analyzer().simplify(tirx.stmt_functor.substitute(ext, dict(values)))
            grid[tag] = (var, int(ext) if isinstance(ext, tirx.IntImm) else None)
    return {text(grid[t][0].name): grid[t] for t in sorted(grid)}


def launch_info(func: tirx.PrimFunc, block: tirx.SBlock, values: Mapping[tirx.Var, int] | None = None
                ) -> tuple[dict, int]:
    """(:func:`launch_grid`, threads per block)."""
    ordered = launch_grid(func, values)
    threads = 128
    launch = block.annotations.get("tl.launch_threads") if block.annotations else None
    if launch is not None:
        threads = 1
        for t in launch:
            threads *= int(t)
    return ordered, threads


def top_level(stmt: tirx.Stmt) -> list[tirx.Stmt]:
    """The statements of a body in program order, looking through SeqStmt, nested blocks and a
    ``T.use_swizzle`` annotation (the plan's :class:`~pt_tvm.plan.TileOrder` replaces it)."""
    if isinstance(stmt, tirx.SeqStmt):
        return [s for child in stmt.seq for s in top_level(child)]
    if isinstance(stmt, tirx.SBlockRealize):
        return top_level(stmt.block.body)
    if isinstance(stmt, tirx.AttrStmt) and stmt.attr_key == SWIZZLE_ATTR:
        return top_level(stmt.body)
    return [stmt]


def is_pipelined(stmt: tirx.Stmt) -> bool:
    while isinstance(stmt, tirx.AttrStmt) and stmt.attr_key == WS_OP_ID:
        stmt = stmt.body
    return (isinstance(stmt, tirx.For) and stmt.kind == tirx.ForKind.SERIAL
            and any(k in stmt.annotations for k in PIPELINE_KEYS))


def is_block_exit(stmt: tirx.Stmt) -> bool:
    """Whether ``stmt`` is a block's early exit, ``if cond: T.thread_return()`` (``cond`` uniform over the block:
    a block with no work, such as one past its packed sequence's queries)."""
    return (isinstance(stmt, tirx.IfThenElse) and stmt.else_case is None
            and op_call(stmt.then_case, "tirx.thread_return") is not None)


def is_block_scalar(stmt: tirx.Stmt) -> bool:
    """Whether ``stmt`` is a prologue statement of scalars that every role runs and no sTask holds: a ``Bind``
    (a per-block size read once) or a block's early exit."""
    return isinstance(stmt, tirx.Bind) or is_block_exit(stmt)


def _own_id(stmt: tirx.Stmt) -> str:
    if isinstance(stmt, tirx.AttrStmt) and stmt.attr_key == WS_OP_ID:
        return annotation_str(stmt.value)
    if isinstance(stmt, tirx.Evaluate) and isinstance(stmt.value, tirx.Call) and stmt.value.annotations:
        return annotation_str(stmt.value.annotations.get(WS_OP_ID))
    if isinstance(stmt, tirx.For):
        return annotation_str(stmt.annotations.get(WS_OP_ID))
    return ""


def stask_ids(stmts: Sequence[tirx.Stmt], kinds: Sequence[str]) -> list[str]:
    """Stable ids: an existing ``tl.ws_op_id``, else ``<kind>_<n>`` numbered in program order."""
    counters: dict[str, int] = {}
    out = []
    for stmt, kind in zip(stmts, kinds):
        own = _own_id(stmt)
        if own:
            out.append(own)
            continue
        n = counters.get(kind, 0)
        counters[kind] = n + 1
        out.append(f"{kind}_{n}")
    if len(set(out)) != len(out) or LOOP_ID in out or TILES_ID in out:
        raise ExtractionError(f"duplicate tile-op ids {out}: ws_op_id annotations must be unique and neither "
                              f"{LOOP_ID!r} nor {TILES_ID!r}")
    return out
