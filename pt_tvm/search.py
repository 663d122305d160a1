"""Two-level search for an execution plan, priced by the cost model and gated by :func:`pt_tvm.verify.verify`.

Inter-EU (:func:`search_tiles`): candidate tiles partition the output over EUs; each
tile is one sTask-graph. Intra-EU (:func:`search_graph`): per graph, the plans of
:mod:`pt_tvm.space` (consumer warpgroups, pipeline depth, the stage of each
pipeline's readers, list-scheduled orders under several priorities), then a local
search around the best of each configuration: every placement of each asynchronous
(tensor-core) sTask in the program order, since where an async sTask is issued
decides what it overlaps, and on Hopper each of those with wgmmas kept in flight and
with the consumer warpgroups taking turns on the tensor cores (ping-pong). Every
candidate passes verification before it is priced; the fastest predicted plan wins.
Deterministic for a given seed, and alike whether the tiles' graphs are searched one after
another or side by side in worker processes (``jobs``, :func:`search_jobs`).
"""
from __future__ import annotations

import concurrent.futures
import itertools
import math
import multiprocessing
import os
import random
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from .cache import PlanCache, model_fingerprint, plan_key
from .cost import Calibration, Estimate, estimate, l2_bound, least_dram_order, simulated_iterations
from .graph import STaskGraph, symbols_text
from .hw import VDevice
from .plan import ExecutionPlan, PlanError, Style, Violation
from .space import (
    SearchSpace,
    async_moves,
    base_plans,
    carried_variant,
    handoff_variants,
    in_flight_variants,
    is_load,
    multicast_variants,
    overlapped,
    producer_streams,
    reordered,
    row_split_variant,
    stream_k_walks,
    tile_orders,
    tile_walks,
)
from .verify import deadlock_iterations, violations

__all__ = ["Candidate", "SearchResult", "SearchSpace", "NoValidPlan", "rank_key", "offers_depth", "ranked",
           "search_graph", "search", "search_jobs", "search_tiles", "schedule_graph", "holds_walked", "walked_twins",
           "thread_twins", "JOBS_ENV"]

JOBS_ENV = "PT_TVM_SEARCH_JOBS"  # worker processes for the tiles' searches where a call names none (default 1)


class NoValidPlan(PlanError):
    """Every candidate broke a rule; ``violations`` holds the rules, most broken first, in one line."""

    def __init__(self, violations: Sequence[Violation], considered: int = 0):
        reasons = "; ".join(f"{v.rule}: {v.message}" for v in violations)
        super().__init__(violations, f"no valid plan among {considered} candidates ({reasons})" if considered
                         else f"no valid plan: {reasons}")


@dataclass(frozen=True)
class Candidate:
    plan: ExecutionPlan
    estimate: Estimate
    graph: STaskGraph
    note: str = ""

    @property
    def seconds(self) -> float:
        return self.estimate.seconds


@dataclass(frozen=True)
class SearchResult:
    """The winner, the runners-up, and how the search got there."""

    best: Candidate
    ranked: tuple[Candidate, ...]
    considered: int
    rejected: Mapping[str, int]
    seconds: float
    flops: float | None = None

    def explain(self, top: int = 5) -> str:
        lines = [f"searched {self.considered} candidate plans in {self.seconds:.2f} s "
                 f"({sum(self.rejected.values())} rejected by verify: "
                 + ", ".join(f"{k} {v}" for k, v in sorted(self.rejected.items())) + ")"]
        for i, c in enumerate(self.ranked[:top]):
            tf = f", {self.flops / c.seconds / 1e12:.0f} TFLOP/s" if self.flops else ""
            tf += f", {c.estimate.dram_bytes / 1e9:.3g} GB DRAM" if c.estimate.dram_bytes else ""
            e = c.estimate
            tile = f"  [{' '.join(f'{k}={v}' for k, v in c.plan.tile.items())}]" if c.plan.tile else ""
            lines.append(f"  #{i + 1} {c.seconds * 1e6:9.1f} us{tf}  {e.cycles_per_iteration:.0f} cyc/iter, "
                         f"bottleneck {e.bottleneck()} {e.busy.get(e.bottleneck(), 0):.0%}  {c.note}{tile}")
        if self.best.graph.symbols:
            lines.append(f"symbolic sizes priced at {symbols_text(self.best.graph.symbols)} (the times are for "
                         f"those sizes; pass hints= for the sizes you run)")
        b = self.best.estimate
        lines.append(f"winner: {self.best.note}; its steady state keeps "
                     + ", ".join(f"{k} {v:.0%}" for k, v in sorted(b.busy.items(), key=lambda kv: -kv[1]))
                     + " busy")
        return "\n".join(lines)


