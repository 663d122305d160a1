"""The plans worth trying for one tile (the intra-EU space): construction, orders, stages and sync variants.

Two plan shapes, one per emission style:

* warp-specialized (Hopper): a TMA producer warp streams global->shared tiles
  through pipelines of ``depth`` versions; ``consumer_wgs`` consumer warpgroups
  run everything else, reading each pipeline at a chosen stage.
* software-pipelined (sm_80, ROCm; Hopper without a producer warp): one role;
  loads at stage 0, the rest at ``num_stages - 1``.

Within a role the order is a topological order of the sTasks under the stage
offsets (the paper's priority list scheduling): an edge whose source runs in
the same step as its destination fixes their order; the priority picks among
the ready sTasks. Around those base plans the space offers each asynchronous
sTask moved through the program, wgmmas kept in flight (the Wait primitive on
the tensor core) and consumer warpgroups taking turns (Handoff).
"""
from __future__ import annotations

import enum
import heapq
import itertools
import math
import random
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

from .graph import DepKind, OpKind, Placement, STask, STaskGraph
from .hw import SEUKind, VDevice
from .lowering import FULL_ROW_POLICY, wgmma_columns
from .plan import (
    Append,
    ExecutionPlan,
    Handoff,
    Pipeline,
    Role,
    Style,
    TileOrder,
    Wait,
    effective_distance,
    in_flight_clash,
)
from .stream_k import Split, runs_unskewed
from .verify import gemm_warpgroups, loop_order_holds, shared_bytes, violations

__all__ = ["SearchSpace", "Priority", "is_load", "warp_specialized", "software_pipelined", "order_role",
           "producer_nreg", "consumer_nreg", "reader_stages", "in_flight_variants", "overlapped", "handoff_variants",
           "producer_streams", "base_plans", "async_moves", "reordered", "resource_bound", "PANELS", "FORWARD_PANELS",
           "COLUMN_SPAN_L2", "CAUSAL_COLUMN_PANELS", "column_span_bytes", "tile_orders", "tile_walks", "shallower",
           "walks_persistently", "row_split_variant", "carried_variant"]

PRODUCER, CONSUMER, BLOCK = "producer", "consumer", "block"
PRODUCER_NREG = 24  # the TMA warp needs few registers; its warpgroup donates the rest (setmaxnreg)
# beside a lone consumer warpgroup (240 a thread) the file has room to spare: the producer keeps more, where a paged
# KV block of 80-wide heads (40 TMA boxes a block, each a page lookup) spilled 40 bytes at 24 (2026-11-30)
LONE_CONSUMER_PRODUCER_NREG = 56


@dataclass(frozen=True)
class SearchSpace:
    """What the intra-EU search enumerates (defaults cover the paper's space for one loop)."""

    consumer_wgs: tuple[int, ...] = (1, 2, 3)
    depths: tuple[int, ...] = (1, 2, 3, 4)
    # warp-specialized depths added where the loop is L2-bound (pt_tvm.cost.l2_bound): there a load waits in
    # L2's queues and the LLaMA layer's GEMMs ran 1.2-1.3x faster 4-6 deep than 3 (cost.TMA_LOADED_CYCLES);
    # elsewhere the model prices them as the shallower ones, and they would cost FlashAttention's search 20%
    l2_bound_depths: tuple[int, ...] = (5, 6)
    # where the loop is L2-bound, no depth keeps more loads than this in flight (depth - 1 stages): on one H100
    # 144-160 KB ran 1-8% slower than 96-128 KB (128x256 tiles 4 deep, 128x128 6 deep; 128x192 5 deep alike;
    # benchmarks/results/2026-11-26-h100-depth-alias), which the model does not price
    l2_bound_inflight: int = 128 * 1024
    max_stage: int = 1
    random_orders: int = 4
    row_split: bool = True  # also try the best warp-specialized plans with gemm tiles split by rows (FullRow)
    carry_gemms: bool = True  # also try the best warp-specialized plans with their loop gemms carried a step
    # also try the best unskewed warp-specialized plans as stream-K splits (pt_tvm.stream_k): off by default, since
    # on one H100 splits ran slower than whole tiles on 6 of 8 of the LLaMA layer's GEMMs, priced 10-40% optimistic
    stream_k: bool = False
    # also try the best persistent warp-specialized plans in 2-CTA clusters sharing a loop load by TMA multicast
    # (pt_tvm.passes.multicast): off by default until GPU runs measure what the model prices
    multicast: bool = False
    # the local search (asynchronous sTasks re-placed, gemms kept in flight, warpgroups taking turns) and the
    # variants of the best plans refine the configurations whose best base plan is priced within this factor of
    # the best base plan of its emission style over every tile: on the attention-core, gemm and mamba suites and a
    # twelfth of the decode grid (H200 model) the best four were those of no bound, and on the whole decode grid the
    # tuner's candidates those of the search before the bound (benchmarks/results/2026-11-30-search-time)
    local_within: float = 1.25


