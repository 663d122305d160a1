"""ApplyPipelineSchedule: write a verified ExecutionPlan into a TileLang PrimFunc.

Hopper plans become a ``T.WSSchedule`` on the kernel's root block, with each
tile op named by a stamped ``tl.ws_op_id`` (the sTask id); TileLang's
``MaterializeWSSchedule`` lowers it. Software-pipelined plans become the
pipelined loop's ``order``/``stage`` annotations, which TileLang's software
pipeliner applies. Either way the result still goes through TileLang's own
lowering and codegen.
"""
from __future__ import annotations

import json
import math
from typing import Any, Mapping

import tilelang.language as T
from tilelang import tvm
from tvm import tirx

from pt_tvm import hw
from pt_tvm.emitted import (
    EmissionError,
    cp_async_hazards,
    named_barrier_clash,
    stage_distances,
)
from pt_tvm.errors import PtTvmError
from pt_tvm.graph import Placement, STaskGraph
from pt_tvm.lowering import base_stage, emission_configs, handoff_barriers, wgmma_waits
from pt_tvm.plan import CLUSTER, ExecutionPlan, Handoff, Pipeline, Style, TileOrder
from pt_tvm.stream_k import FIXUP_NAMESPACE, Split, accumulator, fixup_source
from pt_tvm.verify import verify

from .carry import GEMM_OPS, WG_WAIT, carried
from .extract import graph_for
from .ir import (
    TILES_ID,
    WS_OP_ID,
    find_root_block,
    is_block_exit,
    is_block_scalar,
    is_pipelined,
    launch_info,
    op_name,
    text,
    top_level,
)
from .materialize import materialized
from .multicast import clustered

__all__ = ["ApplyPipelineSchedule", "apply_plan", "is_planned", "pass_configs", "check_emitted", "ScheduleMismatch",
           "PLAN_ATTR", "multicast_buffers"]

_WS_SCHEDULE = "tl.ws_schedule"
_ORDER, _STAGE = "tl_pipeline_order", "tl_pipeline_stage"
_CONFIGS = "pt_tvm.pass_configs"  # PrimFunc attribute: TileLang pass configs the plan needs (JSON)
_STAGES = "pt_tvm.stage_distances"  # PrimFunc attribute: what check_emitted needs of a software pipeline (JSON)
_BARRIERS = "pt_tvm.named_barriers"  # PrimFunc attribute: the named-barrier ids the plan's handoffs take (JSON)
PLAN_ATTR = "pt_tvm.plan"  # PrimFunc attribute: the plan written into it (JSON)
_POLICY = 5  # a gemm tile op's scalars after its regions: trans_A, trans_B, M, N, K, policy, ...
_IMPORT_SOURCE = "pragma_import_c"  # root-block annotation: CUDA source put before the kernel (T.import_source)
_SK_FIXUP, _SK_EPILOGUE = "stream_k_fixup", "stream_k_epilogue"  # ws_op ids of a stream-K segment's end


class ScheduleMismatch(PtTvmError, ValueError):
    """The plan was made for a different kernel than the one it is applied to."""


def is_planned(func: tirx.PrimFunc) -> bool:
    """Whether ``func`` already carries a plan pt-tvm wrote into it (:data:`PLAN_ATTR`)."""
    return func.attrs is not None and PLAN_ATTR in func.attrs