# Plans per configuration tried with every gemm in flight, then with turns: on FlashAttention D64/128/256
# and causal, the best 4 find the same winner as all of them do, in 30-40% less time.
_SYNC_VARIANTS = 4
_SYNC_STEPS: tuple[tuple[str, Callable], ...] = (
    ("every gemm in flight", lambda p, graph, vdev: filter(None, (overlapped(p, graph, r.name) for r in p.roles))),
    ("warpgroups take turns", handoff_variants),
)


_WALK_VARIANTS = 2  # plans per graph tried in every tile order, and persistently
# launched plans a walked twin takes from its twin's refinement (_GraphSearch.adopt): on the attention-core, gemm and
# mamba suites and an eleventh of the decode grid (H200 model) the tuner's candidates were those of each twin's own
# refinement, FlashAttention pricing 25% fewer plans (docs/NOTES-parity.md, "The search's time since o_shared")
_TWIN_PLANS = 16
_ROW_SPLIT_VARIANTS = 4  # plans per graph tried with their gemm tiles split by rows (SearchSpace.row_split)
_CARRY_VARIANTS = 4  # plans per graph tried with their loop gemms carried a step (SearchSpace.carry_gemms)
_MULTICAST_VARIANTS = 4  # plans per graph tried in 2-CTA clusters (SearchSpace.multicast)


def _configuration(plan: ExecutionPlan) -> tuple:
    """Roles, pipelines and stages: a plan's configuration, everything but its order and waits."""
    return (plan.roles, plan.pipelines, tuple(a.stage for a in plan.appends))


def search_graph(graph: STaskGraph, vdev: VDevice, *, space: SearchSpace = SearchSpace(), seed: int = 0,
                 calibration: Calibration | None = None, tile: Mapping[str, Any] | None = None,
                 stats: Counter | None = None) -> list[Candidate]:
    """Every verified candidate plan for one graph (the intra-EU level), fastest predicted first."""
    state = _GraphSearch(graph, vdev, space, calibration, stats if stats is not None else Counter())
    state.base(seed, tile)
    return state.refine(state.best_base())


