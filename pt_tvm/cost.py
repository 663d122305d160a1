"""Cost model: sTask latencies on sEUs, and a plan's time by simulating its timeline.

Each role of a plan is one or more *streams* (a warpgroup issuing its program
in order). A stream issues an sTask once its dependences have completed; the
sTask then occupies its sEU for ``work / rate`` cycles and completes ``latency``
cycles later. Synchronous sTasks hold their stream until they complete;
asynchronous copies (TMA, cp.async) let it run on until something depends on
them. Tensor-core sTasks hold their stream too (that is how TileLang emits them)
unless the plan keeps them in flight until a Wait. The warpgroups of one role
issue the same wgmma together and finish it together, unless a Handoff makes
them take turns issuing a span, each after the previous one has issued its own.
sEUs are shared by the streams of one EU: the tensor core and copy engine as
one server, CUDA cores and the SFU as two half-rate servers (one warpgroup
alone cannot keep them busy). Simulating a few iterations of the loop, with
each sTask ``stage`` iterations behind, gives the steady-state iteration time:
the paper's simulated clock.

Per-target corrections (:class:`Calibration`) scale each sEU's occupancy and
add a per-iteration overhead; :func:`calibrate` fits them to measured kernels.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from .graph import OpKind, Placement, STask, STaskGraph
from .hw import SEUKind, VDevice
from .plan import Append, ExecutionPlan, Style, effective_distance, register_estimate, shared_bytes

__all__ = ["Calibration", "Estimate", "Event", "estimate", "sTask_cycles", "calibrate", "load_calibration",
           "save_calibration"]

_SERVERS = {SEUKind.TENSOR_CORE: 1, SEUKind.TMA: 1, SEUKind.LSU: 1, SEUKind.CUDA_CORE: 2, SEUKind.SFU: 2}
_SIM_ITERATIONS = 12


@dataclass(frozen=True)
class Calibration:
    """Per-target corrections: ``scale[kind]`` multiplies sEU occupancy; ``overhead`` cycles per iteration."""

    target: str
    scale: Mapping[str, float] = field(default_factory=dict)
    overhead: float = 0.0
    samples: int = 0
    source: str = ""  # the measurements it was fitted to

    def factor(self, kind: SEUKind) -> float:
        return float(self.scale.get(kind.value, 1.0))

    def to_dict(self) -> dict:
        return {"format": "pt-tvm.calibration/1", "target": self.target, "scale": dict(self.scale),
                "overhead": self.overhead, "samples": self.samples, "source": self.source}


@dataclass(frozen=True)
class Event:
    """One sTask instance in the simulated timeline (cycles)."""

    stream: str
    stask: str
    iteration: int  # -1 for prologue/epilogue sTasks
    seu: SEUKind
    start: float
    end: float


@dataclass(frozen=True)
class Estimate:
    """What the cost model predicts for one plan."""

    cycles_per_iteration: float
    block_cycles: float
    blocks_per_eu: int
    waves: int
    seconds: float
    busy: Mapping[str, float]  # sEU kind -> busy fraction of the steady-state iteration
    trace: tuple[Event, ...] = ()

    def bottleneck(self) -> str:
        return max(self.busy, key=self.busy.get) if self.busy else ""


def sTask_cycles(t: STask, kind: SEUKind, graph: STaskGraph, vdev: VDevice, share: float = 1.0) -> tuple[float, float]:
    """(occupancy, latency) cycles of ``share`` of sTask ``t`` on the EU's sEU of ``kind``."""
    seu = vdev.eu.seu(kind)
    if kind == SEUKind.TENSOR_CORE:
        rate = seu.throughput * (0.5 if t.dtype in ("float32", "tfloat32") else 1.0)
        work = t.flops * share / rate
    elif kind in (SEUKind.TMA, SEUKind.LSU) and t.op in (OpKind.COPY, OpKind.ATOMIC):
        work = t.bytes * share / _copy_rate(t, kind, graph, vdev)
    elif kind == SEUKind.SFU:
        cuda = vdev.eu.seu(SEUKind.CUDA_CORE)
        work = max(t.sfu_ops / seu.throughput, t.flops / cuda.throughput) * share
    else:  # CUDA cores, or an SFU-less target doing transcendentals on the ALUs
        work = (t.flops + 4.0 * t.sfu_ops) * share / seu.throughput
        if t.op == OpKind.REDUCE:
            work += 5 * 8.0  # warp-shuffle butterfly: log2(32) dependent steps
    return work, seu.latency