class Priority(str, enum.Enum):
    """How list scheduling picks among ready sTasks."""

    PROGRAM = "program"  # the order the kernel was written in
    TENSOR_FIRST = "tensor_first"  # issue tensor-core sTasks as early as possible (async overlap)
    OLDEST_FIRST = "oldest_first"  # sTasks of older iterations (higher stage) first


def is_load(t: STask, graph: STaskGraph) -> bool:
    """A global -> shared copy: the work a producer role (or an async copy stage) takes."""
    return (t.op == OpKind.COPY and bool(t.reads) and bool(t.writes)
            and t.reads[0].scope == "global" and t.writes[0].scope == "shared")


def producer_nreg(consumer_wgs: int) -> int:
    """The producer warpgroup's setmaxnreg budget: the least TMA issue needs, more beside one consumer warpgroup."""
    return LONE_CONSUMER_PRODUCER_NREG if consumer_wgs == 1 else PRODUCER_NREG


def consumer_nreg(vdev: VDevice, consumer_wgs: int) -> int:
    """The largest setmaxnreg budget the consumers can take after the producer warpgroup's share."""
    eu = vdev.eu
    free = eu.regs_per_eu - eu.warpgroup_threads * producer_nreg(consumer_wgs)
    per = free // (eu.warpgroup_threads * consumer_wgs)
    per -= per % eu.reg_alloc_granularity
    return min(per, 240)


def _key(priority: Priority | Mapping[str, float], t: STask, stage: int) -> tuple:
    if isinstance(priority, Mapping):
        return (priority.get(t.id, 0.0), t.index)
    if priority == Priority.TENSOR_FIRST:
        return (t.seu != SEUKind.TENSOR_CORE, t.index)
    if priority == Priority.OLDEST_FIRST:
        return (-stage, t.index)
    return (t.index,)


def order_role(graph: STaskGraph, stasks: Sequence[STask], stage: Mapping[str, int],
               versions: Callable[[str], int], priority: Priority | Mapping[str, float]) -> list[STask] | None:
    """A list-scheduled order of one role's loop sTasks, or None when the stages admit none."""
    members = {t.id: t for t in stasks}
    succ: dict[str, set[str]] = {t.id: set() for t in stasks}
    indeg = {t.id: 0 for t in stasks}
    for e in graph.edges:
        if e.src not in members or e.dst not in members:
            continue
        gap = effective_distance(e, versions) + stage[e.dst] - stage[e.src]
        if gap < 0 or (gap == 0 and e.src == e.dst):
            return None  # the source would run in a later step than the instance it must precede
        if gap == 0 and e.dst not in succ[e.src]:
            succ[e.src].add(e.dst)
            indeg[e.dst] += 1
    heap = [(_key(priority, t, stage[t.id]), t.id) for t in stasks if indeg[t.id] == 0]
    heapq.heapify(heap)
    out = []
    while heap:
        _, sid = heapq.heappop(heap)
        out.append(members[sid])
        for nxt in sorted(succ[sid]):
            indeg[nxt] -= 1
            if indeg[nxt] == 0:
                heapq.heappush(heap, (_key(priority, members[nxt], stage[nxt]), nxt))
    return out if len(out) == len(stasks) else None


def _cross_role_waits(graph: STaskGraph, role_of: Mapping[str, str]) -> list[Wait]:
    on: dict[str, list[str]] = {}
    for e in graph.edges:
        if e.kind == DepKind.RAW and role_of[e.src] != role_of[e.dst] and e.src not in on.get(e.dst, []):
            on.setdefault(e.dst, []).append(e.src)
    return [Wait(dst, tuple(srcs)) for dst, srcs in on.items()]