def apply_plan(func: tirx.PrimFunc, plan: ExecutionPlan, target: Any = None,
               graph: STaskGraph | None = None) -> tirx.PrimFunc:
    """``func`` with ``plan`` written into it for ``target`` (a chip, name, TVM target or target dict;
    default: the current ``with Target``). The plan is verified against ``func``'s graph first; a function that
    carries this plan already is returned as it is, one that carries another is refused."""
    vdev = hw.for_target(target if target is not None else tvm.target.Target.current(allow_none=False))
    if is_planned(func):
        if str(func.attrs[PLAN_ATTR]) == plan.to_json():
            return func  # it carries this plan already
        raise ScheduleMismatch(f"PrimFunc {func.attrs.get('global_symbol', '')!s} already carries another plan; "
                               f"write a plan into the function as built, not into a planned one")
    graph = graph or graph_for(func, vdev)
    planned = {a.stask for a in plan.appends}
    actual = {t.id for t in graph.stasks}
    if planned != actual:
        raise ScheduleMismatch(f"plan for {plan.graph!r} does not match PrimFunc {graph.name!r}: sTasks "
                               f"{sorted(planned ^ actual)} are in one but not the other")
    verify(plan, graph, vdev)
    block = find_root_block(func, graph.name)
    walk = _TileWalk(plan, launch_info(func, block)[0], vdev, graph)
    if plan.style == Style.WARP_SPECIALIZED:
        new_block = _warp_specialize(block, plan, graph, vdev, walk)
    else:
        new_block = _software_pipeline(block, plan, graph, walk)
    body = tirx.stmt_functor.ir_transform(
        func.body, None, lambda n: new_block if n.same_as(block) else None, ["tirx.SBlock"])
    if plan.row_split:
        body = _rows_split(body)
    func = func.with_body(walk.relaunch(body), span=func.span)
    configs = emission_configs(plan, graph, vdev)
    if configs:
        func = func.with_attr(_CONFIGS, json.dumps(configs, sort_keys=True))
    stages = stage_distances(plan, graph)
    if stages:
        func = func.with_attr(_STAGES, json.dumps(stages, sort_keys=True))
    barriers = sorted(i for ids in handoff_barriers(plan, vdev).values() for i in ids)
    if barriers:
        func = func.with_attr(_BARRIERS, json.dumps(barriers))
    if plan.carry_gemms or plan.multicast:  # rewrites of the schedule materialized
        func = materialized(func, vdev.tvm_target(), pass_configs(func))
        if plan.carry_gemms:
            func = carried(func)
        if plan.multicast:
            func = clustered(func, multicast_buffers(plan, graph))
    return func.with_attr(PLAN_ATTR, plan.to_json())


def multicast_buffers(plan: ExecutionPlan, graph: STaskGraph) -> list[str]:
    """The shared buffers that the plan's 2-CTA clusters fill by TMA multicast (``ExecutionPlan.multicast``)."""
    return sorted({a.buffer for t in graph.loads_shared_along(plan.multicast) for a in t.writes
                   if a.scope == "shared"}) if plan.multicast else []


def check_emitted(func: tirx.PrimFunc, source: str) -> None:
    """Raise :class:`pt_tvm.emitted.EmissionError` when ``source``, the CUDA TileLang emitted for
    ``func``, reads shared memory that a cp.async of its software pipeline may still be filling, or
    syncs TileLang's own threads on a named barrier that the plan's handoffs take."""
    attrs = func.attrs if func.attrs is not None else {}
    found = []
    if attrs.get(_STAGES) is not None:
        found += cp_async_hazards(source, json.loads(str(attrs[_STAGES])))
    if attrs.get(_BARRIERS) is not None:
        found += named_barrier_clash(source, json.loads(str(attrs[_BARRIERS])))
    if found:
        raise EmissionError(f"TileLang's kernel for {func.attrs.get('global_symbol', 'the plan')} does not do what "
                            "its plan says:\n" + "\n".join(f"  - {h}" for h in found))