def _copy_rate(t: STask, kind: SEUKind, graph: STaskGraph, vdev: VDevice) -> float:
    """Bytes per cycle one EU gets for a copy: its share of L2, or of DRAM after reuse across blocks.

    A global tile whose offsets ignore some launch indices is read by every block
    along those indices; L2 serves the re-reads, so DRAM sees it once per ``reuse`` blocks.
    """
    seu = vdev.eu.seu(kind)
    glob = [a for a in (*t.reads, *t.writes) if a.scope == "global"]
    if not glob:
        return seu.throughput
    per_eu_cycle = vdev.num_eus * vdev.clock_ghz * 1e9
    reuse = math.prod(extent for var, extent in graph.grid.items() if extent and var not in glob[0].block_vars)
    dram = vdev.dram_bandwidth / per_eu_cycle * min(float(reuse), _MAX_L2_REUSE)
    return min(seu.throughput, vdev.l2_bandwidth / per_eu_cycle, dram)


_MAX_L2_REUSE = 64.0  # L2 keeps a tile for a bounded number of re-reads


# ---------------------------------------------------------------- the simulated clock
@dataclass
class _Stream:
    name: str
    role: str
    share: float
    program: list[Append]  # loop program
    prologue: list[Append]
    epilogue: list[Append]
    time: float = 0.0