@dataclass
class _GraphSearch:
    """One graph's search in two phases: its base plans (:meth:`base`), then, once the best base price of every
    tile is known, the refinement of the configurations priced near it (:meth:`refine`); between them it travels
    to a worker process and back."""

    graph: STaskGraph
    vdev: VDevice
    space: SearchSpace
    calibration: Calibration | None
    stats: Counter
    seen: set = field(default_factory=set)
    out: list = field(default_factory=list)
    broken: dict = field(default_factory=dict)  # rule -> the message of the first plan that broke it

    def consider(self, plan: ExecutionPlan, note: str) -> bool:
        """Price the plan if it is new and valid; whether it was."""
        key = (plan.roles, plan.steps, plan.pipelines, plan.tile_order, plan.persistent, plan.row_split,
               plan.stream_k, plan.carry_gemms, plan.multicast)
        if key in self.seen:
            return False
        self.seen.add(key)
        self.stats["considered"] += 1
        graph, vdev = self.graph, self.vdev
        # the price simulates the plan over at least the deadlock rule's iterations, and so applies that rule
        found = violations(plan, graph, vdev, deadlock=deadlock_iterations(plan, graph) > simulated_iterations(graph))
        if not found:
            try:
                price = estimate(plan, graph, vdev, self.calibration)
            except PlanError as e:
                found = list(e.violations)
        if found:
            for v in {v.rule for v in found}:
                self.stats["rejected:" + v] += 1
            for v in found:
                self.broken.setdefault(v.rule, v.message)
            return False
        self.out.append(Candidate(plan, price, graph, note))
        return True

    def base(self, seed: int, tile: Mapping[str, Any] | None) -> "_GraphSearch":
        """Every base plan of the space, its output tiles in the order that moves the least through DRAM: where
        DRAM binds in launch order, every configuration would price alike there and the best few would be picked
        blindly."""
        graph, vdev, space = self.graph, self.vdev, self.space
        order = least_dram_order(graph, vdev, tile_orders(graph, vdev))
        if l2_bound(graph, vdev):
            space = replace(space, depths=tuple(d for d in sorted({*space.depths, *space.l2_bound_depths})
                                                if offers_depth(graph, vdev, d, space)))
        for plan, note in base_plans(graph, vdev, space, random.Random(seed), tile or {}):
            if plan is not None:
                self.consider(replace(plan, tile_order=order), note + ("" if order.is_launch_order else
                                                                        f", tiles in {order.describe()}"))
        return self

    def best_base(self) -> dict[Style, float]:
        """The best price of each emission style's plans so far (after :meth:`base`, of its base plans)."""
        return _best_of({c.plan.style: c.seconds} for c in self.out)

    def refine(self, bound: Mapping[Style, float]) -> list[Candidate]:
        """The local search and the variants of the best plans, for the configurations priced within
        ``space.local_within`` of ``bound``, the best base price of their emission style over every tile searched
        (a warp-specialized base plan waits for each wgmma and gains most from the refinement); every candidate,
        best first."""
        graph, vdev, space, out, consider = self.graph, self.vdev, self.space, self.out, self.consider
        near = _near(space, bound)
        if not any(near(c) for c in out):
            return ranked(out)
        # local search: re-place asynchronous sTasks in the best base order of each configuration near the best
        best_by_config: dict[tuple, Candidate] = {}
        for c in out:
            cfg = _configuration(c.plan)
            if cfg not in best_by_config or c.seconds < best_by_config[cfg].seconds:
                best_by_config[cfg] = c
        for c in [c for c in best_by_config.values() if near(c)]:
            keep_in_flight = c.plan.style == Style.WARP_SPECIALIZED  # its roles emit explicit wgmma waits
            for role in c.plan.roles:
                for moved in async_moves(c.plan, role.name, graph, vdev):
                    plan = reordered(c.plan, role.name, graph, moved)
                    note = c.note.rsplit(",", 1)[0] + ", async sTask moved"
                    if consider(plan, note) and keep_in_flight:
                        for variant in in_flight_variants(plan, graph):
                            consider(variant, f"{note}, {next(iter(variant.in_flight()))} in flight")
        # the best few plans of each configuration with every gemm in flight, then with turns taken between
        # their warpgroups on the tensor cores (ping-pong)
        for label, variants in _SYNC_STEPS:
            by_config: dict[tuple, list[Candidate]] = {}
            for c in out:
                if c.plan.style == Style.WARP_SPECIALIZED:
                    by_config.setdefault(_configuration(c.plan), []).append(c)
            for group in by_config.values():
                for c in sorted(group, key=lambda c: (c.seconds, c.note))[:_SYNC_VARIANTS]:
                    for v in variants(c.plan, graph, vdev):
                        turns_added_waits = v.handoffs and len(v.in_flight()) > len(c.plan.in_flight())
                        consider(v, f"{c.note}, {label}" + (", every gemm in flight" if turns_added_waits else ""))
        return self._best_variants()

    def adopt(self, bound: Mapping[Style, float], twin: Sequence[Candidate]) -> list[Candidate]:
        """:meth:`refine` for a walked twin (its tile's template ``walked`` values set, :func:`walked_twins`): instead
        of its own local search and sync variants, the best launched plans of its twin's refinement (the same loop;
        only the epilogue's buffer differs, so the same plans, re-verified and re-priced here), then the variants of
        the best plans; every candidate, best first."""
        if not any(map(_near(self.space, bound), self.out)):
            return ranked(self.out)
        tile = dict(self.out[0].plan.tile)  # a base plan's: this twin's tile
        for c in [c for c in twin if not c.plan.persistent][:_TWIN_PLANS]:
            self.consider(replace(c.plan, tile=tile), c.note)
        return self._best_variants()

    def _best_variants(self) -> list[Candidate]:
        """The variants of the best plans so far (tile walks, stream-K, row splits, carried gemms, clusters), added;
        every candidate, best first."""
        graph, vdev, space, out, consider = self.graph, self.vdev, self.space, self.out, self.consider
        # the best few plans with their output tiles walked in other orders, and persistently (inter-EU: the
        # order decides what L2 serves the tiles resident at once, which prices every plan of the graph alike)
        for c in ranked(out)[:_WALK_VARIANTS]:
            for v in tile_walks(c.plan, graph, vdev):
                note = c.note.split(", tiles in ")[0]
                consider(v, note + ("" if v.tile_order.is_launch_order else f", tiles in {v.tile_order.describe()}")
                         + (", persistent" if v.persistent else ""))
        # on request, the best few plans that run their loop unskewed as stream-K splits (the model prices the slower
        # of a head's block and a tail's, cost.estimate)
        if space.stream_k:
            for c, splits in _variants(ranked(out), stream_k_walks, graph, vdev, _WALK_VARIANTS):
                for v in splits:
                    walk = "" if v.tile_order.is_launch_order else f", tiles in {v.tile_order.describe()}"
                    consider(v, c.note.split(", tiles in ")[0] + walk + ", stream-K")
        # on request, the best few of the plans whose gemm tiles a split over the warpgroups by rows widens (wider
        # wgmmas: fewer reads of shared memory, cost.shared_port_cycles), so split; the best few of all may have none
        # to split (one consumer warpgroup)
        if space.row_split:
            for c, v in _variants(ranked(out), row_split_variant, graph, vdev, _ROW_SPLIT_VARIANTS):
                consider(v, c.note + ", gemm rows split over warpgroups")
        # the best few of the plans that may keep their loop's gemms in flight into the next step (the tensor cores
        # need not idle while a warpgroup waits for its step's wgmmas before releasing the step's stage), so kept
        if space.carry_gemms:
            for c, v in _variants(ranked(out), carried_variant, graph, vdev, _CARRY_VARIANTS):
                consider(v, c.note + ", gemms carried into the next step")
        # on request, the best few persistent plans in 2-CTA clusters whose loads shared along a launch index are
        # multicast (halving their L2 reads)
        if space.multicast:
            for c, variants in _variants(ranked(out), multicast_variants, graph, vdev, _MULTICAST_VARIANTS):
                for v in variants:
                    consider(v, c.note + f", 2-CTA clusters along {v.multicast}")
        return ranked(out)


