"""Cost model: sTask latencies on sEUs, and a plan's time from its simulated timeline (the paper's simulated clock).

The plan's role programs run on :class:`pt_tvm.simulate.Simulation` (one stream per
warpgroup, each sTask ``stage`` iterations behind); this module prices what the
streams issue. An sTask occupies its sEU for ``work / rate`` cycles and completes
``latency`` cycles later. Synchronous sTasks hold their stream until they complete;
asynchronous copies (TMA, cp.async) let it run on until something depends on them.
Tensor-core sTasks hold their stream too (that is how TileLang emits them) unless the
plan keeps them in flight until a Wait. The warpgroups of one role issue the same
wgmma together and finish it together, unless a Handoff makes them take turns.
sEUs are shared by the streams of one EU: the tensor core and copy engine as one
server, CUDA cores and the SFU as two half-rate servers (one warpgroup alone cannot
keep them busy). A few simulated iterations give the steady-state iteration time;
waves of blocks over the EUs give the kernel's. Copies from global memory
run through L2 at the EU's share of its bandwidth, slowed where the EU's share
of DRAM cannot refill L2 with what the blocks resident at once miss
(:func:`copy_rates`, :func:`dram_reuse`): the plan's tile order decides that.

Per-target corrections (:class:`Calibration`) scale each sEU's occupancy and
add a per-iteration overhead; :func:`calibrate` fits them to measured kernels.
"""
from __future__ import annotations

import functools
import heapq
import json
import math
import os
import warnings
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

import numpy as np

from .cache import atomic_write
from .graph import OpKind, Placement, STask, STaskGraph, dtype_bytes
from .hw import SEUKind, VDevice
from .lowering import wgmma_width
from .plan import CLUSTER, Append, ExecutionPlan, PlanError, Style, TileOrder
from .simulate import Simulation, Stream
from .stream_k import Split, accumulator
from .verify import deadlock_violations, gemm_warpgroups, register_estimate, shared_bytes

__all__ = ["Calibration", "Estimate", "Event", "estimate", "simulated_iterations", "sTask_cycles", "copy_rates",
           "dram_reuse", "least_dram_order", "streaming_eus", "blocks_per_eu", "calibrate",
           "load_calibration", "save_calibration"]

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
    dram_bytes: float = 0.0  # what the kernel's copies move to or from DRAM, after reuse in L2
    dram_seconds: float = 0.0  # those bytes at the chip's DRAM bandwidth
    l2_bound: bool = False  # the loop's loads outlast its tensor-core work at the EU's L2 share (:func:`l2_bound`)

    def bottleneck(self) -> str:
        return max(self.busy, key=self.busy.get) if self.busy else ""

    @property
    def dram_bound(self) -> bool:
        """Whether moving the DRAM bytes takes at least half the predicted time (the kernel streams memory)."""
        return self.dram_seconds >= 0.5 * self.seconds


# Cycles the TMA unit of an SM spends per global tile request beside its bytes (descriptor fetch, address
# generation, the mbarrier's transaction count). First fitted at 55 with the H100 TMA rate (pt_tvm.hw) on the
# warp-specialized plans of benchmarks/results/2026-11-24-h100-layer-gemms (GEMMs of 512-2500 rows, block_K 32
# 5-15% slower than 64), before L2's queueing (TMA_LOADED_CYCLES) and the wgmmas' stretch of an L2-bound
# iteration were priced, which now account for part of that. The whole gemm suite on two H200s
# (benchmarks/results/2026-11-29-h200-x2-gemm) measured block_K 32 level with 64 (1.005x over twelve like-for-like
# pairs) where 55 priced it 1.056x; 25 ranks every recorded GEMM run as well as 55 or better (that run's first
# pick 1.2% -> 0.4% behind the fastest, Spearman 0.64 -> 0.79; none worse: tests/test_modelcheck.py), where 0
# set back the H100 depth runs (first pick 3.9% -> 8.1% behind on 2026-11-26-h100-depth-alias).
TMA_REQUEST_CYCLES = 25.0


def sTask_cycles(t: STask, kind: SEUKind, graph: STaskGraph, vdev: VDevice, share: float = 1.0,
                 copy_rate: float | None = None) -> tuple[float, float]:
    """(occupancy, latency) cycles of ``share`` of sTask ``t`` on the EU's sEU of ``kind``; a copy moves
    ``copy_rate`` bytes per cycle (default: its sEU's rate, or its EU's share of L2 or of DRAM for a
    global tile no other block reads; :func:`copy_rates` gives a plan's)."""
    seu = vdev.eu.seu(kind)
    if kind == SEUKind.TENSOR_CORE:
        rate = seu.throughput * (0.5 if t.dtype in ("float32", "tfloat32") else 1.0)
        work = t.flops * share / rate
    elif kind in (SEUKind.TMA, SEUKind.LSU) and t.op in (OpKind.COPY, OpKind.ATOMIC):
        work = t.bytes * share / (copy_rate or min(_l2_rate(t, kind, graph, vdev), _dram_rate(t, graph, vdev)))
        if kind == SEUKind.TMA and _global(t):
            work += TMA_REQUEST_CYCLES * share
    elif kind == SEUKind.SFU:
        cuda = vdev.eu.seu(SEUKind.CUDA_CORE)
        work = max(t.sfu_ops / seu.throughput, t.flops / cuda.throughput) * share
    else:  # CUDA cores, or an SFU-less target doing transcendentals on the ALUs
        work = (t.flops + 4.0 * t.sfu_ops) * share / seu.throughput
        if t.op == OpKind.REDUCE:
            work += 5 * 8.0  # warp-shuffle butterfly: log2(32) dependent steps
    return work, seu.latency


def _global(t: STask) -> bool:
    return t.op in (OpKind.COPY, OpKind.ATOMIC) and any(a.scope == "global" for a in (*t.reads, *t.writes))


def _global_load(t: STask) -> bool:
    """A copy that reads global memory (a load, not a store)."""
    return t.op == OpKind.COPY and bool(t.reads) and t.reads[0].scope == "global"