def _streams(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> list[_Stream]:
    """One stream per warpgroup of each role; compute warpgroups split their sTasks' work evenly."""
    out = []
    wg = max(vdev.eu.warpgroup_warps, 4 if vdev.eu.warpgroup_warps == 1 else 1)
    for r in plan.roles:
        progs = [plan.program(r.name, graph, p) for p in (Placement.LOOP, Placement.PROLOGUE, Placement.EPILOGUE)]
        only_copies = all(a.seu in (SEUKind.TMA,) for prog in progs for a in prog)
        n = 1 if only_copies else max(1, r.warps // wg)
        for i in range(n):
            out.append(_Stream(f"{r.name}{i if n > 1 else ''}", r.name, 1.0 / n, *progs))
    return out


def estimate(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice, calibration: Calibration | None = None,
             trace: bool = False) -> Estimate:
    """Predict the plan's kernel time by simulating its timeline on one EU, then counting waves."""
    cal = calibration or Calibration(vdev.name)
    iters = max(2, min(_SIM_ITERATIONS, int(math.ceil(graph.loop.trip_count))))
    streams = _streams(plan, graph, vdev)
    stage = {a.stask: a.stage for a in plan.appends}
    role_streams: dict[str, list[_Stream]] = {}
    for s in streams:
        role_streams.setdefault(s.role, []).append(s)
    servers = {k: [0.0] * n for k, n in _SERVERS.items()}
    busy = {k: 0.0 for k in _SERVERS}
    done: dict[tuple[str, str, int], float] = {}  # (stream, stask, iteration) -> completion
    edges_into: dict[str, list] = {}  # dst -> (src, src placement, effective distance, src role)
    for e in graph.edges:
        edges_into.setdefault(e.dst, []).append(
            (e.src, graph.stask(e.src).placement, effective_distance(plan, graph, e), plan.append_of(e.src).role))
    stage_of = {a.stask: a.stage for a in plan.appends}
    for gemm, waiter in plan.in_flight().items():  # the waiter holds until the gemm of its own step completes
        edges_into.setdefault(waiter, []).append(
            (gemm, Placement.LOOP, stage_of[gemm] - stage_of[waiter], plan.append_of(gemm).role))
    events: list[Event] = []
    iter_done = [0.0] * iters

    def deps(stream: _Stream, t: STask, it: int) -> float | None:
        """When the sTask instance's dependences complete; None while one is not simulated yet."""
        ready = 0.0
        turn = _turn_of(stream, t, it) if handoffs else None
        if turn is not None:  # a handoff: the previous warpgroup has issued its span of this step
            when = done.get(turn)
            if when is None:
                blocked[stream.name] = turn
                return None
            ready = when + _NAMED_BARRIER_CYCLES
        for src, src_place, dist, src_role in edges_into.get(t.id, ()):
            if src_place == Placement.LOOP and t.placement == Placement.LOOP:
                src_it = it - dist
                if src_it < 0:
                    continue
            elif src_place == Placement.LOOP:  # the epilogue reads the last iteration
                src_it = iters - 1
            elif t.placement == Placement.PROLOGUE or src_place == Placement.PROLOGUE:
                src_it = -1
            else:
                continue  # an epilogue sTask feeding back into nothing earlier
            for o in ([stream] if src_role == stream.role else role_streams[src_role]):
                when = done.get((o.name, src, src_it))
                if when is None:
                    if o is stream and src_place == t.placement == Placement.LOOP and src_it == it \
                            and plan_pos[src] > plan_pos[t.id]:
                        continue  # verify() rejects such plans; don't deadlock on them here
                    blocked[stream.name] = (o.name, src, src_it)
                    return None
                ready = max(ready, when)
        return ready

    handoffs = {h.role: h for h in plan.handoffs}
    # Warpgroups of one role that do not take turns are released by the same barriers and issue the same
    # wgmma together; the tensor cores interleave them: the last completes when the whole role's work
    # does, the first INTERLEAVED_DELAY of its siblings' work later than alone.
    interleaved = {r for r, group in role_streams.items() if len(group) > 1 and r not in handoffs}
    lockstep: dict[tuple[str, str, int], float] = {}  # (role, tensor-core sTask, iteration) -> completion

    def _turn_of(stream: _Stream, t: STask, it: int) -> tuple | None:
        """The (stream, issued-marker, iteration) whose issue opens this instance's turn, if it opens one."""
        h = handoffs.get(stream.role)
        if h is None or t.id != h.first:
            return None
        group = role_streams[stream.role]
        w, step = group.index(stream), it + stage_of[h.first]
        prev, prev_step = (group[w - 1], step) if w else (group[-1], step - 1)
        prev_it = prev_step - stage_of[h.last]
        return (prev.name, _ISSUED + h.last, prev_it) if 0 <= prev_it < iters else None

    cycles: dict[tuple, tuple[float, float]] = {}  # sTask_cycles is pure: price each (sTask, sEU, share) once

    def run(stream: _Stream, a: Append, it: int, start: float) -> None:
        t = graph.stask(a.stask)
        key = (t.id, a.seu, stream.share)
        if key not in cycles:
            cycles[key] = sTask_cycles(t, a.seu, graph, vdev, stream.share)
        work, latency = cycles[key]
        work *= cal.factor(a.seu)
        pool = servers[a.seu]
        k = min(range(len(pool)), key=pool.__getitem__)
        per_server = work * len(pool)  # each of n servers runs at 1/n of the sEU's rate
        batch = (stream.role, t.id, it) if a.seu == SEUKind.TENSOR_CORE and stream.role in interleaved else None
        if batch in lockstep and start <= lockstep[batch]:
            begin, end = start, lockstep[batch]  # a sibling booked this wgmma for the whole role
        else:
            begin = max(start, pool[k])
            end = begin + per_server + latency
            if batch is not None:
                n = len(role_streams[stream.role])
                lockstep[batch] = begin + n * per_server + latency
                end += (n - 1) * per_server * INTERLEAVED_DELAY
                per_server *= n
            pool[k] = begin + per_server
            if steady_lo <= it < steady_hi:
                busy[a.seu] += per_server / len(pool)
        done[(stream.name, t.id, it)] = end
        if a.stask in in_flight:
            stream.time = start + tc_issue
        elif a.stask in cp_async:
            stream.time = start + cp_async_issue
        else:
            stream.time = start + issue[a.seu] if issue[a.seu] is not None else end
        h = handoffs.get(stream.role)
        if h is not None and t.id == h.last:  # the warpgroup hands the tensor cores on once it issued its span
            done[(stream.name, _ISSUED + h.last, it)] = stream.time
        if it >= 0:
            iter_done[it] = max(iter_done[it], end)
        if trace:
            events.append(Event(stream.name, t.id, it, a.seu, begin, end))

    # TMA runs behind its issuer, and so do the loop's copies of a software pipeline where the chip has
    # cp.async (num_stages >= 2; with one stage TileLang copies through registers, holding the warps).
    # TileLang 0.1.15 waits for each wgmma right after it (warpgroup_wait<0>), so a tensor-core sTask
    # holds its stream like a synchronous one.
    issue = {s.kind: (s.issue if s.is_async and s.kind != SEUKind.TENSOR_CORE else None) for s in vdev.eu.seus}
    cp_async = {t.id for t in graph.loop_stasks if plan.append_of(t.id).seu == SEUKind.LSU} \
        if plan.style == Style.SOFTWARE_PIPELINE and plan.num_stages > 1 and "cp_async" in vdev.features else set()
    lsu = vdev.eu.seu(SEUKind.LSU)
    cp_async_issue = lsu.issue if lsu.is_async else _CP_ASYNC_ISSUE  # a chip whose LSU is cp.async prices it
    in_flight = plan.in_flight()  # gemms issued without a wait: their Wait step holds the waiter instead
    tc_issue = vdev.eu.seu(SEUKind.TENSOR_CORE).issue
    sync_cost = _sync_costs(plan, graph)
    steady_lo, steady_hi = iters // 2, iters
    plan_pos = {a.stask: i for i, a in enumerate(plan.appends)}
    depth = max((a.stage for a in plan.appends), default=0)
    queues = {}
    for s in streams:
        q = [(a, -1) for a in s.prologue]
        for step in range(iters + depth):
            q += [(a, step - stage[a.stask]) for a in s.program if 0 <= step - stage[a.stask] < iters]
        q += [(a, -1) for a in s.epilogue]
        queues[s.name] = q
    heads = {s.name: 0 for s in streams}
    by_name = {s.name: s for s in streams}
    # a head's dependences, once all simulated, cannot change until that head issues (``done`` is write-once
    # and a stream's own later sTasks wait behind its head), so each head's ready time is computed once
    head_ready: dict[str, float] = {}
    blocked: dict[str, tuple] = {}  # stream -> the first missing completion its head waits for
    while True:  # event-driven: always issue the earliest-ready instance among the streams
        best = None
        for name, i in heads.items():
            if i >= len(queues[name]):
                continue
            s = by_name[name]
            a, it = queues[name][i]
            t = graph.stask(a.stask)
            ready = head_ready.get(name)
            if ready is None:
                if name in blocked and blocked[name] not in done:
                    continue  # deps() would stop at the same missing completion again
                ready = deps(s, t, it)
                if ready is None:
                    continue
                head_ready[name] = ready
            start = max(s.time, ready)
            if t.placement == Placement.EPILOGUE and iter_done:
                start = max(start, max(iter_done))
            if best is None or start < best[0]:
                best = (start, s, a, it)
        if best is None:
            break
        start, s, a, it = best
        run(s, a, it, start + sync_cost.get((s.role, a.stask), 0.0))
        heads[s.name] += 1
        head_ready.pop(s.name, None)
        blocked.pop(s.name, None)
        if 0 <= it and heads[s.name] < len(queues[s.name]) and queues[s.name][heads[s.name]][1] != it:
            s.time += cal.overhead * s.share / max(1, len(s.program))
    if any(i < len(queues[n]) for n, i in heads.items()):
        raise RuntimeError("cost model deadlock: the plan's waits cannot all be met (verify the plan first)")
    sim_end = max([s.time for s in streams] + [v for v in done.values()])
    per_iter = (iter_done[iters - 1] - iter_done[steady_lo - 1]) / (iters - steady_lo)
    block = sim_end + max(0.0, graph.loop.trip_count - iters) * per_iter
    bpe = _blocks_per_eu(plan, graph, vdev)
    blocks = graph.grid_blocks() or vdev.num_eus * bpe
    waves = int(math.ceil(blocks / (vdev.num_eus * bpe)))
    span = per_iter * (iters - steady_lo)
    util = {k.value: min(1.0, v / span) if span else 0.0 for k, v in busy.items() if v}
    # co-resident blocks overlap each other's idle time until the busiest sEU saturates, but not perfectly
    busiest = max(util.values(), default=1.0)
    wave_cycles = block * max(1.0, bpe * busiest, 1.0 + (bpe - 1) * (1.0 - CO_RESIDENT_OVERLAP))
    return Estimate(
        cycles_per_iteration=per_iter,
        block_cycles=block,
        blocks_per_eu=bpe,
        waves=waves,
        seconds=vdev.cycles_to_seconds(wave_cycles * waves),
        busy=util,
        trace=tuple(events),
    )


# Fraction of a co-resident block's time hidden under the other blocks of its SM. With 1.0 (perfect
# overlap) software-pipelined FlashAttention plans (3-4 blocks per SM) looked 1.4-1.8x faster than
# measured; on the 96 recorded H200 attention rows the model's first pick is then 6.6% behind the
# measured best, 1.2% at 0.8 (0.8% at 0.7), before sibling warpgroups' wgmmas were priced as interleaved
# (2.4% at 0.8 since: INTERLEAVED_DELAY); GEMM and Mamba2 picks do not move (tests/test_calibration.py).
CO_RESIDENT_OVERLAP = 0.8

_CP_ASYNC_ISSUE = 20.0  # cycles to issue one tile's cp.async copies where the LSU model is synchronous (Hopper)
_MBARRIER_CYCLES = 40.0  # one mbarrier try_wait/arrive round trip (model)
# How much later than alone a warpgroup's wgmma completes for each sibling warpgroup issuing the same
# wgmma beside it (the last completes with the whole role's work). With 0.5 the model ranks turns with
# every gemm in flight first among the five plans of each FlashAttention config of
# benchmarks/results/2026-11-22-h100-attention/handoff.json, as measured, except at D256 (every gemm in
# flight without turns 1.5% ahead; measured 3.5% behind). It still ranks turns with synchronous gemms
# above no turns, which measured 0.77x. On the 96 recorded H200 attention rows (no turns among them)
# the model's first pick is 2.4% behind the measured best, 1.2% with 0 (tests/test_calibration.py).
INTERLEAVED_DELAY = 0.5
_NAMED_BARRIER_CYCLES = 20.0  # bar.sync after the matching bar.arrive (model)
_ISSUED = "issued:"  # timeline marker: a handoff span's last sTask issued (the turn passes on)


def _sync_costs(plan: ExecutionPlan, graph: STaskGraph) -> dict[tuple[str, str], float]:
    """Cycles a role spends on pipeline barriers before each loop sTask that opens a pipeline span."""
    out: dict[tuple[str, str], float] = {}
    loop = {t.id for t in graph.loop_stasks}
    for p in plan.pipelines:
        if p.scope != "loop" or p.producer == p.consumer:
            continue
        for role in (p.producer, p.consumer):
            first = next((a.stask for a in plan.appends if a.role == role and a.stask in loop
                          and set(p.buffers) & (graph.stask(a.stask).read_buffers() | graph.stask(a.stask).write_buffers())),
                         None)
            if first is not None:
                out[(role, first)] = out.get((role, first), 0.0) + 2 * _MBARRIER_CYCLES
    return out


def _blocks_per_eu(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> int:
    """Resident blocks per EU, limited by shared memory, registers and threads."""
    eu = vdev.eu
    if plan.style == Style.WARP_SPECIALIZED:
        return 1  # launched with __launch_bounds__(threads, 1); setmaxnreg redistributes the whole register file
    smem = max(1, shared_bytes(plan, graph))
    threads = plan.num_warps * eu.warp_size
    regs = threads * min(eu.max_regs_per_thread, register_estimate(graph, threads))
    return max(1, min(eu.smem_per_eu // smem, eu.regs_per_eu // max(regs, 1), 2048 // threads, 8))


# ---------------------------------------------------------------- calibration
def calibrate(samples: Iterable[tuple[ExecutionPlan, STaskGraph, float]], vdev: VDevice,
              rounds: int = 3) -> Calibration:
    """Fit per-sEU occupancy scales and a per-iteration overhead to measured kernel times (seconds).

    Coordinate descent on the mean squared log error; each parameter is tried on a
    geometric grid. A documented, deterministic fit: the same samples give the same
    corrections.
    """
    samples = list(samples)
    if not samples:
        raise ValueError("calibrate needs at least one (plan, graph, measured seconds) sample")
    kinds = sorted({a.seu.value for p, _, _ in samples for a in p.appends})
    cal = Calibration(vdev.name, {k: 1.0 for k in kinds}, 0.0, len(samples))

    def loss(c: Calibration) -> float:
        return sum(math.log(estimate(p, g, vdev, c).seconds / s) ** 2 for p, g, s in samples) / len(samples)

    best = loss(cal)
    grid = [0.5, 0.7, 0.85, 1.0, 1.2, 1.45, 2.0]
    for _ in range(rounds):
        for k in kinds:
            for f in grid:
                trial = Calibration(vdev.name, {**cal.scale, k: cal.scale[k] * f}, cal.overhead, len(samples))
                value = loss(trial)
                if value < best - 1e-12:
                    best, cal = value, trial
        for o in (0.0, 50.0, 100.0, 200.0, 400.0):
            trial = Calibration(vdev.name, dict(cal.scale), o, len(samples))
            value = loss(trial)
            if value < best - 1e-12:
                best, cal = value, trial
    return cal


def _calibration_dir() -> str:
    return os.path.join(os.environ.get("PT_TVM_CACHE_DIR", os.path.join(os.path.expanduser("~"), ".cache", "pt-tvm")),
                        "calibration")


def save_calibration(cal: Calibration, directory: str | None = None) -> str:
    """Write ``cal`` to ``<dir>/<target>.json`` atomically; returns the path."""
    from .cache import atomic_write

    path = os.path.join(directory or _calibration_dir(), f"{cal.target}.json")
    atomic_write(path, json.dumps(cal.to_dict(), indent=1))
    return path


def load_calibration(target: str, directory: str | None = None) -> Calibration | None:
    """The user's calibration of ``target`` (``directory`` or the cache dir), else None (the model as built).

    pt-tvm ships none: on the recorded H200 runs the uncalibrated model picks the best measured plan
    more often than any fit of absolute times did (tests/test_calibration.py). A corrupt file is
    ignored with a warning."""
    import warnings

    path = os.path.join(directory or _calibration_dir(), f"{target}.json")
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            d = json.load(f)
        if d.get("format") != "pt-tvm.calibration/1":
            raise ValueError("wrong format")
        return Calibration(d["target"], dict(d["scale"]), float(d["overhead"]), int(d.get("samples", 0)),
                           str(d.get("source", "")))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:  # AttributeError: not a JSON object
        warnings.warn(f"ignoring corrupt calibration file {path}: {e}", stacklevel=2)
        return None