def _near(space: SearchSpace, bound: Mapping[Style, float]) -> Callable[[Candidate], bool]:
    """Whether a candidate is priced within ``space.local_within`` of ``bound``, its emission style's best."""
    return lambda c: c.seconds <= space.local_within * bound.get(c.plan.style, math.inf)


def _best_of(bests: Iterable[Mapping[Style, float]]) -> dict[Style, float]:
    """Per emission style, the best of these prices (of candidates, or of graphs' best)."""
    out: dict[Style, float] = {}
    for best in bests:
        for style, seconds in best.items():
            out[style] = min(out.get(style, math.inf), seconds)
    return out


def _variants(cands: Sequence[Candidate], variant: Callable, graph: STaskGraph, vdev: VDevice,
              count: int) -> Iterator[tuple[Candidate, Any]]:
    """(candidate, its variants) for the first ``count`` candidates that have any (``variant`` gives None or
    nothing where a candidate has none)."""
    pairs = ((c, variant(c.plan, graph, vdev)) for c in cands)
    return itertools.islice(((c, v) for c, v in pairs if v), count)


def offers_depth(graph: STaskGraph, vdev: VDevice, depth: int, space: SearchSpace = SearchSpace()) -> bool:
    """Whether the search tries ``depth`` stages for ``graph``'s loop: not where the loop is L2-bound and
    ``depth - 1`` stages of its loads exceed :attr:`SearchSpace.l2_bound_inflight`."""
    step = sum(t.bytes for t in graph.loop_stasks if is_load(t, graph))
    return depth <= 2 or (depth - 1) * step <= space.l2_bound_inflight or not l2_bound(graph, vdev)


