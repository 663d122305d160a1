"""The rules every plan passes before it reaches TileLang, and the resource estimates they use.

:func:`verify` is the gate in front of TileLang: it rejects a plan that breaks a
dependence (loop-carried ones and those through register fragments across stage
offsets included), can deadlock, or exceeds the EU's shared memory, registers or
threads, naming the rule, the limit and by how much (:class:`~pt_tvm.plan.Violation`).
"""
from __future__ import annotations

import math
from collections.abc import Iterable

from .graph import BLOCK_SYNC, BOX_OFF_BOUNDARY, DepKind, Edge, OpKind, Placement, STask, STaskGraph
from .hw import SEUKind, VDevice
from .lowering import MAX_HANDOFF_WARPGROUPS, NAMED_BARRIERS, carried_gemms, reuses_dead_shared, splits_rows
from .plan import (
    CLUSTER,
    ExecutionPlan,
    PlanError,
    Style,
    TileOrder,
    Violation,
    effective_distance,
    in_flight_clash,
)
from .simulate import Simulation
from .stream_k import Split, accumulator, runs_unskewed

__all__ = ["violations", "verify", "loop_order_holds", "deadlock_iterations", "deadlock_violations",
           "register_estimate", "fragment_bytes", "shared_bytes", "gemm_warpgroups"]


def violations(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice, *, deadlock: bool = True) -> list[Violation]:
    """Every rule this plan breaks for ``graph`` on ``vdev`` (empty when it is valid). ``deadlock=False`` leaves
    the deadlock rule to a caller that runs the plan over :func:`deadlock_iterations` or more anyway (the
    search, pricing it: :func:`pt_tvm.cost.estimate` raises the rule's :class:`PlanError`)."""
    out: list[Violation] = []
    out += _check_coverage(plan, graph, vdev)
    if out:
        return out  # the other checks assume every sTask is placed once
    broken = _check_dependences(plan, graph)
    handoffs = _check_handoffs(plan, graph, vdev)
    out += broken + handoffs
    if deadlock and not broken and not handoffs:
        out += _check_deadlock(plan, graph, vdev)
    out += _check_waits(plan, graph)
    out += _check_in_flight(plan, graph)
    if plan.style == Style.WARP_SPECIALIZED:
        out += _check_ws_structure(plan, graph, vdev)
    out += _check_resources(plan, graph, vdev)
    out += _check_emission(plan, graph, vdev)
    out += _check_tile_walk(plan, graph)
    if plan.stream_k:
        out += _check_stream_k(plan, graph, vdev)
    if plan.carry_gemms:
        out += _check_carry(plan, graph, vdev)
    if plan.multicast:
        out += _check_multicast(plan, graph, vdev)
    return out