def _pipelines(graph: STaskGraph, loads: Sequence[STask], depth: int, producer: str, consumer: str) -> list[Pipeline]:
    """One pipeline per group of loaded buffers that the same sTasks read (e.g. K apart from V, A with B)."""
    groups: dict[tuple, list[str]] = {}
    for t in loads:
        buf = t.writes[0].buffer
        readers = tuple(sorted(r.id for r in graph.stasks if buf in r.read_buffers()))
        groups.setdefault((t.placement, readers), []).append(buf)
    out = []
    for (placement, _), bufs in groups.items():
        scope = "loop" if placement == Placement.LOOP else "root"
        out.append(Pipeline(f"p_{bufs[0]}", tuple(dict.fromkeys(bufs)), depth if scope == "loop" else 1,
                            producer, consumer, scope))
    return out


def reader_stages(graph: STaskGraph, max_stage: int) -> list[dict[str, int]]:
    """The loop's reader-stage choices (``pipeline_stage`` of :func:`warp_specialized`) that can give a plan.

    Only a pipeline's first buffer carries its stage, and an sTask reading two pipelines reads them at one stage,
    so such pipelines choose together: ``(max_stage + 1) ** classes`` choices, not one per loaded buffer (13
    buffers and 8192 choices for chunk_scan with four heads a block, 32 of them plans). Each choice names every
    loaded buffer (the others at 0), in the lexicographic order a product over the sorted buffers would give."""
    loaded = sorted({t.writes[0].buffer for t in graph.loop_stasks if is_load(t, graph)})
    loads = [t for t in graph.stasks if is_load(t, graph) and t.placement != Placement.EPILOGUE]
    first = {b: p.buffers[0] for p in _pipelines(graph, loads, 1, PRODUCER, CONSUMER) if p.scope == "loop"
             for b in p.buffers}
    cls = {b: b for b in set(first.values())}

    def root(b: str) -> str:
        while cls[b] != b:
            b = cls[b]
        return b

    for t in graph.stasks:
        read = sorted({first[b] for b in t.read_buffers() if b in first})
        for b in read[1:]:
            cls[root(b)] = root(read[0])
    classes = sorted({root(b) for b in cls})
    out = []
    for stages in itertools.product(range(max_stage + 1), repeat=len(classes)):
        of = dict(zip(classes, stages))
        out.append({b: of[root(b)] if first.get(b) == b else 0 for b in loaded})
    return sorted(out, key=lambda ps: [ps[b] for b in loaded])


def warp_specialized(graph: STaskGraph, vdev: VDevice, *, consumer_wgs: int, depth: int,
                     pipeline_stage: Mapping[str, int], priority: Priority | Mapping[str, float],
                     tile: Mapping[str, int] | None = None) -> ExecutionPlan | None:
    """A producer/consumer plan; None when the stage choice admits no order.

    ``pipeline_stage`` maps a loaded buffer to the stage its readers run at (default 0).
    """
    wg = vdev.eu.warpgroup_warps
    loads = [t for t in graph.stasks if is_load(t, graph) and t.placement != Placement.EPILOGUE]
    load_ids = {t.id for t in loads}
    pipes = _pipelines(graph, loads, depth, PRODUCER, CONSUMER)
    piped = {b: p for p in pipes for b in p.buffers}
    stage: dict[str, int] = {}
    for t in graph.stasks:
        stages = {pipeline_stage.get(piped[b].buffers[0], 0) for b in t.read_buffers()
                  if b in piped and piped[b].scope == "loop"}
        if len(stages) > 1:
            return None
        stage[t.id] = stages.pop() if stages and t.id not in load_ids and t.placement == Placement.LOOP else 0
    role_of = {t.id: PRODUCER if t.id in load_ids else CONSUMER for t in graph.stasks}

    def versions(b: str) -> int:
        return piped[b].depth if b in piped else 1

    consumers = [t for t in graph.loop_stasks if role_of[t.id] == CONSUMER]
    order = order_role(graph, consumers, stage, versions, priority)
    if order is None:
        return None
    roles = (Role(PRODUCER, 0, 1, producer_nreg(consumer_wgs)),
             Role(CONSUMER, wg, wg + wg * consumer_wgs, consumer_nreg(vdev, consumer_wgs)))

    def app(t: STask) -> Append:
        return Append(t.id, role_of[t.id], t.seu, stage[t.id])

    steps: list = [app(t) for t in graph.placed(Placement.PROLOGUE)]
    steps += [app(t) for t in graph.loop_stasks if role_of[t.id] == PRODUCER]
    steps += [app(t) for t in order]
    steps += [app(t) for t in graph.placed(Placement.EPILOGUE)]
    steps += _cross_role_waits(graph, role_of)
    return ExecutionPlan(graph=graph.name, target=vdev.name, style=Style.WARP_SPECIALIZED, roles=roles,
                         steps=tuple(steps), pipelines=tuple(pipes), num_stages=depth, tile=dict(tile or {}))