def rank_key(est: Estimate, plan: ExecutionPlan, note: str = "", fastest: float | None = None) -> tuple:
    """Fastest predicted first (in steps of :data:`PRICE_TIE` from ``fastest``, the best price among the plans
    ranked, where given); among equals, the one moving less through DRAM (the safer margin where the
    model's DRAM time is close to what binds), then, where DRAM or L2 binds, the deeper pipeline (more loads in
    flight hide the latency that a throughput-bound price leaves out), elsewhere the shallower, then the one
    carrying its gemms into the next step, then the one without clusters, then the faster, then by note.

    Memory-bound Mamba2 plans tie exactly at every depth; by note alone the single-stage one came first and
    measured 1.04-1.28x slower than the deepest on an H100 (benchmarks/results/2026-11-23-h100-suites); so did
    the L2-bound GEMMs' shallower ties (128x128 tiles 4 deep against 5, 1.05x; the search caps their depth by the
    bytes in flight, :attr:`SearchSpace.l2_bound_inflight`). Where compute binds, a deeper tie of FlashAttention
    (d64) measured 1.09x slower. Prices within PRICE_TIE of the fastest are equal: the model resolves no finer
    (the fused SwiGLU's 4 stages were priced 0.02% ahead of its 3, which measured 5% faster). The model prices
    carried gemms as the same plan's waiting ones wherever L2 or TMA binds the loop (every GEMM of the suites),
    where on one H200 the persistent picks carried measured 1.015-1.032x their waiting twins in one process, and
    block_K 32 plans 1.06-1.18x (benchmarks/results/2026-11-29-h200-carry). Where the SM's TMA rate binds the loads,
    the model prices a plan in 2-CTA clusters as the same plan alone (the shared load's L2 reads halve, its bytes
    into each SM do not); their cluster twins ran 0.85-1.03x the speed of GEMM plans alone on one H200, faster on
    one of 17 pairs (benchmarks/results/2026-11-29-h200-x2-multicast)."""
    price = est.seconds if not fastest else math.floor(math.log(est.seconds / fastest) / math.log1p(PRICE_TIE))
    deeper = est.dram_bound or est.l2_bound
    return (price, est.dram_bytes, -plan.num_stages if deeper else plan.num_stages, not plan.carry_gemms,
            bool(plan.multicast), est.seconds, note)


PRICE_TIE = 0.001  # relative difference under which two predicted times rank as equal


def ranked(cands: Sequence[Candidate]) -> list[Candidate]:
    """``cands`` best first (:func:`rank_key`, ties counted from the fastest of them)."""
    fastest = min((c.seconds for c in cands), default=None)
    return sorted(cands, key=lambda c: rank_key(c.estimate, c.plan, c.note, fastest))