def verify(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> ExecutionPlan:
    """Return the plan, or raise :class:`PlanError` listing every broken rule."""
    found = violations(plan, graph, vdev)
    if found:
        raise PlanError(found)
    return plan


def _check_coverage(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> list[Violation]:
    out = []
    roles = {r.name for r in plan.roles}
    counts: dict[str, int] = {}
    for a in plan.appends:
        counts[a.stask] = counts.get(a.stask, 0) + 1
        if a.role not in roles:
            out.append(Violation("coverage", f"sTask {a.stask} is appended to unknown role {a.role!r}"))
        if not vdev.eu.has(a.seu):
            out.append(Violation("seu", f"sTask {a.stask} is appended to a {a.seu.value} sEU that {vdev.name} lacks"))
    for t in graph.stasks:
        n = counts.pop(t.id, 0)
        if n != 1:
            out.append(Violation("coverage", f"sTask {t.id} is appended {n} times (exactly once required)"))
        elif t.placement != Placement.LOOP and plan.append_of(t.id).stage != 0:
            out.append(Violation("stage", f"sTask {t.id} is outside the loop but has stage "
                                          f"{plan.append_of(t.id).stage}"))
        elif plan.append_of(t.id).stage < 0:
            out.append(Violation("stage", f"sTask {t.id} has a negative stage"))
        elif not _seu_fits(t, plan.append_of(t.id).seu):
            out.append(Violation("seu", f"sTask {t.id} ({t.op.value}) cannot run on a "
                                        f"{plan.append_of(t.id).seu.value} sEU"))
    for extra in counts:
        out.append(Violation("coverage", f"plan appends {extra!r}, which is not an sTask of graph {graph.name!r}"))
    return out


def _seu_fits(t: STask, seu: SEUKind) -> bool:
    if seu == t.seu:
        return True
    if t.op == OpKind.COPY:  # a bulk copy may fall back to the load/store path
        return t.seu == SEUKind.TMA and seu == SEUKind.LSU
    return t.seu == SEUKind.SFU and seu == SEUKind.CUDA_CORE


def _position(plan: ExecutionPlan, graph: STaskGraph) -> dict[str, tuple[str, int]]:
    """sTask -> (role, index in the role's loop program)."""
    pos = {}
    for r in plan.roles:
        for i, a in enumerate(plan.program(r.name, graph, Placement.LOOP)):
            pos[a.stask] = (r.name, i)
    return pos


def _check_dependences(plan: ExecutionPlan, graph: STaskGraph) -> list[Violation]:
    """Same-role loop dependences must hold in the stage-shifted order; cross-role ones need a pipeline."""
    out = []
    pos = _position(plan, graph)
    role_of = {a.stask: a.role for a in plan.appends}
    for e in graph.edges:
        src, dst = graph.stask(e.src), graph.stask(e.dst)
        if role_of[e.src] != role_of[e.dst]:
            if plan.pipeline_of(e.buffer) is None:
                out.append(Violation("dependence", f"{e.kind.value} {e.src} -> {e.dst} on {e.buffer} crosses roles "
                                     f"{role_of[e.src]} -> {role_of[e.dst]} without a pipeline"))
            continue
        if src.placement != Placement.LOOP or dst.placement != Placement.LOOP:
            continue  # prologue before loop before epilogue, within one role
        if not loop_order_holds(e, plan, pos[e.src][1], pos[e.dst][1]):
            s_src, s_dst = plan.append_of(e.src).stage, plan.append_of(e.dst).stage
            out.append(Violation(
                "dependence",
                f"{e.kind.value} {e.src} -> {e.dst} on {e.buffer} (distance {e.distance}) is broken: "
                f"{e.src} at stage {s_src} position {pos[e.src][1]} runs after {e.dst} at stage {s_dst} "
                f"position {pos[e.dst][1]} of the iteration it must precede"))
    return out


def loop_order_holds(e: Edge, plan: ExecutionPlan, src_pos: int, dst_pos: int) -> bool:
    """Whether a same-role loop dependence holds with its ends at these positions of the role's loop program:
    the source runs first in the stage-shifted order (a self-dependence: a stage earlier than its distance)."""
    s_src, s_dst = plan.append_of(e.src).stage, plan.append_of(e.dst).stage
    d = effective_distance(e, plan.versions)
    return (s_src, src_pos) < (d + s_dst, dst_pos) or (e.src == e.dst and s_src < d + s_dst)


def _check_deadlock(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> list[Violation]:
    """Roles wait on each other through pipeline barriers, and a handoff's warpgroups on each other's
    turns: run every warpgroup's program (:class:`~pt_tvm.simulate.Simulation`, unpriced) over enough
    iterations to show every wait, and report a cycle of waits that nothing can break (e.g. a producer
    refilling a single-version buffer that a consumer reads one stage late, before a load that consumer
    needs first): on the GPU it would hang."""
    if len(plan.roles) < 2 and not plan.handoffs:
        return []
    sim = Simulation(plan, graph, vdev, deadlock_iterations(plan, graph))
    return deadlock_violations(sim, sim.run())


def deadlock_iterations(plan: ExecutionPlan, graph: STaskGraph) -> int:
    """Loop iterations the deadlock rule simulates: every stage and pipeline version in flight, and two more.
    A run of more iterations holds the same waits and more (each stream's program is a supersequence), so one
    that finishes shows that this one does (the search prices a plan by such a run and skips this one)."""
    depth = max((a.stage for a in plan.appends), default=0)
    return min(depth + max((p.depth for p in plan.pipelines), default=1) + 2, max(2, math.ceil(graph.loop.trip_count)))


def deadlock_violations(sim: Simulation, stuck: list) -> list[Violation]:
    """The deadlock rule's report of the streams a run of ``sim`` left waiting (``Simulation.run``'s list)."""
    by_name = {s.name: s for s in sim.streams}
    lines = []
    for s, (what, it), (src_stream, src, src_it) in stuck:
        line = (f"{sim.describe(s)} waits at {getattr(what, 'stask', what)} (iteration {it}) for {src} "
                f"(iteration {src_it}) of {sim.describe(by_name[src_stream])}")
        if line not in lines:  # the warpgroups of a role that takes no turns wait alike
            lines.append(line)
    return [Violation("deadlock", "roles wait on each other forever: " + "; ".join(lines))] if lines else []


def _check_handoffs(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> list[Violation]:
    """A handoff needs a warp-specialized role of 2+ whole warpgroups and a span of its loop program,
    first to last, that issues at least one tensor-core sTask."""
    out: list[Violation] = []
    roles = {r.name: r for r in plan.roles}
    seen: set[str] = set()
    wg = vdev.eu.warpgroup_warps
    for h in plan.handoffs:
        where = f"handoff in role {h.role}"
        if h.role not in roles:
            out.append(Violation("handoff", f"{where}: the plan has no such role"))
            continue
        if h.role in seen:
            out.append(Violation("handoff", f"{where}: a role takes one handoff, this is a second"))
            continue
        seen.add(h.role)
        if plan.style != Style.WARP_SPECIALIZED:
            out.append(Violation("emission", f"{where}: turns between warpgroups need a warp-specialized plan"))
            continue
        warps = roles[h.role].warps
        if warps % wg or not 2 <= warps // wg <= MAX_HANDOFF_WARPGROUPS:
            out.append(Violation("threads", f"{where}: {warps} warps are not 2 to {MAX_HANDOFF_WARPGROUPS} whole "
                                 f"{wg}-warp warpgroups to take turns"))
            continue
        order = [a.stask for a in plan.program(h.role, graph, Placement.LOOP)]
        absent = [x for x in (h.first, h.last) if x not in order]
        if absent:
            out.append(Violation("handoff", f"{where}: {', '.join(absent)} not in the role's loop program"))
            continue
        i, j = order.index(h.first), order.index(h.last)
        if i > j:
            out.append(Violation("handoff", f"{where}: {h.first} comes after {h.last}"))
        elif not any(plan.append_of(x).seu == SEUKind.TENSOR_CORE for x in order[i:j + 1]):
            out.append(Violation("handoff", f"{where}: {h.first} .. {h.last} issues no tensor-core sTask"))
    if sum(roles[h.role].warps // wg for h in plan.handoffs if h.role in roles) > NAMED_BARRIERS - 4:
        out.append(Violation("handoff", "handoffs need more named barriers than TileLang leaves free"))
    return out


def _check_waits(plan: ExecutionPlan, graph: STaskGraph) -> list[Violation]:
    """Every cross-role RAW dependence is covered by a Wait."""
    role_of = {a.stask: a.role for a in plan.appends}
    waited = {(w.stask, o) for w in plan.waits for o in w.on}
    return [Violation("wait", f"{e.dst} reads {e.buffer} written by {e.src} in role {role_of[e.src]} "
                      f"but has no Wait on it")
            for e in graph.edges
            if e.kind == DepKind.RAW and role_of[e.src] != role_of[e.dst] and (e.dst, e.src) not in waited]


def _check_in_flight(plan: ExecutionPlan, graph: STaskGraph) -> list[Violation]:
    """An in-flight gemm comes before its waiter in the role's loop program, and nothing issued
    between them touches what the gemm reads or writes (its operands stay live, its accumulator busy)."""
    out = []
    for gemm, waiter in plan.in_flight().items():
        g = graph.stask(gemm)
        if g.placement != Placement.LOOP or graph.stask(waiter).placement != Placement.LOOP:
            out.append(Violation("wait", f"in-flight gemm {gemm} and its waiter {waiter} must both be in the loop"))
            continue
        order = [a.stask for a in plan.program(plan.append_of(gemm).role, graph, Placement.LOOP)]
        i, j = order.index(gemm), order.index(waiter)
        if j <= i:
            out.append(Violation("wait", f"{waiter} waits for in-flight gemm {gemm} but runs before it"))
            continue
        for mid in order[i + 1:j]:
            t = graph.stask(mid)
            clash = in_flight_clash(t, g)
            if clash and t.seu != SEUKind.TENSOR_CORE:
                out.append(Violation("dependence", f"{mid} touches {', '.join(sorted(clash))} while gemm {gemm} "
                                     f"is still in flight (its Wait is at {waiter})"))
    return out



def _check_ws_structure(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> list[Violation]:
    """What MaterializeWSSchedule can express: warpgroup-aligned roles, stages only through pipeline spans."""
    out = []
    wg = vdev.eu.warpgroup_warps
    if plan.num_warps % wg:
        out.append(Violation("threads", f"{plan.num_warps} warps is not a whole number of {wg}-warp warpgroups"))
    piped = {b: p for p in plan.pipelines for b in p.buffers}
    for p in plan.pipelines:
        for b in p.buffers:
            if graph.buffers[b].scope != "shared":
                out.append(Violation("pipeline", f"pipeline {p.name} versions {b}, which is not in shared memory"))
        if p.depth < 1:
            out.append(Violation("pipeline", f"pipeline {p.name} has depth {p.depth}"))
    loop_piped = {b for b, p in piped.items() if p.scope == "loop"}
    for a in plan.appends:
        t = graph.stask(a.stask)
        if a.stage and t.placement == Placement.LOOP and not (t.read_buffers() | t.write_buffers()) & loop_piped:
            out.append(Violation("stage", f"sTask {a.stask} has stage {a.stage} but touches no pipeline buffer; "
                                 f"a warp-specialized stage offset comes from a pipeline span"))
    for p in plan.pipelines:
        stages = plan.reader_stages(p, graph)
        if len(stages) > 1:
            out.append(Violation("stage", f"readers of pipeline {p.name} sit at different stages {sorted(stages)}"))
    out += _check_warp_split(plan, graph, vdev)
    out += _check_fragment_split(plan, graph)
    return out


def gemm_warpgroups(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> list[tuple[STask, int]]:
    """(gemm sTask, warpgroups of the role that runs it) for every gemm of the graph."""
    role_of = {a.stask: a.role for a in plan.appends}
    return [(t, plan.role(role_of[t.id]).warps // vdev.eu.warpgroup_warps)
            for t in graph.stasks if t.op == OpKind.GEMM]


def _check_warp_split(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> list[Violation]:
    """Each consumer warpgroup's wgmma needs 64 rows of every gemm tile (FullRow, the template's policy or the
    plan's ``row_split``, splits rows only); three warpgroups only split rows (FlashAttention's 192-row tile: the
    one three-warpgroup split lowered and measured here)."""
    out = []
    for t, wgs in gemm_warpgroups(plan, graph, vdev):
        m, n = t.tile_shape[0], t.tile_shape[1]
        full_row = splits_rows(plan, t)
        split = m // 64 if full_row else (m // 64) * max(1, n // 64)
        if m % 64 or split < wgs or split % wgs or (wgs == 3 and not full_row):
            out.append(Violation("threads", f"{t.id}: a {m}x{n} gemm tile cannot be split over {wgs} consumer "
                                 f"warpgroups (wgmma takes 64 rows per warpgroup)"))
    return out


def _check_fragment_split(plan: ExecutionPlan, graph: STaskGraph) -> list[Violation]:
    """In a kernel of no gemm (whose accumulators' layouts the fragments would follow), a fragment a role's
    ``T.Parallel`` nest writes is laid out over that role's threads, the same number of elements each: TileLang's
    layout inference finds no layout otherwise (the causal conv1d's 128 x 64 tile over three consumer warpgroups'
    384 threads: "no available layout found")."""
    out = []
    if any(t.op == OpKind.GEMM for t in graph.stasks):
        return out
    for a in plan.appends:
        t = graph.stask(a.stask)
        if t.op != OpKind.ELEMENTWISE:
            continue
        threads = plan.role(a.role).warps * 32
        for name in t.write_buffers():
            b = graph.buffers[name]
            if b.scope == "fragment" and b.nbytes and math.prod(b.shape) % threads:
                out.append(Violation("threads", f"{t.id}: fragment {name} {'x'.join(map(str, b.shape))} cannot be "
                                     f"split evenly over role {a.role}'s {threads} threads"))
    return out


def _check_emission(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> list[Violation]:
    """What TileLang 0.1.15 cannot lower (correctly) from a plan."""
    if plan.style != Style.WARP_SPECIALIZED and plan.in_flight():
        return [Violation("emission", f"in-flight gemms {sorted(plan.in_flight())} need a warp-specialized plan "
                          f"(T.Pipelined order/stage cannot place their waits)")]
    return (_check_block_sync(plan, graph) + _check_cp_async_order(plan, graph, vdev) + _check_stage_order(plan, graph)
            + _check_box_starts(plan, graph))


def _check_box_starts(plan: ExecutionPlan, graph: STaskGraph) -> list[Violation]:
    """TMA boxes start only on 16-byte boundaries: TileLang 0.1.15 emits a box that starts off one, and the kernel
    stops with an illegal instruction (one H200, 2026-12-06: the conv's rows read in groups of tokens). A
    warp-specialized plan loads by TMA (a software pipeline by cp.async); a staged tile is stored by TMA in either."""
    out = []
    for t in graph.stasks:
        store = bool(t.writes) and t.writes[0].scope == "global"
        if t.attrs.get(BOX_OFF_BOUNDARY) and (store or plan.style == Style.WARP_SPECIALIZED):
            glob = (t.writes if store else t.reads)[0].buffer
            out.append(Violation("emission", f"{t.id} {'stores' if store else 'loads'} a tile of {glob} whose rows "
                                             f"start off 16-byte boundaries; a TMA box starting there stops the kernel "
                                             f"with an illegal instruction"))
    return out


def _check_block_sync(plan: ExecutionPlan, graph: STaskGraph) -> list[Violation]:
    """A statement that syncs every thread of the block (and so may pick one of them by ``threadIdx``) needs a
    plan that runs it on every thread: a warp-specialized plan runs it on one role's warps. TileLang 0.1.15
    lowers decode's fused combine in such a plan with its barriers narrowed to the consumer warpgroup and its
    ``threadIdx.x == 0`` branch (the counter's atomic) folded away, the producer warp holding thread 0."""
    if plan.style != Style.WARP_SPECIALIZED:
        return []
    return [Violation("emission", f"sTask {t.id} syncs the whole block; a warp-specialized plan runs it on one "
                                  f"role's warps") for t in graph.stasks if t.attrs.get(BLOCK_SYNC)]


def _check_stage_order(plan: ExecutionPlan, graph: STaskGraph) -> list[Violation]:
    """In a software pipeline, two loop statements of one stage that touch one buffer, one of them writing it,
    keep their program order, disjoint regions too (which make no dependence): TileLang 0.1.15's
    InjectSoftwarePipeline refuses to reorder them ("two statements with buffer access dependency in the same
    stage of the software pipeline cannot be reordered": SwiGLU's copies into the gate and up halves of ``B_s``,
    swapped in one stage, stopped an A100 and an MI300X build)."""
    if plan.style != Style.SOFTWARE_PIPELINE:
        return []
    pos = _position(plan, graph)
    loop = sorted((t for t in graph.stasks if t.placement == Placement.LOOP and t.id in pos), key=lambda t: t.index)
    out = []
    for i, first in enumerate(loop):
        for second in loop[i + 1:]:
            if plan.append_of(first.id).stage != plan.append_of(second.id).stage or pos[first.id] < pos[second.id]:
                continue
            shared = (first.write_buffers() & (second.read_buffers() | second.write_buffers())
                      | second.write_buffers() & first.read_buffers())
            if shared:
                out.append(Violation("emission", f"{second.id} runs ahead of {first.id} in their stage, and both "
                                     f"touch {', '.join(sorted(shared))}; TileLang 0.1.15 keeps such statements "
                                     f"in program order"))
    return out


def _check_cp_async_order(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> list[Violation]:
    """In a software pipeline of cp.async loads, a reader placed ahead of its loads (one stage behind
    them) must find them adjacent in the loop body, so that they form one cp.async group.

    Otherwise TileLang 0.1.15 waits for one group too few: on one H200, chunk_scan's scores
    (reading ``dt``, ``dA``, ``cb``, loaded around the ``x`` load) ran after
    ``cp_async_wait<1>`` while the group of ``cb`` was the last committed; relative error 7e-3
    instead of 2e-4. The same order with adjacent loads (chunk_state) emitted ``cp_async_wait<0>``
    and was correct, as were readers two stages behind their loads.
    """
    if plan.style != Style.SOFTWARE_PIPELINE or "cp_async" not in vdev.features or plan.num_stages <= 1:
        return []
    pos = _position(plan, graph)
    loads: dict[str, list[str]] = {}  # reader -> its cp.async loads one stage ahead, when it comes first
    for e in graph.edges:
        if (e.kind == DepKind.RAW and not e.distance and e.src in pos and e.dst in pos
                and plan.append_of(e.src).seu == SEUKind.LSU and graph.buffers[e.buffer].scope == "shared"
                and plan.append_of(e.dst).stage - plan.append_of(e.src).stage == 1):
            loads.setdefault(e.dst, []).append(e.src)
    out = []
    for reader, srcs in loads.items():
        at = sorted({pos[s][1] for s in srcs})
        if pos[reader][1] < at[-1] and at[-1] - at[0] + 1 != len(at):
            out.append(Violation("emission", f"{reader} comes ahead of its cp.async loads {sorted(set(srcs))}, "
                                 f"which are not adjacent in the loop body; TileLang 0.1.15 then waits for too "
                                 f"few cp.async groups"))
    return out



def _check_tile_walk(plan: ExecutionPlan, graph: STaskGraph) -> list[Violation]:
    """A tile order needs a grid of known size (panels: of two launch indices); a persistent kernel, a
    warp-specialized plan (one block per EU, its producer running ahead into the next tile)."""
    out = []
    order, grid = plan.tile_order, list(graph.grid.values())
    if not isinstance(order.panel, int) or isinstance(order.panel, bool) or order.panel < 1 \
            or order.axis not in TileOrder.AXES:
        out.append(Violation("tile_order", f"tile order {order} is not a panel of >= 1 block rows or columns "
                             f"(axis one of {', '.join(TileOrder.AXES)})"))
    elif (not order.is_launch_order or plan.persistent) and (not grid or any(e is None for e in grid)):
        out.append(Violation("tile_order", f"{order.describe()}{' walked persistently' if plan.persistent else ''} "
                             f"needs a grid of known size, not {dict(graph.grid)}"))
    elif not order.is_launch_order and len(grid) < 2:
        out.append(Violation("tile_order", f"{order.describe()} needs a grid of two or more launch indices, "
                             f"not {dict(graph.grid)}"))
    if plan.persistent and plan.style != Style.WARP_SPECIALIZED:
        out.append(Violation("emission", "a persistent kernel needs a warp-specialized plan (pt-tvm walks tiles "
                             "with one block per EU)"))
    return out


def _check_stream_k(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> list[Violation]:
    """A stream-K split (:mod:`pt_tvm.stream_k`) walks persistently, sums one gemm's accumulator over blocks
    (nothing else carried), lets the accumulator's role run the whole epilogue, has a part-filled wave to share;
    its loop runs unskewed (one stage, no wgmma in flight, no turns), since a segment may be one iteration."""
    def no(why: str) -> list[Violation]:
        return [Violation("stream_k", f"a stream-K split {why}")]

    if not plan.persistent:
        return no("needs a persistent walk (one block per EU)")
    try:
        gemm, acc = accumulator(graph)
    except ValueError as e:
        return no(f"sums one accumulator: {e}")
    owner = plan.append_of(gemm).role
    if any(a.role != owner for r in plan.roles for a in plan.program(r.name, graph, Placement.EPILOGUE)):
        return no(f"needs the epilogue in the accumulator's role {owner!r}")
    if not runs_unskewed(plan, graph):
        return no("needs a loop without stage offsets, wgmma in flight or turns")
    trips, blocks = graph.loop.trip_count, graph.grid_blocks()
    if blocks is None or trips != int(trips):
        return no(f"needs a known grid and trip count ({blocks} tiles x {trips:g})")
    try:
        Split(blocks, int(trips), vdev.num_eus)
    except ValueError as e:
        return no(f"has nothing to share out: {e}")
    role = plan.role(owner)
    regs = math.prod(graph.buffers[acc].shape) // ((role.warp_hi - role.warp_lo) * vdev.eu.warp_size)
    if regs % 4:
        return no(f"stores its partial sums four registers at a time (the accumulator has {regs} a thread)")
    return []


def _check_carry(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> list[Violation]:
    """Gemms carried into the next step (``carry_gemms``) hold their stages a step longer and their accumulators
    busy across the step's end: a persistent warp-specialized Hopper plan (:mod:`pt_tvm.passes.carry` says why
    persistent) whose gemm roles run nothing but gemms in their loop, at one stage, on operands that loop
    pipelines of at least two versions deliver, into accumulators no other loop sTask touches; no turns, waits
    or stream-K split to interleave with."""
    def no(why: str) -> list[Violation]:
        return [Violation("carry", f"gemms carried into the next step {why}")]

    if plan.style != Style.WARP_SPECIALIZED or "wgmma" not in vdev.features:
        return no("need a warp-specialized plan on a chip with wgmma")
    if not plan.persistent:
        return no("need a persistent walk (in launched kernels ptxas read the accumulator before the last wait, "
                  "and carrying gained nothing)")
    if plan.stream_k or plan.handoffs or plan.in_flight():
        return no("need a loop without turns, in-flight waits or a stream-K split")
    roles = carried_gemms(plan, graph)
    if not roles:
        return no("need a gemm in the loop")
    out = []
    for role in roles:
        loop = plan.program(role, graph, Placement.LOOP)
        if any(a.seu != SEUKind.TENSOR_CORE for a in loop) or len({a.stage for a in loop}) > 1:
            out += no(f"need role {role}'s loop to run gemms alone, at one stage")
            continue
        piped = {b: p for p in plan.pipelines if p.scope == "loop" and p.consumer == role for b in p.buffers}
        for a in loop:
            t = graph.stask(a.stask)
            stray = t.read_buffers() - set(piped) - t.write_buffers()
            if stray:
                out += no(f"need {t.id}'s operands from loop pipelines ({', '.join(sorted(stray))} is not)")
            shallow = sorted({p.name for b, p in piped.items() if b in t.read_buffers() and p.depth < 2})
            if shallow:
                out += no(f"need two versions of {', '.join(shallow)} (the next step's stage fills while "
                          f"{t.id} still reads this one)")
            for o in graph.loop_stasks:
                clash = (o.read_buffers() | o.write_buffers()) & t.write_buffers()
                if o.id != t.id and clash:
                    out += no(f"need {t.id}'s accumulator to itself ({o.id} touches {', '.join(sorted(clash))})")
    return out


def register_estimate(graph: STaskGraph, threads: int, capped: bool = False, persistent: bool = False) -> int:
    """32-bit registers per thread that the fragments need when spread over ``threads`` threads, plus overhead:
    what ptxas allocates where nothing caps it (a block's occupancy), or, ``capped``, what fits under a
    setmaxnreg ceiling, which ptxas meets by keeping fewer temporaries live. The fragments are counted as
    :func:`fragment_bytes` has them live (``persistent``: in a persistent walk)."""
    frag = fragment_bytes(graph, persistent)
    return int(math.ceil(frag / 4 / max(threads, 1))) + (_CAPPED_REG_OVERHEAD if capped else _REG_OVERHEAD)


def fragment_bytes(graph: STaskGraph, persistent: bool = False) -> int:
    """The fragments' bytes live at once: those the prologue or the loop touch, or those the epilogue touches,
    whichever is more. A fragment only the epilogue touches takes the registers of the loop's dead ones (ptxas
    fits FlashAttention's 96-key tail step after its loop, two score tiles of their own, in the loop's 240
    registers without a spill, 2026-12-01); one only the prologue touches is counted with the loop's (the same
    step taken before the loop serialized every wgmma under that ceiling, 2026-11-30). ``persistent``: the loop
    and the epilogue are one body of the walk's loop over tiles, and every fragment counts (the tail step of
    Whisper's 192 x 128 tile walked persistently: ptxas serialized every wgmma, C7512, and spilled 1312 bytes at
    160 registers; nvcc -Xptxas -v on its CUDA, 2026-12-02)."""
    sizes = {n: b.nbytes or 0 for n, b in graph.buffers.items() if b.scope in ("fragment", "local")}
    live = _live_ranges(graph, sizes.keys())
    epilogue = _ORDER[Placement.EPILOGUE]
    before = sum(size for n, size in sizes.items() if n not in live or live[n][0][0] < epilogue)
    if persistent:
        return before + sum(size for n, size in sizes.items() if n in live and live[n][0][0] == epilogue)
    return max(before, sum(size for n, size in sizes.items() if n in live and live[n][1][0] == epilogue))


_ORDER = {Placement.PROLOGUE: 0, Placement.LOOP: 1, Placement.EPILOGUE: 2}


def _point(t: STask) -> tuple[int, int]:
    """Where ``t`` runs in program order: its placement, then its index outside the loop (the loop one point)."""
    return (_ORDER[t.placement], 0 if t.placement == Placement.LOOP else t.index)


def _live_ranges(graph: STaskGraph, names: Iterable[str]) -> dict[str, tuple[tuple[int, int], tuple[int, int]]]:
    """The first and last :func:`_point` at which an sTask touches each of ``names`` (those no sTask touches are
    left out)."""
    names = set(names)
    live: dict[str, tuple[tuple[int, int], tuple[int, int]]] = {}
    for t in graph.stasks:
        p = _point(t)
        for b in (t.read_buffers() | t.write_buffers()) & names:
            lo, hi = live.get(b, (p, p))
            live[b] = (min(lo, p), max(hi, p))
    return live


# addresses, loop state, wgmma descriptors, temporaries: fits ptxas reports of the FA kernels; the co-resident
# blocks the cost model counts for software pipelines rest on it (tests/test_modelcheck.py, chunk_state)
_REG_OVERHEAD = 40
# the same under a setmaxnreg ceiling: ptxas compiles without spills FlashAttention's consumers at 160 registers
# with 131 of fragments (192x128 tile, head dim 64, three warpgroups) and at 240 with 211 (128x192, head dim
# 128), and spills 124 bytes at 240 with 200 (128x96, head dim 256, one stage: not an exact bound, and not a
# tile FlashAttention's space offers)
_CAPPED_REG_OVERHEAD = 28


_TMA_ALIGN = 1024  # TileLang's merge aligns a TMA or wgmma operand for the 128-byte swizzle (the worst case)


def shared_bytes(plan: ExecutionPlan, graph: STaskGraph) -> int:
    """Shared memory the plan allocates: shared buffers times their versions, plus mbarriers.

    In a warp-specialized plan each buffer is counted at its slot, rounded up to the 1024
    bytes TileLang aligns every TMA and wgmma operand to (a small buffer placed before one leaves the
    rest of its slot empty: chunk_scan's 128 x 64 tiles allocate 216064 B, 215712 without). A software
    pipeline's count is looser: TileLang's allocator fits its small buffers into the gaps and may keep
    fewer versions (chunk_scan's 3 stages: 33792 B allocated, 37984 counted).

    Where the kernel reuses dead bytes (:func:`pt_tvm.lowering.reuses_dead_shared`), buffers
    whose live ranges do not overlap share them (e.g. an epilogue staging tile and the loop's
    input tiles); a persistent warp-specialized kernel keeps every buffer apart, and in any
    warp-specialized one the stages its producer loads live from the start (a prologue's tiles
    keep their own bytes).
    """
    align = _TMA_ALIGN if plan.style == Style.WARP_SPECIALIZED else 1
    sizes = {name: -(-(b.nbytes or 0) * plan.versions(name) // align) * align
             for name, b in graph.buffers.items() if b.scope == "shared"}
    barriers = sum(2 * 8 * p.depth for p in plan.pipelines)
    if not reuses_dead_shared(plan, graph):
        return sum(sizes.values()) + barriers
    live = _live_ranges(graph, sizes)
    if plan.style == Style.WARP_SPECIALIZED:  # the producer fills the loop's stages while the consumers still run
        # the prologue, so a stage the producer loads lives from the kernel's start
        first = min(_point(t) for t in graph.stasks)
        for t in graph.loop_stasks:
            if plan.append_of(t.id).seu == SEUKind.TMA:
                for b in t.write_buffers() & live.keys():
                    live[b] = (first, live[b][1])
    points = {_point(t) for t in graph.stasks} | {(_ORDER[Placement.LOOP], 0)}
    peak = max((sum(sizes[b] for b, (lo, hi) in live.items() if lo <= p <= hi) for p in points), default=0)
    return peak + barriers


def _check_resources(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> list[Violation]:
    out = []
    eu = vdev.eu
    smem = shared_bytes(plan, graph)
    if smem > eu.smem_per_block:
        out.append(Violation("shared_memory", f"needs {smem} B of shared memory, {smem - eu.smem_per_block} B over "
                             f"the {eu.smem_per_block} B a block may use on {vdev.name}"))
    threads = plan.num_warps * eu.warp_size
    if threads > eu.max_threads_per_block:
        out.append(Violation("threads", f"{threads} threads, {threads - eu.max_threads_per_block} over the "
                             f"{eu.max_threads_per_block} a block may have"))
    compute_roles = [r for r in plan.roles if any(
        a.role == r.name and a.seu != SEUKind.TMA for a in plan.appends)]
    compute_threads = sum(r.warps for r in compute_roles) * eu.warp_size
    total = 0
    for r in plan.roles:
        budget = r.max_nreg or eu.max_regs_per_thread
        need = register_estimate(graph, compute_threads, capped=bool(r.max_nreg), persistent=plan.persistent)
        rthreads = (r.warps if plan.style != Style.WARP_SPECIALIZED
                    else math.ceil(r.warps / eu.warpgroup_warps) * eu.warpgroup_warps) * eu.warp_size
        total += rthreads * (budget if r.max_nreg else min(need, budget))
        if r.max_nreg and not (eu.min_regs_per_thread <= r.max_nreg <= 256
                               and r.max_nreg % eu.reg_alloc_granularity == 0):
            out.append(Violation("registers", f"role {r.name}: max_nreg {r.max_nreg} is not a multiple of "
                                 f"{eu.reg_alloc_granularity} in [{eu.min_regs_per_thread}, 256]"))
        if r in compute_roles and need > min(budget, eu.max_regs_per_thread):
            out.append(Violation("registers", f"role {r.name}: fragments need ~{need} registers per thread, "
                                 f"{need - min(budget, eu.max_regs_per_thread)} over its budget of "
                                 f"{min(budget, eu.max_regs_per_thread)}"))
    if total > eu.regs_per_eu:
        out.append(Violation("registers", f"roles hold {total} registers in total, {total - eu.regs_per_eu} over the "
                             f"{eu.regs_per_eu} of one {eu.name}"))
    return out


def _check_multicast(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> list[Violation]:
    """2-CTA clusters (``multicast``): a persistent warp-specialized plan on a chip with clusters, its tiles paired
    along a launch index of even extent (the walk gives both CTAs of a cluster a tile, :mod:`pt_tvm.passes.apply`),
    a loop of loads and gemms alone (GEMMs: what was measured in clusters) of as many steps in every tile (a causal or
    variable-length loop would leave one CTA waiting for loads the other never issues), and loop copies shared along
    it, each a TMA copy into a loop pipeline (the stage both CTAs release)."""
    def no(why: str) -> list[Violation]:
        return [Violation("multicast", f"2-CTA clusters along {plan.multicast} {why}")]

    if plan.style != Style.WARP_SPECIALIZED or not {"clusters", "tma"} <= vdev.features:
        return no(f"need a warp-specialized plan on a chip with clusters and TMA ({vdev.name})")
    if not plan.persistent or plan.stream_k:
        return no("need a persistent walk of whole tiles")
    names = list(graph.grid)
    if plan.multicast not in names[:2]:
        return no(f"need one of the grid's first two launch indices ({', '.join(names[:2]) or 'none'})")
    extent = graph.grid[plan.multicast]
    if not isinstance(extent, int) or extent % CLUSTER:
        return no(f"need an even number of tiles along it (it has {extent})")
    if not graph.loads_and_multiplies:
        return no("need a loop of loads and gemms alone (the kind of kernel measured in clusters: GEMMs)")
    if graph.loop.max_trip_count or not graph.loop.extent.isdigit():
        return no(f"need as many loop steps in every tile (a pair's CTAs step in lockstep; {graph.loop.id} runs "
                  f"{graph.loop.extent} steps)")
    shared = graph.loads_shared_along(plan.multicast)
    if not shared:
        return no("need a loop copy whose tile does not vary along it")
    out = []
    piped = {b for p in plan.pipelines if p.scope == "loop" for b in p.buffers}
    for t in shared:
        if plan.append_of(t.id).seu != SEUKind.TMA:
            out += no(f"need {t.id} on the TMA copy engine (a multicast is a TMA copy)")
        if not t.write_buffers() <= piped:
            out += no(f"need {t.id}'s tile in a loop pipeline (both CTAs release its stages)")
    return out