def software_pipelined(graph: STaskGraph, vdev: VDevice, *, num_stages: int, threads: int,
                       priority: Priority | Mapping[str, float],
                       tile: Mapping[str, int] | None = None) -> ExecutionPlan | None:
    """A single-role plan for T.Pipelined: loads at stage 0, everything else at ``num_stages - 1``."""
    loads = [t for t in graph.loop_stasks if is_load(t, graph)]
    load_ids = {t.id for t in loads}
    last = num_stages - 1
    stage = {t.id: (0 if t.id in load_ids or t.placement != Placement.LOOP else last) for t in graph.stasks}
    pipes = _pipelines(graph, loads, num_stages, BLOCK, BLOCK) if last else []
    piped = {b: p for p in pipes for b in p.buffers}
    order = order_role(graph, list(graph.loop_stasks), stage, lambda b: piped[b].depth if b in piped else 1, priority)
    if order is None:
        return None
    seu = {t.id: (SEUKind.LSU if t.seu == SEUKind.TMA else t.seu) for t in graph.stasks}
    roles = (Role(BLOCK, 0, max(1, threads // vdev.eu.warp_size), 0),)
    steps = [Append(t.id, BLOCK, seu[t.id], stage[t.id])
             for t in (*graph.placed(Placement.PROLOGUE), *order, *graph.placed(Placement.EPILOGUE))]
    return ExecutionPlan(graph=graph.name, target=vdev.name, style=Style.SOFTWARE_PIPELINE, roles=roles,
                         steps=tuple(steps), pipelines=tuple(pipes), num_stages=num_stages, tile=dict(tile or {}))


# A gemm whose A operand comes from registers (wgmma RS, e.g. FlashAttention's P @ V) is not kept
# in flight on its own: measured on one H200 (the 2026-11-22-h200-inflight run, in git history), every
# such plan ran 2-8% slower than the same plan with the gemm synchronous, while keeping a shared-operand
# (SS) gemm in flight ran up to 8% faster (FlashAttention D64). The cost model does not capture what
# pins the register operand, so the search offers it only with every gemm of the role in flight
# (:func:`overlapped`: FlashAttention-3's intra-warpgroup overlap), which the GPU then judges.


def _waiter(order: Sequence[Append], i: int, graph: STaskGraph, past_gemms: bool) -> Append | None:
    """The first sTask after ``order[i]`` (a gemm) that touches what the gemm reads or writes, or None;
    unless ``past_gemms``, a later tensor-core sTask ends the search (its own wait drains the gemm)."""
    g = graph.stask(order[i].stask)
    for b in order[i + 1:]:
        t = graph.stask(b.stask)
        if t.seu == SEUKind.TENSOR_CORE:
            if past_gemms:
                continue
            return b
        if in_flight_clash(t, g):
            return b
    return None


def in_flight_variants(plan: ExecutionPlan, graph: STaskGraph) -> list[ExecutionPlan]:
    """The plan with a tensor-core sTask kept in flight: issued without waiting, with a Wait placed
    at the first later sTask of its role that touches its operands or accumulator.

    Only where at least one sTask can overlap it (the paper's Wait primitive on an asynchronous sEU),
    and only for gemms with both operands in shared memory (see the note above).
    """
    out = []
    for role in plan.roles:
        order = plan.program(role.name, graph, Placement.LOOP)
        for i, a in enumerate(order):
            g = graph.stask(a.stask)
            if a.seu != SEUKind.TENSOR_CORE or a.stask in plan.in_flight() or g.attrs.get("a_scope") != "shared":
                continue  # register-operand gemms stay synchronous (see the note above)
            waiter = _waiter(order, i, graph, past_gemms=False)
            if waiter is None or waiter is order[i + 1] or graph.stask(waiter.stask).seu == SEUKind.TENSOR_CORE:
                continue  # nothing would overlap it (or the next gemm's implicit wait drains it anyway)
            out.append(plan.extended(Wait(waiter.stask, (a.stask,))))
    return out


def overlapped(plan: ExecutionPlan, graph: STaskGraph, role: str) -> ExecutionPlan | None:
    """The plan with every gemm of ``role``'s loop program in flight, each until the first later sTask
    that needs it (later gemms issue behind it: FlashAttention-3 issues S = QK^T, then the previous
    block's O += PV, and runs the softmax while PV is in flight); None with fewer than two gemms."""
    order = plan.program(role, graph, Placement.LOOP)
    gemms = [i for i, a in enumerate(order) if a.seu == SEUKind.TENSOR_CORE and a.stask not in plan.in_flight()]
    if len(gemms) < 2:
        return None
    waits = []
    for i in gemms:
        waiter = _waiter(order, i, graph, past_gemms=True)
        if waiter is None:
            return None
        waits.append(Wait(waiter.stask, (order[i].stask,)))
    return plan.extended(*waits)


def handoff_variants(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> list[ExecutionPlan]:
    """For each role of two or more warpgroups: the plan with its warpgroups taking turns issuing the
    span from its first to its last tensor-core sTask (ping-pong), synchronous and overlapped."""
    out = []
    for role in plan.roles:
        if plan.style != Style.WARP_SPECIALIZED or role.warps // vdev.eu.warpgroup_warps < 2 \
                or any(h.role == role.name for h in plan.handoffs):
            continue
        gemms = [a.stask for a in plan.program(role.name, graph, Placement.LOOP) if a.seu == SEUKind.TENSOR_CORE]
        if not gemms:
            continue
        turns = plan.extended(Handoff(role.name, gemms[0], gemms[-1]))
        out += [turns, *filter(None, [overlapped(turns, graph, role.name)])]
    return out


def async_moves(plan: ExecutionPlan, role: str, graph: STaskGraph, vdev: VDevice) -> Iterable[list[Append]]:
    """``role``'s loop program with each asynchronous compute sTask moved to every other position at which its
    own same-role dependences hold (:func:`~pt_tvm.verify.loop_order_holds`; the rest of the order is the
    plan's, whose dependences hold already): most positions break one, and verifying each plan whole cost
    the decoding search a third of its time."""
    order = plan.program(role, graph, Placement.LOOP)
    in_loop = {a.stask for a in order}
    edges: dict[str, list] = {}
    for e in graph.edges:
        if e.src in in_loop and e.dst in in_loop:
            edges.setdefault(e.src, []).append(e)
            if e.dst != e.src:
                edges.setdefault(e.dst, []).append(e)
    for i, a in enumerate(order):
        seu = vdev.eu.seu(a.seu)
        if not seu.is_async or a.seu in (SEUKind.TMA, SEUKind.LSU):
            continue
        rest = [*order[:i], *order[i + 1:]]
        for j in range(len(rest) + 1):
            if j == i:
                continue
            moved = [*rest[:j], a, *rest[j:]]
            pos = {x.stask: k for k, x in enumerate(moved)}
            if all(loop_order_holds(e, plan, pos[e.src], pos[e.dst]) for e in edges.get(a.stask, ())):
                yield moved


def reordered(plan: ExecutionPlan, role: str, graph: STaskGraph, order: list[Append]) -> ExecutionPlan:
    """The plan with ``role``'s loop program in ``order``."""
    loop = {t.id for t in graph.loop_stasks}
    it = iter(order)
    steps = tuple(next(it) if isinstance(s, Append) and s.role == role and s.stask in loop else s for s in plan.steps)
    return replace(plan, steps=steps)


PANELS = (2, 4, 8, 16)  # block rows (or columns) per panel of a tile order
# Panels of heads walked forwards (a causal grid's): on one H200 (benchmarks/results/2026-11-28-h200-causal-order,
# two runs) panels of 8 and 16 heads ran no faster than panels of 4 on 15 of 18 configs, and up to 3.4% slower (more
# heads' keys and values read at once through L2), where the model prices them alike.
FORWARD_PANELS = (2, 4)
# A causal grid walked in panels of query blocks across every head (block columns) keeps the keys and values of
# the heads its resident blocks span in L2 at once. On one H200 (2026-11-28-h200-causal-order, two runs) panels of 2
# ran 2.5-3.8% faster than panels of 4 heads where that span held 33-66 MB (16 x 1024 tokens, head dims 128 and 256;
# within 1% in a third run, 2026-11-28-h200-causal-columns), within 1% either way at 66-128 MB and 4096 tokens, and
# 2-4% slower at 128 MB and 16384 tokens: panels of 2 columns (the only ones measured) are offered where the span
# holds at most this many times L2's bytes.
COLUMN_SPAN_L2 = 1.5
CAUSAL_COLUMN_PANELS = (2,)


def column_span_bytes(graph: STaskGraph, vdev: VDevice, panel: int) -> float:
    """What the blocks resident at once (one an EU) read in the loop, walked in panels of ``panel`` block columns:
    the heaviest block's loop loads for each head (every launch index but the first) they span."""
    grid = list(graph.grid.values())
    heads = int(math.prod(grid[1:]))
    per_head = sum(t.bytes for t in graph.loop_stasks if is_load(t, graph)) * graph.loop.max_trip_count
    return min(heads, math.ceil(vdev.num_eus / panel)) * per_head


def tile_orders(graph: STaskGraph, vdev: VDevice) -> list[TileOrder]:
    """The launch order, and panels of :data:`PANELS` block rows or columns fewer than the grid has
    (an order over the first two launch indices of a grid of known size). Where the blocks' trips vary with the
    first index (a causal mask's query blocks), panels of :data:`FORWARD_PANELS` block rows walked forwards
    instead (sections of heads, each heaviest query block first), and panels of :data:`CAUSAL_COLUMN_PANELS`
    block columns (every head's heaviest query blocks first) only where the keys and values of the heads they
    span fit about L2 (:data:`COLUMN_SPAN_L2`): beyond it they ran up to 4% slower than the launch order (one
    H200, 2026-11-28-h200-causal-order), where the model does not see what they read through L2."""
    grid = list(graph.grid.values())
    if len(grid) < 2 or any(e is None for e in grid) or graph.symbols:  # a grid of symbolic size: as launched
        return [TileOrder()]
    gx, gy = grid[0], grid[1]
    if graph.loop.trips_index == next(iter(graph.grid)):
        return [TileOrder(), *(TileOrder(p, "row", snake=False) for p in FORWARD_PANELS if p < gy),
                *(TileOrder(p, "column") for p in CAUSAL_COLUMN_PANELS if p < gx
                  and column_span_bytes(graph, vdev, p) <= COLUMN_SPAN_L2 * vdev.l2_bytes)]
    return [TileOrder(), *(TileOrder(p, "row") for p in PANELS if p < gy),
            *(TileOrder(p, "column") for p in PANELS if p < gx)]


def tile_walks(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> list[ExecutionPlan]:
    """The plan with its output tiles walked in each other order (L2 reuse among the tiles resident at
    once), and, warp-specialized over more tiles than EUs, persistently in each order where
    :func:`walks_persistently`, one stage shallower where its depth leaves no room (a persistent kernel keeps apart
    the tiles a launched one lays over its dead stages: FlashAttention's ``O_shared`` at head dim 128 leaves two
    K/V stages where launched it keeps three); none for a kernel of symbolic sizes (its walk would be laid out for
    the sizes it was priced at)."""
    orders = tile_orders(graph, vdev)
    out = [replace(plan, tile_order=o, persistent=False) for o in orders]
    blocks = graph.grid_blocks()
    if plan.style == Style.WARP_SPECIALIZED and blocks is not None and blocks > vdev.num_eus and not graph.symbols \
            and walks_persistently(plan, graph):
        walked = replace(plan, persistent=True)
        if shared_bytes(walked, graph) > vdev.eu.smem_per_block:
            walked = shallower(walked) or walked
        out += [replace(walked, tile_order=o) for o in orders]
    return [p for p in out if p != plan]


def shallower(plan: ExecutionPlan) -> ExecutionPlan | None:
    """The plan with its loop's pipelines one stage shallower; None at two stages or fewer."""
    if plan.num_stages <= 2:
        return None
    pipes = tuple(replace(p, depth=p.depth - 1) if p.scope == "loop" else p for p in plan.pipelines)
    return replace(plan, pipelines=pipes, num_stages=plan.num_stages - 1)


def walks_persistently(plan: ExecutionPlan, graph: STaskGraph) -> bool:
    """Whether a persistent walk of the plan is offered: where every pipeline is the loop's and no warpgroups take
    turns; or, with pipelines loaded once a tile, where every block runs the same trips and nothing but loads
    writes those pipelines' buffers (so the consumers release them after their last read and the next tile's
    loads run under this tile's epilogue).

    FlashAttention's ``Q`` is loaded once a tile; staged the output tile in ``Q_shared``, every tile of a
    persistent walk began on its query load: 0.65-0.96x the speed of the same causal plans launched as a grid (an
    unequal static share besides) and 0.89-0.98x without a mask, where the model priced it 1-3% faster
    (benchmarks/results/2026-11-28-h200-causal-order). With the output tile of its own (``o_shared``) the searched
    walk ran 1.01-1.09x the launched pick without a mask where Q is read only in the loop (six shapes, one H200,
    benchmarks/results/2026-12-02-h200-o-shared-confirm)."""
    root = plan.root_buffers()
    if not root:
        return not plan.handoffs
    return not graph.loop.max_trip_count and all(is_load(t, graph) for t in graph.stasks if t.write_buffers() & root)


def stream_k_walks(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> list[ExecutionPlan]:
    """The warp-specialized plan walked persistently with the last, part-filled wave's k-iterations shared out
    over the EUs (stream-K, :mod:`pt_tvm.stream_k`), in each tile order; none where the grid fills whole waves
    or its size is symbolic, or the loop runs skewed (stage offsets, wgmma in flight, turns: a segment may be
    one iteration long)."""
    blocks, trips = graph.grid_blocks(), graph.loop.trip_count
    if plan.style != Style.WARP_SPECIALIZED or blocks is None or graph.symbols or trips != int(trips) \
            or any(p.scope != "loop" for p in plan.pipelines) or not runs_unskewed(plan, graph):
        return []
    try:
        Split(blocks, int(trips), vdev.num_eus)
    except ValueError:
        return []
    return [replace(plan, tile_order=o, persistent=True, stream_k=True) for o in tile_orders(graph, vdev)]


def row_split_variant(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> ExecutionPlan | None:
    """The warp-specialized plan with its gemm tiles split over the warpgroups by rows only, where that widens
    a warpgroup's wgmma (:func:`pt_tvm.lowering.wgmma_columns`): TileLang's ``Square`` policy gives 128x256 on
    two warpgroups 2 x m64n128 each and 256x128 4 x m64n64, rows give them m64n256 and 2 x m64n128; else
    None. The cost model prices the wider wgmma's fewer operand reads (:data:`pt_tvm.cost.WGMMA_OPERAND_COST`,
    :func:`pt_tvm.cost.shared_port_cycles`)."""
    if plan.style != Style.WARP_SPECIALIZED or plan.row_split:
        return None
    for t, wgs in gemm_warpgroups(plan, graph, vdev):
        m, n = t.tile_shape[0], t.tile_shape[1]
        square = t.attrs.get("policy") != FULL_ROW_POLICY
        if square and wgmma_columns(m, n, wgs, True) > wgmma_columns(m, n, wgs, False):
            return replace(plan, row_split=True)
    return None


def carried_variant(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> ExecutionPlan | None:
    """The warp-specialized plan with its loop's gemms carried into the next step (``carry_gemms``), where that
    verifies; else None. Not for swapped gemm tiles (``swap_ab``): TileLang 0.1.15 issues them as m64n8 wgmmas,
    whose carried pipeline ptxas serializes (``C7514``: correct, and no faster than waiting). Nor for launched
    plans, which verify rejects carried: left out before verifying (the search asks every plan it ranks)."""
    if (plan.style != Style.WARP_SPECIALIZED or plan.carry_gemms or plan.tile.get("swap_ab")
            or not plan.persistent):
        return None
    v = replace(plan, carry_gemms=True)
    return None if violations(v, graph, vdev) else v


def multicast_variants(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> list[ExecutionPlan]:
    """The persistent warp-specialized plan in 2-CTA clusters paired along each launch index where that verifies
    (``multicast``); none for other plans."""
    if plan.style != Style.WARP_SPECIALIZED or not plan.persistent or plan.multicast:
        return []
    return [v for axis in list(graph.grid)[:2] for v in [replace(plan, multicast=axis)]
            if not violations(v, graph, vdev)]


_RESOURCE_RULES = {"shared_memory", "registers", "threads"}


def resource_bound(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> bool:
    """Whether the plan breaks a limit that no reordering can fix."""
    return any(v.rule in _RESOURCE_RULES for v in violations(plan, graph, vdev))


def producer_streams(graph: STaskGraph) -> bool:
    """Whether a producer warp can stream the kernel's loads: all by TMA. A load TMA cannot take (rows not 16-byte
    aligned, or a nest clamping rows at a tensor's end: the extraction puts it on the LSU) TileLang lowers to
    element-wise loads, which the producer's 32 threads would then issue alone: such a kernel gets software pipelines
    only."""
    return all(t.seu == SEUKind.TMA for t in graph.stasks if is_load(t, graph) and t.placement != Placement.EPILOGUE)


def base_plans(graph: STaskGraph, vdev: VDevice, space: SearchSpace, rng: random.Random,
               tile: Mapping[str, Any]) -> Iterable[tuple[ExecutionPlan | None, str]]:
    """(plan or None, note) for every configuration (consumer warpgroups, depth, reader stages) and priority;
    one probe alone where a configuration breaks a limit no order can fix."""
    priorities: list[Any] = list(Priority)
    ids = [t.id for t in graph.loop_stasks]
    for _ in range(space.random_orders):
        priorities.append({sid: rng.random() for sid in ids})

    def pname(p: Any) -> str:
        return p.value if isinstance(p, Priority) else "random"

    streams = producer_streams(graph)
    if "warp_specialization" in vdev.features and streams:
        choices = reader_stages(graph, space.max_stage)
        for wgs, depth in itertools.product(space.consumer_wgs, space.depths):
            probe = warp_specialized(graph, vdev, consumer_wgs=wgs, depth=depth, pipeline_stage={},
                                     priority=Priority.PROGRAM, tile=tile)
            if probe is not None and resource_bound(probe, graph, vdev):
                yield probe, f"warp-specialized {wgs} consumer WG, depth {depth}"
                continue  # no order or stage choice fixes shared memory, registers or threads
            for ps in choices:
                for pr in priorities:
                    note = (f"warp-specialized {wgs} consumer WG, depth {depth}, "
                            f"stages {ps or '{}'}, {pname(pr)} order")
                    yield warp_specialized(graph, vdev, consumer_wgs=wgs, depth=depth, pipeline_stage=ps,
                                           priority=pr, tile=tile), note
    # On chips that warp-specialize, a loop of loads and multiplies gets warp-specialized plans only: in every
    # recorded GEMM and GEMM + row-sum config (67 on an H100 and an H200, 55 with both kinds measured; tests/data)
    # and in both layer-GEMM runs of 2026-11-24, the fastest software pipeline was slower than the fastest
    # warp-specialized plan, while the model priced some first.
    ws_only = "warp_specialization" in vdev.features and graph.loads_and_multiplies and streams
    if "software_pipeline" in vdev.features and not ws_only:  # on Hopper too: no producer warp, blocks share SMs
        for n in space.depths:
            # one stage copies through registers (no cp.async), holding its warps; where every tile also has
            # warp-specialized plans such plans measured 1.8-2.6x their price and 1.6-2.7x the fastest plan of their
            # GEMM (benchmarks/results/2026-11-24-h100-layer-gemms: the model's pick on 4 of 12 configs), and
            # 1.04-1.28x the deepest chunk_state pipeline (2026-11-23); no recorded run has one fastest
            if n == 1 and "warp_specialization" in vdev.features:
                continue
            probe = software_pipelined(graph, vdev, num_stages=n, threads=graph.threads, priority=Priority.PROGRAM,
                                       tile=tile)
            if probe is not None and resource_bound(probe, graph, vdev):
                yield probe, f"software-pipelined num_stages {n}"
                continue
            for pr in priorities:
                yield (software_pipelined(graph, vdev, num_stages=n, threads=graph.threads, priority=pr, tile=tile),
                       f"software-pipelined num_stages {n}, {pname(pr)} order")
