"""Two-level search for an execution plan, priced by the cost model and gated by ``plan.verify``.

Inter-EU: candidate tiles (a template's block sizes, and the number of consumer
warpgroups) partition the output over EUs; each tile is a graph. Intra-EU: per
graph, the stage of each pipeline's readers, the pipeline depth, and the order
of sTasks in each role: list-scheduled orders under several priorities, plus
every placement of each asynchronous (tensor-core) sTask in the program order,
since where an async sTask is issued decides what it overlaps; on Hopper each of
those also with wgmmas kept in flight and with the consumer warpgroups taking
turns on the tensor cores (ping-pong). Every candidate
passes :meth:`ExecutionPlan.verify` before it is priced; the fastest predicted
plan wins. Deterministic for a given seed.
"""
from __future__ import annotations

import itertools
import random
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from .cost import Calibration, Estimate, estimate
from .graph import Placement, STaskGraph
from .hw import SEUKind, VDevice
from .plan import Append, ExecutionPlan, PlanError, Style
from .planners import (Priority, handoff_variants, in_flight_variants, is_load, overlapped, software_pipelined,
                       warp_specialized)

__all__ = ["Candidate", "SearchResult", "SearchSpace", "search_graph", "search", "NoValidPlan"]


class NoValidPlan(PlanError):
    """Every candidate broke a rule; ``violations`` holds the most common reasons."""


@dataclass(frozen=True)
class SearchSpace:
    """What the intra-EU search enumerates (defaults cover the paper's space for one loop)."""

    consumer_wgs: tuple[int, ...] = (1, 2)
    depths: tuple[int, ...] = (1, 2, 3, 4)
    max_stage: int = 1
    random_orders: int = 4


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
            e = c.estimate
            lines.append(f"  #{i + 1} {c.seconds * 1e6:9.1f} us{tf}  {e.cycles_per_iteration:.0f} cyc/iter, "
                         f"bottleneck {e.bottleneck()} {e.busy.get(e.bottleneck(), 0):.0%}  {c.note}")
        b = self.best.estimate
        lines.append(f"winner: {self.best.note}; its steady state keeps "
                     + ", ".join(f"{k} {v:.0%}" for k, v in sorted(b.busy.items(), key=lambda kv: -kv[1]))
                     + " busy")
        return "\n".join(lines)


def _async_moves(order: Sequence[Append], graph: STaskGraph, vdev: VDevice) -> Iterable[list[Append]]:
    """Each asynchronous compute sTask moved to every other position of ``order``."""
    for i, a in enumerate(order):
        seu = vdev.eu.seu(a.seu)
        if not seu.is_async or a.seu in (SEUKind.TMA, SEUKind.LSU):
            continue
        rest = [*order[:i], *order[i + 1:]]
        for j in range(len(rest) + 1):
            if j != i:
                yield [*rest[:j], a, *rest[j:]]


def _reordered(plan: ExecutionPlan, role: str, graph: STaskGraph, order: list[Append]) -> ExecutionPlan:
    loop = {t.id for t in graph.loop_stasks}
    it = iter(order)
    steps = tuple(next(it) if isinstance(s, Append) and s.role == role and s.stask in loop else s for s in plan.steps)
    return ExecutionPlan(plan.graph, plan.target, plan.style, plan.roles, steps, plan.pipelines, plan.num_stages,
                         plan.tile)


_RESOURCE_RULES = {"shared_memory", "registers", "threads"}