def _l2_rate(t: STask, kind: SEUKind, graph: STaskGraph, vdev: VDevice, readers: int = 1) -> float:
    """Bytes per cycle of a copy on its sEU, through the EU's share of L2 when it touches global memory (a read
    that ``readers`` EUs share, multicast, costs each of them its share of L2 once for all); an LSU store into
    rows that start off 16-byte boundaries moves its narrower vectors (``vector_bytes``) at the rate its 16-byte
    ones would (the same instructions a cycle)."""
    rate = vdev.eu.seu(kind).throughput * int(t.attrs.get("vector_bytes", 16)) / 16
    share = vdev.l2_bandwidth / (streaming_eus(graph, vdev) * vdev.clock_ghz * 1e9)
    return min(rate, share * readers) if _global(t) else rate


def _dram_rate(t: STask, graph: STaskGraph, vdev: VDevice, reuse: float = 1.0) -> float:
    """Bytes per cycle of a global copy whose DRAM reads serve ``reuse`` blocks: the EU's share of DRAM."""
    share = vdev.dram_bandwidth / (streaming_eus(graph, vdev) * vdev.clock_ghz * 1e9)
    return share * reuse if _global(t) else math.inf


def copy_rates(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice,
               reuse: Mapping[str, float] | None = None) -> dict[str, float]:
    """Bytes per cycle of each copy of the plan: at its L2 rate, slowed where DRAM cannot keep up.

    DRAM feeds L2 while the sEUs read it, so the loop's global copies together take the longer of their
    L2 time and the DRAM time of the bytes L2 misses (:func:`dram_reuse`), shared out in proportion to
    their L2 time; a copy outside the loop runs alone; a load a 2-CTA cluster multicasts (``plan.multicast``)
    reads L2 once for both CTAs. ``reuse``: :func:`dram_reuse`'s, when at hand.
    """
    reuse = dram_reuse(plan, graph, vdev) if reuse is None else reuse
    seu = {a.stask: a.seu for a in plan.appends}
    copies = [t for t in graph.stasks
              if t.op in (OpKind.COPY, OpKind.ATOMIC) and seu[t.id] in (SEUKind.TMA, SEUKind.LSU)]
    shared = {t.id for t in graph.loads_shared_along(plan.multicast)} if plan.multicast else set()
    l2 = {t.id: _l2_rate(t, seu[t.id], graph, vdev, CLUSTER if t.id in shared else 1) for t in copies}
    dram = {t.id: _dram_rate(t, graph, vdev, reuse.get(t.id, 1.0)) for t in copies}
    loop = [t for t in copies if t.placement == Placement.LOOP and _global(t)]
    l2_time = sum(t.bytes / l2[t.id] for t in loop)
    slow = max(1.0, sum(t.bytes / dram[t.id] for t in loop) / l2_time) if l2_time else 1.0
    return {t.id: l2[t.id] / slow if t in loop else min(l2[t.id], dram[t.id]) for t in copies}