def search_tiles(tiles: Sequence[Mapping[str, Any]], graph_of: Callable[[Mapping[str, Any]], STaskGraph],
                 vdev: VDevice, *, space: SearchSpace = SearchSpace(), seed: int = 0,
                 calibration: Calibration | None = None, flops: float | None = None,
                 jobs: int | None = None, walked: Mapping[str, Any] | None = None) -> SearchResult:
    """Both levels: every candidate tile (inter-EU; ``graph_of`` gives its sTask-graph), then its plans
    (``walked``: :func:`search`). On a chip that warp-specializes, a tile that an earlier one equals but for its
    threads (:func:`thread_twins`; :attr:`pt_tvm.templates.Template.pipelines_take_threads`) is searched only where a
    producer warp cannot stream its loads: a warp-specialized plan sets its warps itself, so its plans would be the
    earlier tile's again, and its software pipelines there were priced alike (the conv's at 4352 channels; one of
    them ranked first on the H200 model by the simulated sums' last bits, docs/NOTES-shapes.md).

    Raises :class:`NoValidPlan` when no candidate passes verification.
    """
    twins, graphs = thread_twins(tiles), {}
    for i, tile in enumerate(tiles):
        if i in twins and "warp_specialization" in vdev.features and producer_streams(graphs[twins[i]]):
            continue
        graphs[i] = graph_of(tile)
    return search(list(graphs.values()), vdev, space=space, seed=seed, calibration=calibration,
                  tiles=[tiles[i] for i in graphs], flops=flops, jobs=jobs, walked=walked)


def search_jobs(jobs: int | None, graphs: int) -> int:
    """Worker processes for ``graphs`` tiles' searches: ``jobs``, else ``$PT_TVM_SEARCH_JOBS`` (0: one per CPU),
    else 1 (in this process); never more than the graphs. A worker starts in about 5 s (it imports TileLang),
    so it pays only where a search takes longer than that on one core: the search-time configs took 0.8-8.6 s there
    (benchmarks/results/2026-12-02-search-time; FlashAttention's took 20-60 s when the workers came)."""
    if jobs is None:
        text = os.environ.get(JOBS_ENV, "1")
        try:
            jobs = int(text)
        except ValueError:
            raise ValueError(f"{JOBS_ENV}={text!r}: want a number of worker processes (0: one per CPU)") from None
    if jobs < 0:
        raise ValueError(f"search jobs must be >= 0 (0: one per CPU), got {jobs}")
    return max(1, min(jobs or os.cpu_count() or 1, graphs))


def _base_job(job: tuple) -> _GraphSearch:
    """:meth:`_GraphSearch.base` in a worker process."""
    state, seed, tile = job
    return state.base(seed, tile)


def _refine_job(job: tuple) -> tuple[list[Candidate], Counter, dict]:
    """:meth:`_GraphSearch.refine` in a worker process: the candidates, the counts and the rules' first messages."""
    state, bound = job
    return state.refine(bound), state.stats, state.broken


def holds_walked(tile: Mapping[str, Any], walked: Mapping[str, Any]) -> bool:
    """Whether ``tile`` holds every one of a template's ``walked`` values (``Template.walked``: its launched plans
    are not ranked, and it takes its twin's refined plans, :func:`walked_twins`)."""
    return all(tile.get(k) == v for k, v in walked.items())


def thread_twins(tiles: Sequence[Mapping[str, Any]] | None) -> dict[int, int]:
    """{i: j}: tile ``i`` equals the earlier tile ``j`` in every value but ``threads`` (``j`` the first such)."""
    first: dict[tuple, int] = {}
    twins = {}
    for i, t in enumerate(tiles or ()):
        key = tuple(sorted((k, v) for k, v in t.items() if k != "threads"))
        if key in first:
            twins[i] = first[key]
        first.setdefault(key, i)
    return twins


def walked_twins(tiles: Sequence[Mapping[str, Any]] | None, walked: Mapping[str, Any]) -> dict[int, int]:
    """{i: j}: tile ``i`` holds every ``walked`` value (:func:`holds_walked`) and tile ``j`` is the same tile with
    none of them, its twin."""
    if not tiles or not walked:
        return {}
    rest = lambda t: tuple(sorted((k, v) for k, v in t.items() if k not in walked))  # noqa: E731
    plain = {rest(t): j for j, t in enumerate(tiles) if all(t.get(k) != v for k, v in walked.items())}
    return {i: plain[rest(t)] for i, t in enumerate(tiles) if holds_walked(t, walked) and rest(t) in plain}