def pass_configs(func: tirx.PrimFunc, base: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``base`` plus the pass configs that :func:`apply_plan` recorded on ``func`` (e.g. turning off
    TileLang's warp specialization for a software-pipelined Hopper plan): lower and compile with these."""
    configs = dict(base or {})
    recorded = func.attrs.get(_CONFIGS) if func.attrs is not None else None
    if recorded is not None:
        configs.update(json.loads(str(recorded)))
    return configs


def ApplyPipelineSchedule(plan: ExecutionPlan, target: Any = None) -> tvm.transform.Pass:
    """A pass that writes ``plan`` into the PrimFunc it was made for (verified first) for ``target``
    (default: the current ``with Target``)."""

    def transform(func: tirx.PrimFunc, mod: Any, ctx: Any) -> tirx.PrimFunc:
        return apply_plan(func, plan, target)

    return tirx.transform.prim_func_pass(transform, opt_level=0, name="pt.ApplyPipelineSchedule")


# ---------------------------------------------------------------- statement rewriting
def _stamp(stmt: tirx.Stmt, op_id: str, extra: dict | None = None) -> tirx.Stmt:
    """``stmt`` named ``op_id`` for MaterializeWSSchedule (annotation or ``T.ws_op`` wrapper);
    ``extra`` call annotations ride along (e.g. ``wg_wait``)."""
    if isinstance(stmt, tirx.AttrStmt) and stmt.attr_key == WS_OP_ID:
        return stmt
    if isinstance(stmt, tirx.Evaluate) and isinstance(stmt.value, tirx.Call):
        call = stmt.value
        ann = dict(call.annotations or {})
        ann[WS_OP_ID] = tirx.StringImm(op_id)
        ann.update(extra or {})
        return tirx.Evaluate(tirx.Call(call.dtype, call.op, call.args, ann))
    if isinstance(stmt, tirx.For):
        return _with_loop_annotations(stmt, {WS_OP_ID: op_id})
    return tirx.AttrStmt(None, WS_OP_ID, tirx.StringImm(op_id), stmt)


def _with_loop_annotations(loop: tirx.For, updates: dict, drop: tuple[str, ...] = (), body: Any = None) -> tirx.For:
    ann = {k: v for k, v in loop.annotations.items() if k not in drop}
    ann.update(updates)
    return tirx.For(loop.loop_var, loop.min, loop.extent, loop.kind, body if body is not None else loop.body,
                    loop.thread_binding, ann, loop.step)


def _seq(stmts: list[tirx.Stmt]) -> tirx.Stmt:
    return stmts[0] if len(stmts) == 1 else tirx.SeqStmt(stmts)


def _split(block: tirx.SBlock) -> tuple[list, tirx.For, list, list]:
    stmts = top_level(block.body)
    idx = next(i for i, s in enumerate(stmts) if is_pipelined(s))
    loop = stmts[idx]
    return stmts[:idx], loop, top_level(loop.body), stmts[idx + 1:]


def _stamp_all(stmts: list[tirx.Stmt], ids: Any, waits: Mapping[str, tirx.Stmt] | None = None) -> list[tirx.Stmt]:
    """Each tile-op statement named by the next sTask id; a prologue's scalar statements (``Bind``s, a block's
    early exit) stay as they are.

    A gemm kept in flight is issued without its implicit wait (``wg_wait=-1``) and followed by its
    own wait statement (``waits``), named ``wait_<gemm>``, which the schedule places."""
    waits = waits or {}
    out = []
    for s in stmts:
        if is_block_scalar(s):
            out.append(s)
            continue
        sid = next(ids)
        if sid in waits:
            out.append(_stamp(s, sid, {WG_WAIT: tirx.IntImm("int32", -1)}))
            out.append(_op(_wait_id(sid), waits[sid]))
        else:
            out.append(_stamp(s, sid))
    return out


def _rows_split(body: tirx.Stmt) -> tirx.Stmt:
    """``body`` with every gemm tile op's warp policy set to ``FullRow``: its warpgroups split the tile by rows."""

    def rewrite(call: tirx.Call) -> tirx.Call | None:
        if not isinstance(call.op, tvm.ir.Op) or op_name(call) not in GEMM_OPS:
            return None
        regions = next(i for i, a in enumerate(call.args) if not isinstance(a, tirx.Call))
        args = list(call.args)
        args[regions + _POLICY] = tirx.IntImm(args[regions + _POLICY].dtype, int(T.GemmWarpPolicy.FullRow))
        return tirx.Call(call.dtype, call.op, args, call.annotations)

    return tirx.stmt_functor.ir_transform(body, None, rewrite, ["tirx.Call"])


def _wgmma_wait(offsets: tuple[int, ...], k: tirx.Var) -> tirx.Stmt:
    """``wait_wgmma<N>`` where ``N`` counts the ``offsets`` <= ``k``: a group issued ``o`` stages behind
    exists from loop step ``o`` on (:func:`pt_tvm.lowering.wgmma_waits`); TileLang folds the test per step."""
    stmt = tirx.Evaluate(T.wait_wgmma(sum(o <= 0 for o in offsets)))
    for o in sorted({o for o in offsets if o > 0}):
        stmt = tirx.IfThenElse(k >= o, tirx.Evaluate(T.wait_wgmma(sum(x <= o for x in offsets))), stmt)
    return stmt


def _drained_roles(plan: ExecutionPlan, graph: STaskGraph) -> list[str]:
    """Roles that keep a gemm in flight stages behind their base: the last loop step issues it after the
    last wait, so the role waits for every wgmma once the loop ends."""
    return sorted({plan.append_of(g).role for g in plan.in_flight()
                   if plan.append_of(g).stage > base_stage(plan, graph, plan.append_of(g).role)})


def _bind_id(position: int) -> str:
    """ws op id of the scalar statement at ``position`` in the prologue (a template's per-block sizes, read once;
    a block's early exit), which every role runs first."""
    return f"bind_{position}"


def _is_bind_op(stmt: tirx.Stmt) -> bool:
    """Whether ``stmt`` is a prologue's scalar statement named as a ws op (:func:`_bind_id`)."""
    return (isinstance(stmt, tirx.AttrStmt) and stmt.attr_key == WS_OP_ID and is_block_scalar(stmt.body)
            and text(stmt.value.value).startswith("bind_"))


def _drain_id(role: str) -> str:
    return f"drain_{role}"


def _op(op_id: str, value: Any) -> tirx.Stmt:
    """A statement of pt-tvm's own (a wait, a barrier), named for the schedule to place."""
    stmt = value if isinstance(value, tirx.Stmt) else tirx.Evaluate(value)
    return tirx.AttrStmt(None, WS_OP_ID, tirx.StringImm(op_id), stmt)


def _handoff_ops(h: Handoff, plan: ExecutionPlan, vdev: Any, barriers: tuple[int, ...]) -> tuple[list, list]:
    """(root statements, loop statements) of a handoff: warpgroup 0 opens its own first turn before the
    loop; each turn waits on the warpgroup's barrier and hands on to the next one's.

    A barrier counts two warpgroups' threads: the one waiting (bar.sync) and the one handing on (bar.arrive).
    """
    eu = vdev.eu
    role = plan.role(h.role)
    n, threads = len(barriers), 2 * eu.warpgroup_threads
    w = T.get_warp_group_idx() - role.warp_lo // eu.warpgroup_warps
    first = barriers[0]
    init = tirx.IfThenElse(w == 0, tirx.Evaluate(T.named_barrier_arrive(first, threads)), None)
    sync = T.sync_threads(first + w, threads)
    arrive = T.named_barrier_arrive(first + tirx.FloorMod(w + 1, n), threads)
    return ([_op(_turn_ids(h)[0], init)],
            [_op(_turn_ids(h)[1], sync), _op(_turn_ids(h)[2], arrive)])


def _turn_ids(h: Handoff) -> tuple[str, str, str]:
    """ws_op ids of a handoff's first-turn arrive, per-turn wait and hand-on."""
    return f"turn_init_{h.role}", f"turn_wait_{h.role}", f"turn_hand_on_{h.role}"


def _wait_id(gemm: str) -> str:
    return f"wait_{gemm}"


def _with_body(block: tirx.SBlock, body: tirx.Stmt, annotations: dict) -> tirx.SBlock:
    return tirx.SBlock(block.iter_vars, block.reads, block.writes, block.name_hint, body, block.init,
                       block.alloc_buffers, block.match_buffers, annotations)


def _software_pipeline(block: tirx.SBlock, plan: ExecutionPlan, graph: STaskGraph, walk: "_TileWalk") -> tirx.SBlock:
    pro, loop, body, epi = _split(block)
    ids = [t.id for t in graph.loop_stasks]
    order = [a.stask for a in plan.program(plan.roles[0].name, graph, Placement.LOOP)]
    position = {sid: i for i, sid in enumerate(order)}
    ann = {_ORDER: [position[sid] for sid in ids], _STAGE: [plan.append_of(sid).stage for sid in ids]}
    new_loop = _with_loop_annotations(loop, ann, drop=("num_stages", _ORDER, _STAGE))
    return _with_body(block, _seq(walk.tiles([*pro, new_loop, *epi])), dict(block.annotations))


# ---------------------------------------------------------------- WSSchedule
def _warp_specialize(block: tirx.SBlock, plan: ExecutionPlan, graph: STaskGraph, vdev: Any,
                     walk: "_TileWalk") -> tirx.SBlock:
    pro, loop, body, epi = _split(block)
    stamped = iter(t.id for t in graph.stasks)
    later = wgmma_waits(plan, graph)
    waits = {gemm: _wgmma_wait(later.get(gemm, ()), loop.loop_var) for gemm in plan.in_flight()}
    pro, body, epi = (_stamp_all(part, stamped, waits) for part in (pro, body, epi))
    binds = [_bind_id(i) for i, s in enumerate(pro) if is_block_scalar(s)]
    pro = [_op(_bind_id(i), s) if is_block_scalar(s) else s for i, s in enumerate(pro)]
    drains = [_op(_drain_id(r), tirx.Evaluate(T.wait_wgmma(0))) for r in _drained_roles(plan, graph)]
    epi = [*drains, *(walk.finish(epi, plan, graph, block) if plan.stream_k else epi)]
    barriers = handoff_barriers(plan, vdev)
    once = []  # a persistent kernel opens the first turns once, before its first tile
    for h in plan.handoffs:
        root_ops, loop_ops = _handoff_ops(h, plan, vdev, barriers[h.role])
        body = [*body, *loop_ops]
        if plan.persistent:
            once += root_ops
        else:
            pro = [*pro, *root_ops]
    new_loop = _with_loop_annotations(loop, {WS_OP_ID: graph.loop.id}, body=_seq(body))
    buffers = {b.name: b for b in block.alloc_buffers}
    schedule = T.WSSchedule(
        num_warps=plan.num_warps,
        roles=[T.WSRole(r.name, warps_lo=r.warp_lo, warps_hi=r.warp_hi, max_nreg=r.max_nreg) for r in plan.roles],
        pipelines=[T.WSPipeline(p.name, [buffers[b] for b in p.buffers], depth=p.depth) for p in plan.pipelines],
        scopes=[T.WSScope(graph.loop.id, _loop_bodies(plan, graph)), *_tile_scopes(plan, graph, binds)],
    )
    ann = dict(block.annotations)
    ann[_WS_SCHEDULE] = schedule
    if plan.stream_k:
        ann[_IMPORT_SOURCE] = walk.fixup_source(plan, graph)
    return _with_body(block, _seq([*once, *walk.tiles([*pro, new_loop, *epi])]), ann)


def _touches(graph: STaskGraph, sid: str, pipe: Pipeline) -> bool:
    """Whether sTask ``sid`` reads or writes a buffer of ``pipe``; pt-tvm's own statements (waits,
    barriers) are no sTasks and touch none."""
    t = graph.by_id.get(sid)
    return t is not None and bool(set(pipe.buffers) & (t.read_buffers() | t.write_buffers()))


def _bracket(entries: list[Any], pipes: list[Pipeline], touches, role_is_producer: bool, stage_of) -> list:
    """Wrap each pipeline's first..last touching entry in acquire/commit (producer) or wait/release (consumer)."""
    out = list(entries)
    for p in pipes:
        hits = [i for i, e in enumerate(out) if isinstance(e, str) and touches(e, p)]
        if not hits:
            continue
        stage = stage_of(out[hits[0]])
        open_, close = ((T.WSSync.producer_acquire, T.WSSync.producer_commit) if role_is_producer
                        else (T.WSSync.consumer_wait, T.WSSync.consumer_release))
        out.insert(hits[-1] + 1, close(p.name, stage=stage))
        out.insert(hits[0], open_(p.name, stage=stage))
    return out


def _loop_bodies(plan: ExecutionPlan, graph: STaskGraph) -> dict[str, list]:
    pipes = [p for p in plan.pipelines if p.scope == "loop"]
    waits: dict[str, list[str]] = {}  # waiter -> the waits placed before it, oldest gemm first
    for gemm, waiter in plan.in_flight().items():
        waits.setdefault(waiter, []).append(gemm)
    issue = {a.stask: i for i, a in enumerate(plan.appends)}
    gemm_of = {_wait_id(gemm): gemm for gemm in plan.in_flight()}
    turns = {h.role: h for h in plan.handoffs}

    def touches(entry: str, p: Pipeline) -> bool:  # a wait holds the in-flight gemm's buffers until it returns
        return _touches(graph, gemm_of.get(entry, entry), p)

    bodies = {}
    for r in plan.roles:
        h = turns.get(r.name)
        ids = []
        for a in plan.program(r.name, graph, Placement.LOOP):
            if h and a.stask == h.first:
                ids.append(_turn_ids(h)[1])
            ids += [_wait_id(g) for g in sorted(waits.get(a.stask, ()), key=issue.__getitem__)]
            ids.append(a.stask)
            if h and a.stask == h.last:
                ids.append(_turn_ids(h)[2])
        producer = any(p.producer == r.name for p in pipes)
        bodies[r.name] = _bracket(ids, pipes, touches, producer,
                                  lambda sid: plan.append_of(gemm_of.get(sid, sid)).stage)
    return bodies


def _tile_scopes(plan: ExecutionPlan, graph: STaskGraph, binds: list[str]) -> list:
    """The scopes around the loop: the kernel's root, or for a persistent plan its loop over tiles inside a
    root that opens the first turns and runs it; ``binds`` (ws op ids of the prologue's scalar Binds) open
    every role's body."""
    if not plan.persistent:
        return [T.WSScope(T.WSScope.ROOT, _root_bodies(plan, graph, binds, inits=True))]
    if plan.stream_k:  # the accumulator's role finishes each segment with the partial sums' fixup
        bodies = _root_bodies(plan, graph, binds, inits=False)
        owner = plan.append_of(accumulator(graph)[0]).role
        epilogue = {a.stask for a in plan.program(owner, graph, Placement.EPILOGUE)}
        bodies[owner] = [e for e in bodies[owner] if e not in epilogue] + [_SK_FIXUP, _SK_EPILOGUE]
        return [T.WSScope(TILES_ID, bodies), T.WSScope(T.WSScope.ROOT, {r.name: [TILES_ID] for r in plan.roles})]
    inits = {h.role: [_turn_ids(h)[0]] for h in plan.handoffs}
    return [T.WSScope(TILES_ID, _root_bodies(plan, graph, binds, inits=False)),
            T.WSScope(T.WSScope.ROOT, {r.name: [*inits.get(r.name, ()), TILES_ID] for r in plan.roles})]


def _root_bodies(plan: ExecutionPlan, graph: STaskGraph, binds: list[str], inits: bool) -> dict[str, list]:
    """Per role: the prologue's scalar Binds (``binds``: every role reads them), the prologue, the loop and the
    epilogue (and the turns' first arrive where ``inits``)."""
    pipes = [p for p in plan.pipelines if p.scope == "root"]
    loop_reads = {b for t in graph.loop_stasks for b in t.read_buffers()}
    inits = {h.role: _turn_ids(h)[0] for h in plan.handoffs} if inits else {}
    drained = _drained_roles(plan, graph)
    bodies = {}
    for r in plan.roles:
        ids = ([*binds, *(a.stask for a in plan.program(r.name, graph, Placement.PROLOGUE))]
               + ([inits[r.name]] if r.name in inits else []) + [graph.loop.id]
               + ([_drain_id(r.name)] if r.name in drained else [])
               + [a.stask for a in plan.program(r.name, graph, Placement.EPILOGUE)])
        producer = any(p.producer == r.name for p in pipes)

        def touches(entry: str, p: Pipeline) -> bool:
            if entry == graph.loop.id:
                return not producer and bool(set(p.buffers) & loop_reads)
            return _touches(graph, entry, p)

        bodies[r.name] = _bracket(ids, pipes, touches, producer, lambda _: 0)
    return bodies


# ---------------------------------------------------------------- the walk over output tiles
class _TileWalk:
    """How the kernel's blocks reach their output tiles: in the plan's :class:`~pt_tvm.plan.TileOrder`, the
    launch indices of the tile a block computes become expressions of its own; a persistent plan launches
    one block per EU and loops over the tiles, ``tile = step * blocks + block``, guarded past the last; a
    stream-K split, over its block's segments (:mod:`pt_tvm.stream_k`)."""

    def __init__(self, plan: ExecutionPlan, launch: Mapping[str, tuple], vdev: Any, graph: STaskGraph) -> None:
        self.plan = plan
        self.vars = [var for var, _ in launch.values()]
        self.extents = [ext for _, ext in launch.values()]
        self.names = list(launch)
        self.workers = vdev.num_eus - vdev.num_eus % CLUSTER if plan.multicast else vdev.num_eus
        self.warp = vdev.eu.warp_size
        self.loop_id = graph.loop.id
        if plan.stream_k:  # the segment a block runs: its tile and k-range, bound per step of the walk
            self.split = Split(math.prod(self.extents), int(graph.loop.trip_count), self.workers)
            self.segment = tuple(tirx.Var(n, "int32") for n in ("tile", "k_begin", "k_end", "slot"))
            self.worker = tirx.Var("worker", "int32")  # the block (blockIdx.x), which the walk does not rebind

    def tiles(self, stmts: list[tirx.Stmt]) -> list[tirx.Stmt]:
        """The root block's statements, computing the tile in the plan's order first."""
        order = self.plan.tile_order
        if order.is_launch_order and not self.plan.persistent:
            return stmts
        gx, gy = self.extents[0], self.extents[1] if len(self.extents) > 1 else 1
        x, y, z = (self.vars + [None, None])[:3]
        if not self.plan.persistent:
            cx, cy = _walked(order, x + y * gx if y is not None else x, gx, gy)
            binds, subst = self._bind({x: cx, y: cy})
            return [*binds, *(tirx.stmt_functor.substitute(s, subst) for s in stmts)]
        if any(_is_bind_op(s) and is_block_exit(s.body) for s in stmts):
            raise ScheduleMismatch("a persistent plan walks tiles in a loop, which a block's early exit "
                                   "(T.thread_return) would leave with tiles undone; plan this kernel as launched")
        if self.plan.stream_k:
            return self._segments(stmts, gx, gy, x, y, z)
        return self._persistent(stmts, x, y, z)

    def _segments(self, stmts: list[tirx.Stmt], gx: int, gy: int, x: Any, y: Any, z: Any) -> list[tirx.Stmt]:
        """Stream-K: each block walks its segments (the split's ``pt_sk::`` functions); a segment binds its tile,
        k-range and slot, runs the loop over that range only (``k`` offset by the range's start) and is skipped
        when empty."""
        step = tirx.Var("segment", "int32")
        tile, k0, k1, slot = self.segment
        cx, cy = _walked(self.plan.tile_order, tile % (gx * gy) if z is not None else tile, gx, gy)
        binds, subst = self._bind({x: cx, y: cy, z: tile // (gx * gy) if z is not None else None})
        body = [self._k_range(tirx.stmt_functor.substitute(s, subst), k0, k1) for s in stmts]
        walk = [tirx.Bind(self.worker, x), *(tirx.Bind(v, _split_call(f, x, step)) for v, f in zip(
            self.segment, ("tile", "k_begin", "k_end", "slot"))), *binds, tirx.IfThenElse(k0 < k1, _seq(body), None)]
        return [tirx.For(step, 0, self.split.segments, tirx.ForKind.SERIAL, _seq(walk),
                         annotations={WS_OP_ID: TILES_ID})]

    def _persistent(self, stmts: list[tirx.Stmt], x: Any, y: Any, z: Any) -> list[tirx.Stmt]:
        """A persistent plan's walk: ``tile = step * blocks + block`` over the grid in the plan's order, the last
        step guarded. A multicast plan's clusters walk pairs of tiles instead, neighbours along its launch index:
        the CTAs of a cluster (consecutive blocks) take the pair's two tiles, ``2 * pair + rank`` along that index,
        and run the same steps, so their barriers stay in step."""
        grid = [*self.extents, 1, 1][:3]
        group, unit, name = 1, x, "tile"  # the blocks that walk one tile (a pair) together; their index
        if self.plan.multicast:
            axis = self.names.index(self.plan.multicast)
            grid[axis] //= CLUSTER
            group, unit, name = CLUSTER, x // CLUSTER, "tile_pair"
        gx, gy = grid[0], grid[1]
        units, total = self.workers // group, math.prod(grid)
        step, tile = tirx.Var("tile_step", "int32"), tirx.Var(name, "int32")
        coords = list(_walked(self.plan.tile_order, tile % (gx * gy) if z is not None else tile, gx, gy))
        if group > 1:
            coords[axis] = coords[axis] * group + x % group
        guarded = total % units != 0
        # the template's Binds (its per-tile sizes, read from the tile's z) run before the guard, where each role's
        # later ops can see them, so a past-the-end tile's z is clamped there
        lead = [s for s in stmts if _is_bind_op(s)]
        rest = [s for s in stmts if not _is_bind_op(s)]
        cz = tile // (gx * gy) if z is not None else None
        if cz is not None and guarded and lead:
            cz = tirx.min(cz, grid[2] - 1)
        binds, subst = self._bind({x: coords[0], y: coords[1], z: cz})
        lead = [tirx.stmt_functor.substitute(s, subst) for s in lead]
        body = _seq([tirx.stmt_functor.substitute(s, subst) for s in rest])
        if guarded:
            body = tirx.IfThenElse(tile < total, body, None)
        return [tirx.For(step, 0, -(-total // units), tirx.ForKind.SERIAL,
                         _seq([tirx.Bind(tile, step * units + unit), *binds, *lead, body]),
                         annotations={WS_OP_ID: TILES_ID})]

    def _k_range(self, stmt: tirx.Stmt, k0: Any, k1: Any) -> tirx.Stmt:
        """``stmt``, the pipelined loop in it running ``k`` over ``[k0, k1)`` instead of its whole range."""
        def visit(n: tirx.For) -> tirx.Stmt | None:
            if text(n.annotations.get(WS_OP_ID, "")) != self.loop_id:
                return None
            body = tirx.stmt_functor.substitute(n.body, {n.loop_var: n.loop_var + k0})
            return tirx.For(n.loop_var, 0, k1 - k0, n.kind, body, n.thread_binding, n.annotations, n.step)

        return tirx.stmt_functor.ir_transform(stmt, None, visit, ["tirx.For"])

    def finish(self, epi: list[tirx.Stmt], plan: ExecutionPlan, graph: STaskGraph,
               block: tirx.SBlock) -> list[tirx.Stmt]:
        """A stream-K segment's end: a tail publishes its partial sums to its slot; a head adds those of the slots
        from its own on that its tile's tails filled, then runs the epilogue (which whole tiles and heads run,
        ``k0 == 0``)."""
        _, acc = accumulator(graph)
        data = next(b for b in block.alloc_buffers if b.name == acc).data
        _, k0, k1, slot = self.segment
        other = tirx.Var("contributor", "int32")
        publish = tirx.Evaluate(tirx.call_extern("int32", f"{FIXUP_NAMESPACE}::publish", data, slot))
        add = tirx.For(other, 0, _split_call("adds", self.worker), tirx.ForKind.SERIAL, tirx.Evaluate(
            tirx.call_extern("int32", f"{FIXUP_NAMESPACE}::accumulate", data, slot + other)))
        fixup = tirx.IfThenElse(k0 > 0, publish, tirx.IfThenElse(k1 < self.split.n, add, None))
        return [_op(_SK_FIXUP, fixup), _op(_SK_EPILOGUE, tirx.IfThenElse(k0 == 0, _seq(epi), None))]

    def fixup_source(self, plan: ExecutionPlan, graph: STaskGraph) -> str:
        """The CUDA of :func:`pt_tvm.stream_k.fixup_source` for the accumulator's role."""
        gemm, acc = accumulator(graph)
        role = plan.role(plan.append_of(gemm).role)
        threads = (role.warp_hi - role.warp_lo) * self.warp
        elems = math.prod(graph.buffers[acc].shape)
        return fixup_source(self.split, elems // threads, role.warp_lo * self.warp, threads)

    @staticmethod
    def _bind(values: Mapping[Any, Any]) -> tuple[list[tirx.Stmt], dict]:
        """A Bind of a fresh variable per launch index, and the substitution of the index by it."""
        binds, subst = [], {}
        for var, value in values.items():
            if var is None or value is None:
                continue
            fresh = tirx.Var(f"{var.name}_tile", var.dtype)
            binds.append(tirx.Bind(fresh, value))
            subst[var] = fresh
        return binds, subst

    def relaunch(self, body: tirx.Stmt) -> tirx.Stmt:
        """The function body launching one block per EU (a persistent plan) instead of one per tile."""
        if not self.plan.persistent:
            return body

        def launch(n: tirx.For) -> tirx.Stmt | None:
            tag = n.thread_binding.thread_tag if n.thread_binding is not None else ""
            if not tag.startswith("blockIdx."):
                return None
            if tag != "blockIdx.x":
                return n.body
            binding = tirx.IterVar(tvm.ir.Range(0, self.workers), n.loop_var, tirx.IterVar.ThreadIndex, tag)
            return tirx.For(n.loop_var, 0, self.workers, n.kind, n.body, binding, n.annotations)

        return tirx.stmt_functor.ir_transform(body, None, launch, ["tirx.For"])


def _split_call(name: str, *args: Any) -> Any:
    """A call of the stream-K split's CUDA function ``name`` (:func:`pt_tvm.stream_k.fixup_source`)."""
    return tirx.call_pure_extern("int32", f"{FIXUP_NAMESPACE}::{name}", *args)


def _walked(order: TileOrder, linear: Any, gx: int, gy: int) -> tuple[Any, Any]:
    """The block coordinates of tile ``linear`` in ``order``, clamped to the grid (no change to their values: a
    walk is a permutation of the grid) through CUDA's ``min``, which TVM's analyses cannot see into. TileLang's
    thread-sync pass counts the threads a barrier guards by enumerating models of every enclosing condition and
    binding in Z3, and the walk's divisions and selects made it give up early: a persistent causal walk whose last
    panel was partial (7 query blocks in panels of 2) counted 252 of 256 threads and refused to lower, as did
    launch-order walks before each division was by a constant and the coordinates were clamped. Opaque, bounded
    only by the clamp, the coordinates keep the analyses what they need (the grid's range) and no more."""
    x, y = order.coords(linear, gx, gy, _select)
    return tuple(tirx.max(tirx.min(tirx.call_pure_extern("int32", "min", v, n - 1), n - 1), 0)
                 for v, n in ((x, gx), (y, gy)))


def _select(cond: Any, a: Any, b: Any) -> Any:
    return tirx.Select(cond, tirx.const(a, "int32") if isinstance(a, int) else a,
                       tirx.const(b, "int32") if isinstance(b, int) else b)