def _resource_bound(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> bool:
    """Whether the plan breaks a limit that no reordering can fix."""
    return any(v.rule in _RESOURCE_RULES for v in plan.violations(graph, vdev))


def _base_plans(graph: STaskGraph, vdev: VDevice, space: SearchSpace, rng: random.Random,
                tile: Mapping[str, Any]) -> Iterable[tuple[ExecutionPlan | None, str]]:
    priorities: list[Any] = list(Priority)
    ids = [t.id for t in graph.loop_stasks]
    for _ in range(space.random_orders):
        priorities.append({sid: rng.random() for sid in ids})

    def pname(p: Any) -> str:
        return p.value if isinstance(p, Priority) else "random"

    if "warp_specialization" in vdev.features:
        loaded = sorted({t.writes[0].buffer for t in graph.loop_stasks if is_load(t, graph)})
        for wgs, depth in itertools.product(space.consumer_wgs, space.depths):
            probe = warp_specialized(graph, vdev, consumer_wgs=wgs, depth=depth, pipeline_stage={},
                                     priority=Priority.PROGRAM, tile=tile)
            if probe is not None and _resource_bound(probe, graph, vdev):
                yield probe, f"warp-specialized {wgs} consumer WG, depth {depth}"
                continue  # no order or stage choice fixes shared memory, registers or threads
            for stages in itertools.product(range(space.max_stage + 1), repeat=len(loaded)):
                ps = dict(zip(loaded, stages))
                for pr in priorities:
                    note = (f"warp-specialized {wgs} consumer WG, depth {depth}, "
                            f"stages {ps or '{}'}, {pname(pr)} order")
                    yield warp_specialized(graph, vdev, consumer_wgs=wgs, depth=depth, pipeline_stage=ps,
                                           priority=pr, tile=tile), note
    if "software_pipeline" in vdev.features:  # on Hopper too: no producer warp, several blocks per SM
        for n in space.depths:
            probe = software_pipelined(graph, vdev, num_stages=n, threads=graph.threads, priority=Priority.PROGRAM,
                                       tile=tile)
            if probe is not None and _resource_bound(probe, graph, vdev):
                yield probe, f"software-pipelined num_stages {n}"
                continue
            for pr in priorities:
                yield (software_pipelined(graph, vdev, num_stages=n, threads=graph.threads, priority=pr, tile=tile),
                       f"software-pipelined num_stages {n}, {pname(pr)} order")


def search_graph(graph: STaskGraph, vdev: VDevice, *, space: SearchSpace = SearchSpace(), seed: int = 0,
                 calibration: Calibration | None = None, tile: Mapping[str, Any] | None = None,
                 stats: Counter | None = None) -> list[Candidate]:
    """Every verified candidate plan for one graph, fastest predicted first."""
    rng = random.Random(seed)
    stats = stats if stats is not None else Counter()
    seen: set = set()
    out: list[Candidate] = []

    def consider(plan: ExecutionPlan, note: str) -> bool:
        """Price the plan if it is new and valid; whether it was."""
        key = (plan.roles, plan.steps, plan.pipelines)
        if key in seen:
            return False
        seen.add(key)
        stats["considered"] += 1
        violations = plan.violations(graph, vdev)
        if violations:
            for v in {v.rule for v in violations}:
                stats["rejected:" + v] += 1
            return False
        out.append(Candidate(plan, estimate(plan, graph, vdev, calibration), graph, note))
        return True

    bases = [(p, n) for p, n in _base_plans(graph, vdev, space, rng, tile or {}) if p is not None]
    for plan, note in bases:
        consider(plan, note)
    # local search: re-place asynchronous sTasks in the best few base orders of each configuration
    best_by_config: dict[tuple, Candidate] = {}
    for c in out:
        cfg = _config(c.plan)
        if cfg not in best_by_config or c.seconds < best_by_config[cfg].seconds:
            best_by_config[cfg] = c
    for c in list(best_by_config.values()):
        keep_in_flight = c.plan.style == Style.WARP_SPECIALIZED  # its roles emit explicit wgmma waits
        for role in c.plan.roles:
            order = c.plan.program(role.name, graph, Placement.LOOP)
            for moved in _async_moves(order, graph, vdev):
                plan = _reordered(c.plan, role.name, graph, moved)
                note = c.note.rsplit(",", 1)[0] + ", async sTask moved"
                if consider(plan, note) and keep_in_flight:  # and with wgmmas kept in flight, turns taken
                    for variant in in_flight_variants(plan, graph):
                        consider(variant, f"{note}, {next(iter(variant.in_flight()))} in flight")
    # the best few plans of each configuration with every gemm in flight, then with turns taken between
    # their warpgroups on the tensor cores (ping-pong)
    steps = (("every gemm in flight", lambda p: filter(None, (overlapped(p, graph, r.name) for r in p.roles))),
             ("warpgroups take turns", lambda p: handoff_variants(p, graph, vdev)))
    for label, variants in steps:
        by_config: dict[tuple, list[Candidate]] = {}
        for c in out:
            if c.plan.style == Style.WARP_SPECIALIZED:
                by_config.setdefault(_config(c.plan), []).append(c)
        for group in by_config.values():
            for c in sorted(group, key=lambda c: (c.seconds, c.note))[:_SYNC_VARIANTS]:
                for v in variants(c.plan):
                    turns_added_waits = v.handoffs and len(v.in_flight()) > len(c.plan.in_flight())
                    consider(v, f"{c.note}, {label}" + (", every gemm in flight" if turns_added_waits else ""))
    out.sort(key=lambda c: (c.seconds, c.note))
    return out


# Plans per configuration tried with every gemm in flight, then with turns: on FlashAttention D64/128/256
# and causal, the best 4 find the same winner as all of them do, in 30-40% less time.
_SYNC_VARIANTS = 4


def _config(plan: ExecutionPlan) -> tuple:
    """Roles, pipelines and stages: a plan's configuration, everything but its order and waits."""
    return (plan.roles, plan.pipelines, tuple(a.stage for a in plan.appends))


def search(graphs: Sequence[STaskGraph], vdev: VDevice, *, space: SearchSpace = SearchSpace(), seed: int = 0,
           calibration: Calibration | None = None, tiles: Sequence[Mapping[str, Any]] | None = None,
           flops: float | None = None) -> SearchResult:
    """Search over candidate graphs (one per tile: the inter-EU level) and their plans (the intra-EU level).

    Raises :class:`NoValidPlan` when no candidate passes verification.
    """
    t0 = time.perf_counter()
    stats: Counter = Counter()
    ranked: list[Candidate] = []
    for i, graph in enumerate(graphs):
        ranked += search_graph(graph, vdev, space=space, seed=seed, calibration=calibration,
                               tile=(tiles[i] if tiles else None), stats=stats)
    ranked.sort(key=lambda c: (c.seconds, c.note))
    rejected = {k.split(":", 1)[1]: v for k, v in stats.items() if k.startswith("rejected:")}
    if not ranked:
        from .plan import Violation

        raise NoValidPlan([Violation(rule, f"{n} candidates broke it") for rule, n in
                           sorted(rejected.items(), key=lambda kv: -kv[1])])
    return SearchResult(best=ranked[0], ranked=tuple(ranked), considered=stats["considered"], rejected=rejected,
                        seconds=time.perf_counter() - t0, flops=flops)