def search(graphs: Sequence[STaskGraph], vdev: VDevice, *, space: SearchSpace = SearchSpace(), seed: int = 0,
           calibration: Calibration | None = None, tiles: Sequence[Mapping[str, Any]] | None = None,
           flops: float | None = None, jobs: int | None = None, walked: Mapping[str, Any] | None = None
           ) -> SearchResult:
    """The plans of every graph (one per tile, ``tiles[i]`` recorded in graph ``i``'s plans), best first: every
    graph's base plans, then the refinement of those priced near the best of their emission style
    (:meth:`_GraphSearch.refine`; a tile holding the ``walked`` values takes its twin's refined plans instead,
    :meth:`_GraphSearch.adopt`); the graphs searched in ``jobs`` worker processes (:func:`search_jobs`), the same
    plans either way.

    Raises :class:`NoValidPlan` when no candidate passes verification.
    """
    t0 = time.perf_counter()
    states = [_GraphSearch(graph, vdev, space, calibration, Counter()) for graph in graphs]
    bases = [(state, seed, tiles[i] if tiles else None) for i, state in enumerate(states)]
    twins = walked_twins(tiles, walked or {})
    own = [i for i in range(len(graphs)) if i not in twins]
    workers = search_jobs(jobs, len(graphs))
    if workers > 1:  # spawned, not forked: the parent holds TVM's threads
        with concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            states = list(pool.map(_base_job, bases))
            bound = _best_of(state.best_base() for state in states)
            done = list(pool.map(_refine_job, [(states[i], bound) for i in own]))
    else:
        states = [_base_job(job) for job in bases]
        bound = _best_of(state.best_base() for state in states)
        done = [_refine_job((states[i], bound)) for i in own]
    refined: list = [None] * len(graphs)
    for i, (cands, counts, broken) in zip(own, done):
        # the caller's graph, not a worker's copy
        refined[i] = ([replace(c, graph=graphs[i]) for c in cands], counts, broken)
    for i, j in twins.items():  # each twin's own refinement done, in this process (a few plans each)
        cands = states[i].adopt(bound, refined[j][0])
        refined[i] = ([replace(c, graph=graphs[i]) for c in cands], states[i].stats, states[i].broken)
    found: list[Candidate] = [c for cands, _, _ in refined for c in cands]
    stats: Counter = sum((counts for _, counts, _ in refined), Counter())
    first = {rule: message for _, _, broken in reversed(refined) for rule, message in broken.items()}
    best_first = ranked(found)
    rejected = {k.split(":", 1)[1]: v for k, v in stats.items() if k.startswith("rejected:")}
    if not stats["considered"]:
        raise NoValidPlan([Violation("space", f"{vdev.name} offers no emission style pt-tvm can plan for (its "
                                     f"features name neither warp_specialization nor software_pipeline)")])
    if not best_first:
        raise NoValidPlan([Violation(rule, f"{n} broke it, the first: {first[rule]}") for rule, n in
                           sorted(rejected.items(), key=lambda kv: -kv[1])], stats["considered"])
    return SearchResult(best=best_first[0], ranked=tuple(best_first), considered=stats["considered"], rejected=rejected,
                        seconds=time.perf_counter() - t0, flops=flops)


def schedule_graph(graph: STaskGraph, vdev: VDevice, *, space: SearchSpace = SearchSpace(), seed: int = 0,
                   calibration: Calibration | None = None, cache: PlanCache | None = None) -> SearchResult:
    """The intra-EU search for one graph (its tile fixed), through ``cache`` when given: a hit skips the
    search and returns the cached plan, re-verified and re-priced; a stale entry is searched again."""
    key = plan_key(graph, vdev, {"space": space, "seed": seed, "calibration": calibration,
                                 "model": model_fingerprint()}) if cache is not None else None
    hit = cache.get(key) if key is not None else None
    if hit is not None and not violations(hit, graph, vdev):
        best = Candidate(hit, estimate(hit, graph, vdev, calibration), graph, "from the plan cache")
        return SearchResult(best, (best,), 0, {}, 0.0)
    result = search([graph], vdev, space=space, seed=seed, calibration=calibration)
    if key is not None:
        cache.put(key, result.best.plan, {"note": result.best.note})
    return result