def dram_reuse(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> dict[str, float]:
    """Per sTask copying a global tile: how many blocks read (or write) it from L2 per DRAM transfer.

    The blocks that share a tile get it from L2 when they run close enough in time: within a window of
    consecutive tiles of the plan's order, as many as are resident at once (a wave) but fewer where the
    wave's spread in time outlasts what L2 holds. A wave's blocks start and drift apart by about
    ``WAVE_SKEW`` of the wave's duration from the first tile of the window to the last, while DRAM refills
    L2 in ``l2_bytes / dram_bandwidth``; tiles further apart in the order than that reread DRAM. Within
    the window, a tile's offsets use some launch indices: the blocks that agree on those share it.

    A stream-K split (:mod:`pt_tvm.stream_k`) shares like whole tiles: its heads run in step.
    """
    return _reuse(graph, vdev, plan.tile_order, vdev.num_eus * blocks_per_eu(plan, graph, vdev))


def least_dram_order(graph: STaskGraph, vdev: VDevice, orders: Iterable[TileOrder]) -> TileOrder:
    """Of ``orders``, the first that moves the fewest loop bytes through DRAM with one block per EU (the
    order a plan gains from where DRAM binds; where it does not, the order changes no predicted time)."""

    def dram(order: TileOrder) -> float:
        reuse = _reuse(graph, vdev, order, vdev.num_eus)
        return sum(t.bytes / reuse[t.id] for t in graph.loop_stasks if t.id in reuse)

    return min(orders, key=dram)


def _reuse(graph: STaskGraph, vdev: VDevice, order: TileOrder, resident: int) -> dict[str, float]:
    """:func:`dram_reuse` of tiles walked in ``order`` with ``resident`` blocks at once."""
    grid = tuple(graph.grid.values())
    if not grid or any(e is None for e in grid):
        return {}
    l2_cycles = vdev.l2_bytes / vdev.dram_bandwidth * vdev.clock_ghz * 1e9
    wave = max(1.0, _block_floor(graph, vdev)) * resident / vdev.num_eus
    window = max(1, min(resident, math.prod(grid), round(resident * l2_cycles / (WAVE_SKEW * wave))))
    names = tuple(graph.grid)
    out = {}
    for t in graph.stasks:
        glob = [a for a in (*t.reads, *t.writes) if a.scope == "global"]
        if glob and t.op in (OpKind.COPY, OpKind.ATOMIC):
            uses = tuple(names.index(v) for v in glob[0].block_vars if v in names)
            out[t.id] = _window_reuse(grid, order, window, uses)
    return out


# How far apart in time the blocks of one wave run, from the first tile of the order's window to the last,
# as a fraction of the wave's duration (model: they start together and drift). On the 32 GEMM rows of the
# 2026-11-22-h100-gemm-mamba run (4 measured plans each), any value from 0.15 to 0.3 makes the model rank
# the 256x128 tile ahead of 128x256 at 16384^3 and the LLaMA-3-70B up and down projections, as measured
# (1.3-1.6x apart), and puts its first pick 0.8% behind the fastest in geometric mean, 4.1% at worst
# (8.1% and 56% when every block of a wave shared L2, as at 0); tests/test_cost.py.
WAVE_SKEW = 0.2
_WINDOW_SAMPLES = 8  # windows of the order averaged over (the grid's edges change what a window covers)


def _block_floor(graph: STaskGraph, vdev: VDevice) -> float:
    """Cycles one block needs at least: its loop's tensor-core work or its copies through L2, whichever
    is longer (the duration that decides how long its tiles must stay in L2)."""
    eu = vdev.eu
    per_eu_l2 = vdev.l2_bandwidth / (streaming_eus(graph, vdev) * vdev.clock_ghz * 1e9)
    flops = sum(t.flops for t in graph.loop_stasks if t.seu == SEUKind.TENSOR_CORE)
    tc = flops / eu.seu(SEUKind.TENSOR_CORE).throughput if eu.has(SEUKind.TENSOR_CORE) else 0.0
    copies = sum(t.bytes / min(eu.seu(t.seu).throughput, per_eu_l2) for t in graph.loop_stasks
                 if t.op == OpKind.COPY and eu.has(t.seu) and any(a.scope == "global" for a in t.reads))
    return max(tc, copies) * graph.loop.trip_count


@functools.lru_cache(maxsize=4096)
def _window_reuse(grid: tuple[int, ...], order: TileOrder, window: int, uses: tuple[int, ...]) -> float:
    """Mean over windows of ``window`` consecutive tiles in ``order``: blocks per distinct tile, where a tile
    is named by the launch indices ``uses``."""
    total = math.prod(grid)
    gx, gy = grid[0], grid[1] if len(grid) > 1 else 1
    starts = np.unique((total - window) * np.arange(_WINDOW_SAMPLES) // max(1, _WINDOW_SAMPLES - 1))
    linear = (starts[:, None] + np.arange(window)[None, :]).ravel()
    x, y = order.coords(linear % (gx * gy), gx, gy, np.where)
    index = [x, y]
    rest = linear // (gx * gy)
    for extent in grid[2:]:
        rest, digit = np.divmod(rest, extent)
        index.append(digit)
    name = np.zeros_like(linear)
    for i in uses:
        name = name * grid[i] + index[i]
    per_window = name.reshape(len(starts), window)
    return float(np.mean([window / len(np.unique(w)) for w in per_window]))


def streaming_eus(graph: STaskGraph, vdev: VDevice) -> int:
    """EUs that share L2 and DRAM bandwidth while the kernel runs: every EU, or one per block when the grid
    has fewer blocks than EUs (the block scheduler spreads blocks over idle EUs first). A decode kernel with
    a few sequences and KV heads then streams at what its few EUs can pull, not at a 1/num_eus share."""
    blocks = graph.grid_blocks()
    return vdev.num_eus if blocks is None else max(1, min(vdev.num_eus, blocks))


# ---------------------------------------------------------------- the simulated clock
# A wgmma whose A operand lies in shared memory reads its 64x16 slice of A again for every instruction, so a
# warpgroup whose slice of the tile has few columns reads more shared memory per flop: an m64n128k16 reads 1.2x,
# an m64n64k16 1.6x the bytes per flop of an m64n256k16. This is the share of that extra reading the tensor
# cores wait for where both operands stream through the loop (a GEMM's main loop: the copies into shared
# memory contend with the reads). Measured on one H100 (benchmarks/results/2026-11-24-h100-row-split): the
# same 128x256 GEMM plans at block_K 32 ran 1.01-1.12x (geomean 1.06x) slower as 2 x m64n128 per warpgroup
# than as one m64n256 (0.25 x 0.2 = 5%), and 256x128 tiles, which TileLang splits into m64n64 wgmmas,
# 1.10-1.11x slower than 128x256 as m64n256 (0.25 x 0.6 = 15%). With the Spearman rank correlation of the
# 2026-11-23 H100 GEMM rows goes from 0.56 to 0.78. FlashAttention's QK^T (Q resident) is left out: priced
# the same way, the model's first pick on that run's attention rows fell from 0.2% to 1.1% behind the best.
WGMMA_OPERAND_COST = 0.25


def _operand_reads(cols: int) -> float:
    """Elements an m64n{cols}k16 wgmma reads from shared memory (A and B) per multiply-add."""
    return (64 * 16 + 16 * cols) / (64 * 16 * cols)


def wgmma_factor(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> dict[str, float]:
    """Gemm sTask -> how much longer than its flops alone its wgmmas take, from each warpgroup's wgmma width
    (:func:`pt_tvm.lowering.wgmma_width`), for the loop's gemms whose operands the loop copies into shared
    memory; none on chips without wgmma."""
    if "wgmma" not in vdev.features:
        return {}
    loaded = {w.buffer for s in graph.loop_stasks if s.op == OpKind.COPY for w in s.writes if w.scope != "global"}
    out = {}
    for t, wgs in gemm_warpgroups(plan, graph, vdev):
        if t.placement == Placement.LOOP and wgs >= 1 and all(r.buffer in loaded for r in t.reads[:2]):
            cols = wgmma_width(plan, t, wgs)
            out[t.id] = 1.0 + WGMMA_OPERAND_COST * (_operand_reads(cols) / _operand_reads(256) - 1.0)
    return out


def _load_bound_stretch(sim: "_Timeline") -> float:
    """How much longer an L2-bound loop's iteration takes than its loads alone: its wgmmas' extra operand reads
    (:func:`wgmma_factor`) stretch it as they stretch the tensor cores' work, which the loads hide in the
    timeline. Measured on one H200 (benchmarks/results/2026-11-29-h200-gemm-carried, gemms carried into the next
    step): 128x256 plans as 2 x m64n128 a warpgroup ran 1.02-1.07x, 256x128 plans as m64n64 1.10-1.20x the time
    of the same tiles as m64n256, where the loads were priced alike (the factors: 1.05, 1.15). Pricing the
    stretch took that run's first pick from 2.0% to 0.6% behind the fastest measured plan (geomean; worst 6.0% to
    2.7%) and the H100 run of 2026-11-27-x4-suites (gemms waiting) from 2.0% to 0.7% (worst 7.1% to 2.6%).
    Swapped tiles (``swap_ab``) are left out: none was measured so, and the SwiGLU projection at 777 tokens ran
    its swapped 112x256 tile in 277 us (2026-11-27-h200-layers) and the carried plain 128x256 in 285 us
    (2026-11-29-h200-layers-carried; two runs on H200s), where the stretch prices the swapped tile 1% slower;
    SWAPPED_TILE_FACTOR prices them instead."""
    return max(sim.wgmma.values(), default=1.0) if sim.l2_bound and not sim.plan.tile.get("swap_ab") else 1.0


def shared_port_cycles(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> float:
    """Cycles a loop iteration keeps the EU's shared-memory port busy: its wgmmas' operand reads from shared
    memory (A again for every m64nNk16, :func:`pt_tvm.lowering.wgmma_width`) and its copies into and out of
    shared memory, at the EU's ``smem_bandwidth`` bytes a cycle; 0 on chips without wgmma."""
    if "wgmma" not in vdev.features or not vdev.eu.smem_bandwidth:
        return 0.0
    moved = sum(t.bytes for t in graph.loop_stasks if t.op in (OpKind.COPY, OpKind.ATOMIC)
                and any(r.scope.startswith("shared") for r in (*t.reads, *t.writes)))
    for t, wgs in gemm_warpgroups(plan, graph, vdev):
        if t.placement != Placement.LOOP or wgs < 1:
            continue
        cols = wgmma_width(plan, t, wgs)
        size = dtype_bytes(graph.buffers[t.reads[0].buffer].dtype)
        shared = [r.scope.startswith("shared") for r in t.reads[:2]]
        moved += t.flops / (2 * 64 * cols * 16) * (64 * 16 * shared[0] + 16 * cols * shared[1]) * size
    return moved / vdev.eu.smem_bandwidth


# Cycles from issue to arrival of a global TMA load of an L2-bound loop (:func:`l2_bound`), at the least: every SM
# keeps L2 saturated and a request waits its turn in L2's queues, so a tile arrives about this long after it is
# issued whatever its size (its bytes stream while it waits), and a deeper pipeline, not a faster one, keeps the
# tensor cores fed. Fitted on one H100: the LLaMA layer's GEMMs at 512 tokens ran 1.17-1.28x faster 4-6 deep
# than 3 deep with 128x128x64 tiles (32 KB a step; benchmarks/results/2026-11-26-h100-depth), while 128x256x64
# tiles (48 KB a step) ran as fast or faster 3 deep than 4 (2026-11-26-h100-depth-alias): both keep about 96 KB
# in flight at their best depth. 1850 (of 1500-2800) ranks the recorded GEMM runs best: 128x128 tiles 3 deep
# priced 1.09x slower than 4 (measured 1.17-1.28x), 128x192 and 128x256 alike at 3 and 4 (the search breaks such
# ties toward the deeper, :func:`pt_tvm.search.rank_key`); deeper than 128 KB in flight ran slower, which the
# search leaves out (:attr:`pt_tvm.space.SearchSpace.l2_bound_inflight`).
TMA_LOADED_CYCLES = 1850.0


def l2_bound(graph: STaskGraph, vdev: VDevice) -> bool:
    """Whether the loop only loads tiles and multiplies them (a GEMM's main loop: nothing beside the tensor cores
    to hide a load behind) and its global loads, at the EU's share of L2, outlast its tensor-core work; on chips
    with TMA, where the queueing was measured."""
    if "tma" not in vdev.features or not graph.loads_and_multiplies:
        return False
    tc = vdev.eu.seu(SEUKind.TENSOR_CORE).throughput
    loads = sum(t.bytes / _l2_rate(t, SEUKind.TMA, graph, vdev) for t in graph.loop_stasks if _global_load(t))
    return loads > sum(t.flops for t in graph.loop_stasks if t.op == OpKind.GEMM) / tc


class _Timeline(Simulation):
    """The plan's streams on one EU's sEUs: each issued instance occupies its sEU for ``work / rate``
    cycles (the servers of its kind, shared by every stream) and completes ``latency`` cycles later."""

    turn_cycles = 20.0  # bar.sync after the matching bar.arrive (model)

    def __init__(self, plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice, cal: Calibration, iters: int,
                 trace: bool, blocks_per_eu: int) -> None:
        super().__init__(plan, graph, vdev, iters)
        self.cal, self.overhead = cal, cal.overhead
        self.servers = {k: [0.0] * n for k, n in _SERVERS.items()}
        self.busy = {k: 0.0 for k in _SERVERS}  # over the steady iterations
        self.busy_all = {k: 0.0 for k in _SERVERS}  # over every simulated instance
        self.steady = (iters // 2, iters)
        self.events: list[Event] | None = [] if trace else None
        self.cycles: dict[tuple, tuple] = {}  # sTask_cycles is pure: each (sTask, sEU, share) once
        self.reuse = dram_reuse(plan, graph, vdev)
        self.copy_rates = copy_rates(plan, graph, vdev, self.reuse)
        # Warpgroups of one role that do not take turns are released by the same barriers and issue the same
        # wgmma together; the tensor cores interleave them: the last completes when the whole role's work
        # does, the first INTERLEAVED_DELAY of its siblings' work later than alone.
        self.interleaved = {r for r, group in self.by_role.items() if len(group) > 1 and r not in self.handoffs}
        self.lockstep: dict[tuple[str, str, int], float] = {}  # (role, tensor-core sTask, iteration) -> completion
        # TMA runs behind its issuer, and so do the loop's copies of a software pipeline where the chip has
        # cp.async (num_stages >= 2; with one stage TileLang copies through registers, holding the warps).
        # A wgmma holds its stream like a synchronous sTask (TileLang 0.1.15 waits right after it) unless the
        # plan keeps it in flight until a Wait.
        eu = vdev.eu
        self.issue_cycles = {k.kind: (k.issue if k.is_async and k.kind != SEUKind.TENSOR_CORE else None)
                             for k in eu.seus}
        self.cp_async = {t.id for t in graph.loop_stasks if plan.append_of(t.id).seu == SEUKind.LSU} \
            if plan.style == Style.SOFTWARE_PIPELINE and plan.num_stages > 1 and "cp_async" in vdev.features else set()
        lsu = eu.seu(SEUKind.LSU)
        self.cp_async_issue = lsu.issue if lsu.is_async else _CP_ASYNC_ISSUE  # a chip whose LSU is cp.async prices it
        self.wg_threads = eu.warpgroup_warps * eu.warp_size
        self.cp_async_cycles = 0.0 if lsu.is_async else CP_ASYNC_CYCLES  # fitted where the LSU model is synchronous
        self.in_flight = plan.in_flight()
        self.tc_issue = eu.seu(SEUKind.TENSOR_CORE).issue
        self.sync_cost = _sync_costs(plan, graph)
        self.wgmma = wgmma_factor(plan, graph, vdev)
        self.l2_bound = l2_bound(graph, vdev)
        self.loaded = TMA_LOADED_CYCLES if self.l2_bound else 0.0

    def sync_delay(self, stream: Stream, a: Append) -> float:
        return self.sync_cost.get((stream.role, a.stask), 0.0)

    def issue(self, stream: Stream, a: Append, it: int, start: float) -> tuple[float, float]:
        key = (a.stask, a.seu, stream.share)
        cached = self.cycles.get(key)
        if cached is None:  # the sTask, its calibrated work and its latency, once per (sTask, sEU, share)
            t = self.graph.stask(a.stask)
            work, latency = sTask_cycles(t, a.seu, self.graph, self.vdev, stream.share, self.copy_rates.get(t.id))
            work *= self.cal.factor(a.seu) * (self.wgmma.get(t.id, 1.0) if a.seu == SEUKind.TENSOR_CORE else 1.0)
            if a.seu == SEUKind.TMA and t.placement == Placement.LOOP and _global_load(t):
                latency = max(latency, self.loaded - work * len(self.servers[a.seu]))
            cached = self.cycles[key] = (t, work, latency)
        t, work, latency = cached
        pool = self.servers[a.seu]
        k = pool.index(min(pool))
        per_server = work * len(pool)  # each of n servers runs at 1/n of the sEU's rate
        batch = (stream.role, t.id, it) if a.seu == SEUKind.TENSOR_CORE and stream.role in self.interleaved else None
        if batch in self.lockstep and start <= self.lockstep[batch]:
            begin, end = start, self.lockstep[batch]  # a sibling booked this wgmma for the whole role
        else:
            begin = max(start, pool[k])
            end = begin + per_server + latency
            if batch is not None:
                n = len(self.by_role[stream.role])
                self.lockstep[batch] = begin + n * per_server + latency
                end += (n - 1) * per_server * INTERLEAVED_DELAY
                per_server *= n
            pool[k] = begin + per_server
            self.busy_all[a.seu] += per_server / len(pool)
            if self.steady[0] <= it < self.steady[1]:
                self.busy[a.seu] += per_server / len(pool)
        if a.stask in self.in_flight or a.stask in self.carried:
            after = start + self.tc_issue
        elif a.stask in self.cp_async:
            per_thread = t.bytes * stream.share / (self.wg_threads * _CP_ASYNC_BYTES)  # cp.async instructions
            after = start + max(self.cp_async_issue, per_thread * self.cp_async_cycles)
        else:
            after = start + self.issue_cycles[a.seu] if self.issue_cycles[a.seu] is not None else end
        if self.events is not None:
            self.events.append(Event(stream.name, t.id, it, a.seu, begin, end))
        return end, after


def simulated_iterations(graph: STaskGraph) -> int:
    """Loop iterations :func:`estimate` simulates: enough for a steady state, no more than the loop runs."""
    return max(2, min(_SIM_ITERATIONS, int(math.ceil(graph.loop.trip_count))))


def estimate(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice, calibration: Calibration | None = None,
             trace: bool = False) -> Estimate:
    """Predict the plan's kernel time by simulating its timeline on one EU, then counting waves; a
    persistent plan's blocks start each tile but the first with its loads issued during the last one's
    epilogue. Raises :class:`~pt_tvm.plan.PlanError` (the deadlock rule) where the plan's waits cannot all be met."""
    cal = calibration or Calibration(vdev.name)
    iters = simulated_iterations(graph)
    bpe = blocks_per_eu(plan, graph, vdev)
    sim = _Timeline(plan, graph, vdev, cal, iters, trace, bpe)
    stuck = sim.run()
    if stuck:
        raise PlanError(deadlock_violations(sim, stuck))
    steady_lo = sim.steady[0]
    sim_end = max([s.time for s in sim.streams] + list(sim.done.values()))
    per_iter = (sim.iter_done[iters - 1] - sim.iter_done[steady_lo - 1]) / (iters - steady_lo)
    # a few simulated iterations of a long-latency stream (TMA behind a deep pipeline) may not reach the steady
    # state: no iteration is shorter than the work its busiest sEU does per iteration
    per_iter = max(per_iter, max(sim.busy.values(), default=0.0) / (iters - steady_lo))
    # the timeline books each sEU alone; their shared-memory traffic together stretches every iteration
    port = shared_port_cycles(plan, graph, vdev)
    steady = max(per_iter * _load_bound_stretch(sim) * _third_warpgroup_stretch(plan, graph, vdev), port)
    block = sim_end + max(0.0, graph.loop.trip_count - iters) * steady + (steady - per_iter) * min(
        iters, graph.loop.trip_count)
    blocks = graph.grid_blocks() or vdev.num_eus * bpe
    waves = int(math.ceil(blocks / (vdev.num_eus * bpe)))
    span = steady * (iters - steady_lo)
    util = {k.value: min(1.0, v / span) if span else 0.0 for k, v in sim.busy.items() if v}
    # co-resident blocks overlap each other's idle time, but not perfectly, until an sEU is busy with all
    # their work: a block's whole work (prologue, every iteration, epilogue), not its steady loop's share
    # of its duration, which would count a short loop's fill and epilogue as busy too
    extra = max(0.0, graph.loop.trip_count - iters) / (iters - steady_lo)
    work = max([sim.busy_all[k] + extra * sim.busy[k] for k in sim.busy] + [port * graph.loop.trip_count])
    wave_cycles = max(block * (1.0 + (bpe - 1) * (1.0 - CO_RESIDENT_OVERLAP)), bpe * work)
    kernel_cycles = wave_cycles * waves
    # the next tile's first loads (its fill beyond a steady iteration) run under the epilogue, after its last read
    # of a buffer loaded once a tile (its release)
    fill, epilogue = sim.iter_done[0] - per_iter, sim_end - max(sim.iter_done[iters - 1], _root_released(sim))
    if plan.persistent:
        if plan.stream_k:  # the slower of a head's block (whole tiles, its head, the partial sums it adds, the
            # epilogues) and a tail's (whole tiles, its share of the tails, a partial sum published per segment);
            # each segment after the first refills the pipeline beyond what the last one's end hides
            split, fixup = Split(blocks, int(graph.loop.trip_count), vdev.num_eus), _stream_k_fixup_cycles(graph, vdev)
            after_epilogue, after_fixup = max(0.0, fill - epilogue), max(0.0, fill - fixup)
            whole = split.waves * (split.n * steady + epilogue + after_epilogue)
            head = split.head * steady + split.adds * fixup + epilogue
            tail = (split.tail_quota * steady + split.tail_segments * fixup
                    + (split.tail_segments - 1) * after_fixup)
            kernel_cycles, waves = fill + whole + max(head, tail), 1
        else:
            kernel_cycles -= (waves - 1) * max(0.0, min(fill, epilogue))
    elif graph.loop.max_trip_count:
        # blocks of unequal length (a causal mask), the heaviest launched first: the light ones fill the last
        # wave, so the grid takes its share of the whole work, but no less than its heaviest block (and, where a
        # block holds an EU alone, what its walk's last wave adds: below)
        heaviest = (sim_end + max(0.0, graph.loop.max_trip_count - iters) * steady
                    + (steady - per_iter) * min(iters, graph.loop.max_trip_count))
        kernel_cycles = max(wave_cycles * blocks / (vdev.num_eus * bpe), heaviest)
    if graph.loop.block_trips and bpe == 1 and steady > 0 and not plan.stream_k:
        # blocks of unequal length (a causal mask), one an EU: walked in the plan's order, each block (or a
        # persistent block's next tile) on the first free EU, the last ends after the share of the work; that
        # excess, weighted, is added (each block costs its fill and epilogue beyond its steady iterations, and
        # its own iterations)
        fixed = _quantized(max(0.0, sim_end - iters * per_iter) / steady)
        saving = _quantized(max(0.0, min(fill, epilogue)) / steady) if plan.persistent else 0.0
        span = walk_span(graph, plan.tile_order, plan.persistent, vdev.num_eus, fixed, saving)
        tiles = max(0, blocks - vdev.num_eus) if plan.persistent else 0  # each EU's tiles after its first
        share = (blocks * (graph.loop.trip_count + fixed) - tiles * saving) / min(vdev.num_eus, blocks)
        kernel_cycles += TAIL_WEIGHT * max(0.0, span - share) * steady * wave_cycles / block
    dram_bytes = blocks * sum(t.bytes * (graph.loop.trip_count if t.placement == Placement.LOOP else 1.0) / r
                              for t in graph.stasks for r in [sim.reuse.get(t.id)] if r)
    dram_seconds = dram_bytes / vdev.dram_bandwidth
    # no faster than DRAM moves its bytes: the loop's loads and stores on two sEUs overlap in the timeline, each
    # slowed to its share of DRAM alone (a streaming kernel's, the causal conv1d's)
    seconds = vdev.cycles_to_seconds(kernel_cycles) * _tile_factor(plan, graph, vdev)
    return Estimate(
        cycles_per_iteration=steady,
        block_cycles=block,
        blocks_per_eu=bpe,
        waves=waves,
        seconds=max(seconds, dram_seconds),
        busy=util,
        trace=tuple(sim.events or ()),
        dram_bytes=dram_bytes,
        dram_seconds=dram_seconds,
        l2_bound=sim.l2_bound,
    )


def _root_released(sim: _Timeline) -> float:
    """When the epilogue's last read of a buffer loaded once a tile (a root pipeline's) ends: a persistent block
    loads its next tile's only after. FlashAttention's key tail reads Q and its K and V rows after the loop: walked
    persistently at ViT-L's 577 tokens its 128 x 128 tile ran 0.151 ms where the model, overlapping the next
    tile's loads with the whole epilogue, priced it 0.126 ms, ahead of a launched 64 x 64 tile's 0.136 ms (one
    H200, benchmarks/results/2026-12-02-h200-o-shared-confirm)."""
    root = sim.plan.root_buffers()
    readers = {t.id for t in sim.graph.placed(Placement.EPILOGUE) if t.read_buffers() & root}
    return max((end for (_, stask, it), end in sim.done.items() if it == -1 and stask in readers), default=0.0)


# The last wave's blocks run on an emptying GPU (L2, DRAM and the power budget shared by fewer SMs), faster than
# their steady iterations: the gains of a causal grid's orders measured about half what the list schedule gives
# (one H200, benchmarks/results/2026-11-28-h200-causal-order: head dim 256 at 4 x 4096 10% for 12.5% priced, head
# dims 64 and 128 1-3% for 3-6%), and 777 queries over 2500 keys in 800 packed blocks on 132 SMs took 1.09x the
# share of the work (one H100, 2026-11-26-h100-ragged-gqa) where the schedule gives 1.16x. A kernel of unequal
# blocks is priced at its share of the work plus this weight of what the walk's last block ends after that share.
TAIL_WEIGHT = 0.5


def _quantized(x: float) -> float:
    """``x`` to two significant digits: the walks of plans priced alike share one simulation (:func:`walk_span`)."""
    return float(f"{x:.2g}")


def _walk_trips(grid: tuple[tuple[str, int], ...], trips_index: str, block_trips: tuple[int, ...],
                order: TileOrder) -> np.ndarray:
    """The loop's trips of each block of the grid (``(name, extent)`` of each launch index, the trips varying with
    ``trips_index``) in the order ``order`` walks them (the launch index linear, ``blockIdx.x`` fastest, each plane
    of the first two indices in ``order``)."""
    extents = [extent for _, extent in grid]
    gx, gy = extents[0], extents[1] if len(extents) > 1 else 1
    linear = np.arange(math.prod(extents))
    x, y = order.coords(linear % (gx * gy), gx, gy, np.where)
    index, rest = [x, y], linear // (gx * gy)
    for extent in extents[2:]:
        rest, digit = np.divmod(rest, extent)
        index.append(digit)
    return np.asarray(block_trips)[index[[name for name, _ in grid].index(trips_index)]]


def _span(trips: Sequence[int], persistent: bool, slots: int, fixed: float, saving: float) -> float:
    """Steady iterations until the last of these blocks (in walk order, each ``fixed`` beyond its trips) ends:
    dynamically each on the first free of ``slots`` places (the block scheduler), or persistently the
    ``i``-th on place ``i % slots``, each tile after a place's first saving ``saving``."""
    if persistent:
        cost = np.asarray(trips, dtype=float) + fixed
        count = np.bincount(np.arange(len(cost)) % slots, minlength=slots)
        per_place = np.bincount(np.arange(len(cost)) % slots, weights=cost, minlength=slots)
        return float(np.max(per_place - np.maximum(count - 1, 0) * saving))
    free = [0.0] * min(slots, len(trips))
    for t in np.asarray(trips).tolist():
        heapq.heapreplace(free, free[0] + t + fixed)
    return max(free)


@functools.lru_cache(maxsize=1024)
def _walk_span(grid: tuple[tuple[str, int], ...], trips_index: str, block_trips: tuple[int, ...], order: TileOrder,
               persistent: bool, slots: int, fixed: float, saving: float) -> float:
    return _span(_walk_trips(grid, trips_index, block_trips, order), persistent, slots, fixed, saving)


def walk_span(graph: STaskGraph, order: TileOrder, persistent: bool, slots: int, fixed: float,
              saving: float = 0.0) -> float:
    """Steady iterations from the first block of ``graph``'s grid to the last one's end, the blocks walked in
    ``order`` over ``slots`` places (:func:`_span`; cached by the grid, its trips and the walk, so the plans of one
    search that price alike share one simulation). Where a causal mask makes the blocks unequal, launching each
    head's heaviest query blocks first leaves heavy blocks of the last heads in the last wave; walking panels of
    heads forwards (``TileOrder(p, "row", snake=False)``) ends on the lightest."""
    return _walk_span(tuple(graph.grid.items()), graph.loop.trips_index, graph.loop.block_trips, order, persistent,
                      slots, fixed, saving)


def _stream_k_fixup_cycles(graph: STaskGraph, vdev: VDevice) -> float:
    """Cycles one block takes to publish (or to read back) a stream-K partial sum: the fp32 accumulator through
    its share of L2, after a load's unloaded latency."""
    acc = graph.buffers[accumulator(graph)[1]]
    share = vdev.l2_bandwidth / (vdev.num_eus * vdev.clock_ghz * 1e9)
    return acc.nbytes / share + vdev.eu.seu(SEUKind.TMA).latency


# Output tiles whose accumulator takes more than WIDE_ACCUMULATOR_REGS registers a thread (256x160 and 160x256 over
# two consumer warpgroups: 160) ran 1.08-1.15x their price (mean 1.11) on one H100, tiles of 128 or fewer 0.92-1.05x
# (the LLaMA layer's GEMMs, benchmarks/results/2026-11-26-h100-big-tiles): ptxas keeps such consumers in 168
# registers, little room beside the accumulator for the wgmma loop's addresses and descriptors. The model's
# timeline does not see registers; its price of such a plan is scaled.
WIDE_ACCUMULATOR_REGS = 128
WIDE_ACCUMULATOR_FACTOR = 1.11


# A swapped GEMM tile (``swap_ab``: the tokens on the tensor core's N side) ran 0.78-1.10x the time of the best plain
# tile where the model priced it 0.56-0.99x (fifteen pairs of the layers' GEMMs at 512-65536 tokens, one H200:
# benchmarks/results/2026-12-04-h200-swap-tiles; with the SwiGLU projection at 777 tokens, 0.97x in two runs): priced
# 1.05x more, the faster of each pair is picked on twelve of the sixteen, the four others measured 0.2-1.4% apart
# (1.04: twelve, 1.03: ten, 1.06: eleven). What the timeline misses is not isolated: a swapped plan keeps no gemm in
# flight into the next step (ptxas, C7514), and its epilogue transposes the tile through shared memory.
SWAPPED_TILE_FACTOR = 1.05


def _tile_factor(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> float:
    """WIDE_ACCUMULATOR_FACTOR where a gemm's accumulator takes more than WIDE_ACCUMULATOR_REGS a thread, else 1;
    times SWAPPED_TILE_FACTOR for a swapped tile."""
    eu = vdev.eu
    regs = max((t.tile_shape[0] * t.tile_shape[1] / (max(1, wgs) * eu.warpgroup_threads)
                for t, wgs in gemm_warpgroups(plan, graph, vdev)), default=0.0)
    return ((WIDE_ACCUMULATOR_FACTOR if regs > WIDE_ACCUMULATOR_REGS else 1.0)
            * (SWAPPED_TILE_FACTOR if plan.tile.get("swap_ab") else 1.0))


# A third consumer warpgroup's steady iteration is longer than the timeline books it: the model priced FlashAttention's
# 192 x 128 tile at head dim 64 (three warpgroups) 1.3-1.5x faster a row than 128 x 128 (two) where it measured
# 1.0-1.15x (one H200, nine configs of 197-16384 tokens: benchmarks/results/2026-12-01-h200-query-tiles), which put
# ViT-L/14's 577 tokens on 192 rows (0.97x cuDNN) where 64 ran 1.04x. Stretching the three warpgroups' steady
# iteration by 1.3 prices each config's 192-row plan over its 128-row one within 3% of the measured ratio (1.2: 8%,
# 1.4: 6%); the fill and epilogue are as simulated. Two half-rate CUDA-core and SFU servers made one (the
# ranking of those nine right too) ranked the suites' attention plans worse (tests/test_modelcheck.py).
THIRD_WARPGROUP_STRETCH = 1.3


def _third_warpgroup_stretch(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> float:
    """THIRD_WARPGROUP_STRETCH where a warp-specialized plan runs a gemm on three or more warpgroups of a chip whose
    warpgroups are wgmma's (more than one warp: not an A100's or MI300X's warps of a software pipeline), else 1."""
    three = (plan.style == Style.WARP_SPECIALIZED and vdev.eu.warpgroup_warps > 1
             and any(wgs >= 3 for _, wgs in gemm_warpgroups(plan, graph, vdev)))
    return THIRD_WARPGROUP_STRETCH if three else 1.0


# Fraction of a co-resident block's time hidden under the other blocks of its SM. With 1.0 (perfect
# overlap) software-pipelined FlashAttention plans (3-4 blocks per SM) looked 1.4-1.8x faster than
# measured; on the 96 recorded H200 attention rows the model's first pick is then 6.6% behind the
# measured best, 1.2% at 0.8 (0.8% at 0.7), before sibling warpgroups' wgmmas were priced as interleaved
# (2.4% at 0.8 since: INTERLEAVED_DELAY); GEMM and Mamba2 picks do not move (tests/test_calibration.py).
CO_RESIDENT_OVERLAP = 0.8

_CP_ASYNC_ISSUE = 20.0  # cycles to issue one tile's cp.async copies where the LSU model is synchronous (Hopper)
_CP_ASYNC_BYTES = 16  # the most one thread's cp.async moves
# Cycles a warpgroup's warps spend per cp.async instruction of each thread (address math and issue) before their
# next sTask: a software pipeline issues its copies from the warps that run its wgmmas. Fitted on recorded runs:
# with 32 the model's first pick on the 12 layer GEMMs of benchmarks/results/2026-11-24-h100-layer-gemms moves
# from 8.0% to 6.7% behind the fastest (worst 28.6% to 17.1%), on the H200's 117 attention configs from 2.5% to
# 1.7%, the 2026-11-23 H100 suites' attention from 0.2% to 0.1%; the 428cb8d H100 run's attention from 6.2% to
# 6.4% (one config 59% -> 73%: its plans at every thread count).
CP_ASYNC_CYCLES = 32.0
_MBARRIER_CYCLES = 40.0  # one mbarrier try_wait/arrive round trip (model)
# How much later than alone a warpgroup's wgmma completes for each sibling warpgroup issuing the same
# wgmma beside it (the last completes with the whole role's work). With 0.5 the model ranks turns with
# every gemm in flight first among the five plans of each FlashAttention config of
# benchmarks/results/2026-11-22-h100-attention/handoff.json, as measured, except at D256 (every gemm in
# flight without turns 1.5% ahead; measured 3.5% behind). It still ranks turns with synchronous gemms
# above no turns, which measured 0.77x. On the 96 recorded H200 attention rows (no turns among them)
# the model's first pick is 2.4% behind the measured best, 1.2% with 0 (tests/test_calibration.py).
INTERLEAVED_DELAY = 0.5


def _sync_costs(plan: ExecutionPlan, graph: STaskGraph) -> dict[tuple[str, str], float]:
    """Cycles a role spends on pipeline barriers before each loop sTask that opens a pipeline span."""
    out: dict[tuple[str, str], float] = {}
    loop = {t.id for t in graph.loop_stasks}
    for p in plan.pipelines:
        if p.scope != "loop" or p.producer == p.consumer:
            continue
        for role in (p.producer, p.consumer):
            first = next((a.stask for a in plan.appends if a.role == role and a.stask in loop
                          and set(p.buffers) & (graph.stask(a.stask).read_buffers()
                                                | graph.stask(a.stask).write_buffers())),
                         None)
            if first is not None:
                out[(role, first)] = out.get((role, first), 0.0) + 2 * _MBARRIER_CYCLES
    return out


def blocks_per_eu(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice, registers: int | None = None) -> int:
    """Resident blocks per EU, limited by shared memory, registers and threads; ``registers`` a thread as
    ptxas reports them, where known (default: :func:`register_estimate`'s count)."""
    eu = vdev.eu
    if plan.style == Style.WARP_SPECIALIZED:
        return 1  # launched with __launch_bounds__(threads, 1); setmaxnreg redistributes the whole register file
    smem = max(1, shared_bytes(plan, graph))
    threads = plan.num_warps * eu.warp_size
    per_thread = register_estimate(graph, threads) if registers is None else registers
    per_thread = -(-per_thread // eu.reg_alloc_granularity) * eu.reg_alloc_granularity  # as the SM allocates them
    regs = threads * min(eu.max_regs_per_thread, per_thread)
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
    path = os.path.join(directory or _calibration_dir(), f"{cal.target}.json")
    atomic_write(path, json.dumps(cal.to_dict(), indent=1))
    return path


def load_calibration(target: str, directory: str | None = None) -> Calibration | None:
    """The user's calibration of ``target`` (``directory`` or the cache dir), else None (the model as built).

    pt-tvm ships none: on the recorded H200 runs the uncalibrated model picks the best measured plan
    more often than any fit of absolute times did (tests/test_calibration.py). A corrupt file is
    ignored with a warning."""
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
