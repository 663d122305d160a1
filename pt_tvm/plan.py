"""Execution plans: the paper's Append / Wait / Propagate primitives and the checks every plan passes.

An :class:`ExecutionPlan` is a sequence of primitives over one sTask-graph:
``Append(stask, role, seu, stage)`` puts an sTask at the end of a role's
program (a role is a range of warps, the paper's EU-level partition) on one of
its sEUs, ``stage`` iterations behind the loop's current iteration; ``Wait``
makes an sTask wait for the completion of others (cross-role waits become
pipeline barriers; a same-role Wait on a tensor-core sTask keeps its wgmma in
flight until then); ``Handoff`` makes a role's warpgroups take turns issuing a
span of its program (named barriers: FlashAttention-3's ping-pong). :class:`Pipeline` s multi-version shared buffers between a
producer role and its consumers. :func:`Propagate` is in :mod:`pt_tvm.propagate`.

:meth:`ExecutionPlan.verify` is the gate in front of TileLang: it rejects a
plan that breaks a dependence (loop-carried ones and those through register
fragments across stage offsets included) or exceeds the EU's shared memory,
registers or threads, naming the limit and by how much.
"""
from __future__ import annotations

import enum
import functools
import json
import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Mapping, Sequence

from .graph import DepKind, Edge, OpKind, Placement, STask, STaskGraph
from .hw import SEUKind, VDevice

__all__ = [
    "Style",
    "Role",
    "Append",
    "Wait",
    "Handoff",
    "Pipeline",
    "ExecutionPlan",
    "PlanError",
    "Violation",
    "register_estimate",
    "wgmma_waits",
    "base_stage",
]


class PlanError(ValueError):
    """A plan that must not reach TileLang; ``violations`` lists every reason."""

    def __init__(self, violations: Sequence["Violation"]):
        self.violations = tuple(violations)
        super().__init__("plan rejected:\n" + "\n".join(f"  - {v}" for v in self.violations))


@dataclass(frozen=True)
class Violation:
    """One broken rule: ``rule`` is a short key (``dependence``, ``shared_memory``, ...)."""

    rule: str
    message: str

    def __str__(self) -> str:
        return f"[{self.rule}] {self.message}"


class Style(str, enum.Enum):
    """How the plan reaches TileLang."""

    WARP_SPECIALIZED = "warp_specialized"  # T.WSSchedule: TMA producer + consumer warpgroups (Hopper)
    SOFTWARE_PIPELINE = "software_pipeline"  # T.Pipelined order=/stage= (sm_80, ROCm; Hopper without WS)


@dataclass(frozen=True)
class Role:
    """A contiguous warp range with one duty; ``max_nreg`` is its per-thread register budget (0: untouched)."""

    name: str
    warp_lo: int
    warp_hi: int
    max_nreg: int = 0

    @property
    def warps(self) -> int:
        return self.warp_hi - self.warp_lo


@dataclass(frozen=True)
class Append:
    """Append ``stask`` to ``role``'s program on sEU ``seu``, ``stage`` loop iterations behind."""

    stask: str
    role: str
    seu: SEUKind
    stage: int = 0


@dataclass(frozen=True)
class Wait:
    """``stask`` waits until every sTask in ``on`` has completed (same loop iteration unless carried)."""

    stask: str
    on: tuple[str, ...]


@dataclass(frozen=True)
class Handoff:
    """``role``'s warpgroups take turns issuing ``first`` .. ``last`` of its loop program (ping-pong).

    Warpgroup ``w`` issues the span only after warpgroup ``w - 1`` has issued its own
    (round robin, through one named barrier per warpgroup), so while one warpgroup's
    tensor-core sTasks run, the others work on the CUDA cores instead of queuing
    behind them.
    """

    role: str
    first: str
    last: str


@dataclass(frozen=True)
class Pipeline:
    """Shared buffers written by ``producer`` and read by ``consumer``, kept in ``depth`` versions.

    ``scope`` is ``loop`` (one version per iteration in flight) or ``root``
    (written once before the loop).
    """

    name: str
    buffers: tuple[str, ...]
    depth: int
    producer: str
    consumer: str
    scope: str = "loop"


@dataclass(frozen=True)
class ExecutionPlan:
    """A pipelined mapping of one sTask-graph onto one EU.

    Attributes
    ----------
    graph : str
        Name of the graph it schedules.
    target : str
        Hardware model name.
    style : Style
    roles : tuple[Role, ...]
    steps : tuple[Append | Wait | Handoff, ...]
        The primitives, in order: a role's program is its Appends in this order.
    pipelines : tuple[Pipeline, ...]
        Multi-versioned shared buffers (warp-specialized plans).
    num_stages : int
        Software-pipeline depth (``T.Pipelined(num_stages=...)``); for
        warp-specialized plans the deepest pipeline.
    tile : Mapping[str, int]
        The tile parameters this plan was found for (template plans).
    """

    graph: str
    target: str
    style: Style
    roles: tuple[Role, ...]
    steps: tuple[Append | Wait | Handoff, ...]
    pipelines: tuple[Pipeline, ...] = ()
    num_stages: int = 1
    tile: Mapping[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------ views
    @functools.cached_property
    def appends(self) -> tuple[Append, ...]:
        return tuple(s for s in self.steps if isinstance(s, Append))

    @functools.cached_property
    def _by_stask(self) -> dict[str, Append]:
        return {a.stask: a for a in self.appends}

    @property
    def waits(self) -> tuple[Wait, ...]:
        return tuple(s for s in self.steps if isinstance(s, Wait))

    @property
    def handoffs(self) -> tuple[Handoff, ...]:
        return tuple(s for s in self.steps if isinstance(s, Handoff))

    def append_of(self, stask: str) -> Append:
        try:
            return self._by_stask[stask]
        except KeyError:
            raise KeyError(f"plan has no Append for sTask {stask!r}") from None

    def extended(self, *steps: Append | Wait | Handoff) -> "ExecutionPlan":
        """The same plan with ``steps`` added after its own."""
        return replace(self, steps=(*self.steps, *steps))

    def in_flight(self) -> dict[str, str]:
        """Asynchronous tensor-core sTasks: ``{gemm: waiter}`` for each same-role Wait on a tensor-core sTask.

        Such a gemm is issued without waiting (its wgmma stays in flight) and completes
        before ``waiter`` starts; the sTasks between them overlap it.
        """
        role_of = {a.stask: a.role for a in self.appends}
        seu_of = {a.stask: a.seu for a in self.appends}
        return {o: w.stask for w in self.waits for o in w.on
                if o in role_of and w.stask in role_of and role_of[o] == role_of[w.stask]
                and seu_of[o] == SEUKind.TENSOR_CORE}

    def role(self, name: str) -> Role:
        for r in self.roles:
            if r.name == name:
                return r
        raise KeyError(f"plan has no role {name!r}")

    def program(self, role: str, graph: STaskGraph, placement: Placement) -> list[Append]:
        """The role's Appends for sTasks of ``placement``, in program order."""
        placed = {t.id for t in graph.placed(placement)}
        return [a for a in self.appends if a.role == role and a.stask in placed]

    def versions(self, buffer: str) -> int:
        """How many copies of a shared buffer the plan keeps."""
        depth = 1
        for p in self.pipelines:
            if buffer in p.buffers:
                depth *= p.depth
        return depth

    def pipeline_of(self, buffer: str) -> Pipeline | None:
        for p in self.pipelines:
            if buffer in p.buffers:
                return p
        return None

    @property
    def num_warps(self) -> int:
        return max(r.warp_hi for r in self.roles)

    # ------------------------------------------------------------ checks
    def violations(self, graph: STaskGraph, vdev: VDevice) -> list[Violation]:
        """Every rule this plan breaks for ``graph`` on ``vdev`` (empty when it is valid)."""
        out: list[Violation] = []
        out += _check_coverage(self, graph, vdev)
        if out:
            return out  # the other checks assume every sTask is placed once
        broken = _check_dependences(self, graph)
        handoffs = _check_handoffs(self, graph, vdev)
        out += broken + handoffs
        if not broken and not handoffs:
            out += _check_deadlock(self, graph, vdev)
        out += _check_waits(self, graph)
        out += _check_in_flight(self, graph)
        if self.style == Style.WARP_SPECIALIZED:
            out += _check_ws_structure(self, graph, vdev)
        out += _check_resources(self, graph, vdev)
        out += _check_emission(self, graph, vdev)
        return out

    def verify(self, graph: STaskGraph, vdev: VDevice) -> "ExecutionPlan":
        """Return the plan, or raise :class:`PlanError` listing every broken rule."""
        found = self.violations(graph, vdev)
        if found:
            raise PlanError(found)
        return self

    # ------------------------------------------------------------ serialization
    def to_dict(self) -> dict:
        steps = [{"append": asdict(s)} if isinstance(s, Append) else {"handoff": asdict(s)} if isinstance(s, Handoff)
                 else {"wait": {**asdict(s), "on": list(s.on)}} for s in self.steps]
        d = {"format": "pt-tvm.plan/1", "graph": self.graph, "target": self.target, "style": self.style.value,
             "roles": [asdict(r) for r in self.roles], "steps": steps,
             "pipelines": [{**asdict(p), "buffers": list(p.buffers)} for p in self.pipelines],
             "num_stages": self.num_stages, "tile": dict(self.tile)}
        return json.loads(json.dumps(d, default=lambda o: o.value))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ExecutionPlan":
        if not isinstance(d, Mapping):
            raise PlanError([Violation("format", f"not a pt-tvm plan (a JSON {type(d).__name__}, not an object)")])
        if d.get("format") != "pt-tvm.plan/1":
            raise PlanError([Violation("format", f"not a pt-tvm plan (format={d.get('format')!r})")])
        try:
            steps = tuple(Append(**{**s["append"], "seu": SEUKind(s["append"]["seu"])}) if "append" in s
                          else Handoff(**s["handoff"]) if "handoff" in s
                          else Wait(stask=s["wait"]["stask"], on=tuple(s["wait"]["on"])) for s in d["steps"])
            return cls(graph=d["graph"], target=d["target"], style=Style(d["style"]),
                       roles=tuple(Role(**r) for r in d["roles"]), steps=steps,
                       pipelines=tuple(Pipeline(**{**p, "buffers": tuple(p["buffers"])}) for p in d["pipelines"]),
                       num_stages=int(d["num_stages"]), tile=dict(d.get("tile", {})))
        except (KeyError, TypeError, ValueError) as e:
            raise PlanError([Violation("format", f"corrupt plan: {type(e).__name__}: {e}")]) from None

    @classmethod
    def from_json(cls, text: str) -> "ExecutionPlan":
        try:
            return cls.from_dict(json.loads(text))
        except json.JSONDecodeError as e:
            raise PlanError([Violation("format", f"corrupt plan JSON: {e}")]) from None

    def describe(self, graph: STaskGraph) -> str:
        """A text timeline: per role, per placement, the sTasks with their sEU and stage."""
        lines = [f"plan for {self.graph} on {self.target}: {self.style.value}, {self.num_warps} warps, "
                 f"num_stages={self.num_stages}" + (f", tile {dict(self.tile)}" if self.tile else "")]
        for r in self.roles:
            lines.append(f"  role {r.name}: warps [{r.warp_lo},{r.warp_hi})" + (f", {r.max_nreg} regs/thread" if r.max_nreg else ""))
            for placement in Placement:
                prog = self.program(r.name, graph, placement)
                if prog:
                    body = "  ".join(f"{a.stask}@{a.seu.value}" + (f"[s{a.stage}]" if a.stage else "") for a in prog)
                    lines.append(f"    {placement.value:<9} {body}")
        for h in self.handoffs:
            lines.append(f"  handoff {h.role}: its warpgroups take turns issuing {h.first} .. {h.last}")
        for gemm, waiter in self.in_flight().items():
            lines.append(f"  in flight: {gemm} until {waiter}")
        for p in self.pipelines:
            lines.append(f"  pipeline {p.name}: {', '.join(p.buffers)} x{p.depth} ({p.producer} -> {p.consumer}, {p.scope})")
        return "\n".join(lines)


# ---------------------------------------------------------------- checks
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
            out.append(Violation("stage", f"sTask {t.id} is outside the loop but has stage {plan.append_of(t.id).stage}"))
        elif plan.append_of(t.id).stage < 0:
            out.append(Violation("stage", f"sTask {t.id} has a negative stage"))
        elif not _seu_fits(t, plan.append_of(t.id).seu):
            out.append(Violation("seu", f"sTask {t.id} ({t.op.value}) cannot run on a {plan.append_of(t.id).seu.value} sEU"))
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


def effective_distance(plan: ExecutionPlan, graph: STaskGraph, e: Edge) -> int:
    """Loop distance of a dependence once buffer versions are counted (WAR/WAW on versioned buffers relax)."""
    if e.kind == DepKind.RAW:
        return e.distance
    return e.distance + plan.versions(e.buffer) - 1


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
        s_src, s_dst = plan.append_of(e.src).stage, plan.append_of(e.dst).stage
        d = effective_distance(plan, graph, e)
        before = (s_src, pos[e.src][1]) < (d + s_dst, pos[e.dst][1])
        if not before and not (e.src == e.dst and s_src < d + s_dst):
            out.append(Violation(
                "dependence",
                f"{e.kind.value} {e.src} -> {e.dst} on {e.buffer} (distance {e.distance}) is broken: "
                f"{e.src} at stage {s_src} position {pos[e.src][1]} runs after {e.dst} at stage {s_dst} "
                f"position {pos[e.dst][1]} of the iteration it must precede"))
    return out


def _check_deadlock(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> list[Violation]:
    """Roles wait on each other through pipeline barriers, and a handoff's warpgroups on each other's
    turns: run every warpgroup's unrolled program (each sTask ``stage`` iterations behind, a handoff's
    barriers at the role's base stage) against the cross-role dependences and the turns, and report a
    cycle of waits that nothing can break (e.g. a producer refilling a single-version buffer that a
    consumer reads one stage late, before a load that consumer needs first): on the GPU it would hang."""
    if len(plan.roles) < 2 and not plan.handoffs:
        return []
    role_of = {a.stask: a.role for a in plan.appends}
    depth = max((a.stage for a in plan.appends), default=0)
    iters = min(depth + max((p.depth for p in plan.pipelines), default=1) + 2,
                max(2, math.ceil(graph.loop.trip_count)))
    turns = {h.role: h for h in plan.handoffs}
    groups = {r.name: (r.warps // vdev.eu.warpgroup_warps if r.name in turns else 1) for r in plan.roles}
    queues: dict[tuple[str, int], list[tuple[str, int]]] = {}
    for r in plan.roles:
        h, base = turns.get(r.name), base_stage(plan, graph, r.name)
        body = plan.program(r.name, graph, Placement.LOOP)
        q = [(a.stask, -1) for a in plan.program(r.name, graph, Placement.PROLOGUE)]
        for step in range(iters + depth):
            turn = 0 <= step - base < iters
            for a in body:
                if h and a.stask == h.first and turn:
                    q.append((_TURN_SYNC, step - base))
                if 0 <= step - a.stage < iters:
                    q.append((a.stask, step - a.stage))
                if h and a.stask == h.last and turn:
                    q.append((_TURN_ARRIVE, step - base))
        q += [(a.stask, -1) for a in plan.program(r.name, graph, Placement.EPILOGUE)]
        for w in range(groups[r.name]):
            queues[(r.name, w)] = q
    into: dict[str, list] = {}
    for e in graph.edges:
        if role_of[e.src] != role_of[e.dst]:  # same-role ones hold in program order (_check_dependences)
            into.setdefault(e.dst, []).append((e, effective_distance(plan, graph, e)))
    done: dict[tuple[str, int], set[tuple[str, int]]] = {k: set() for k in queues}

    def missing(who: tuple[str, int], sid: str, it: int) -> tuple[tuple[str, int], str, int] | None:
        """What (warpgroup, sTask or barrier, iteration) the entry still waits for."""
        role, w = who
        if sid == _TURN_SYNC:  # the previous warpgroup's turn of this iteration (the last one's of the one before)
            prev = (role, w - 1) if w else (role, groups[role] - 1)
            key = (_TURN_ARRIVE, it if w else it - 1)
            return None if key[1] < 0 or key in done[prev] else (prev, *key)
        if sid == _TURN_ARRIVE:
            return None
        place = graph.stask(sid).placement
        for e, dist in into.get(sid, ()):
            src_place = graph.stask(e.src).placement
            if src_place == Placement.LOOP and place == Placement.LOOP:
                key = (e.src, it - dist)
                if key[1] < 0:
                    continue
            else:
                key = (e.src, iters - 1 if src_place == Placement.LOOP else -1)
            for w_src in range(groups[role_of[e.src]]):  # a pipeline barrier counts every warpgroup's arrival
                if key not in done[(role_of[e.src], w_src)]:
                    return ((role_of[e.src], w_src), *key)
        return None

    heads = {k: 0 for k in queues}
    progress = True
    while progress:
        progress = False
        for who, q in queues.items():
            while heads[who] < len(q) and missing(who, *q[heads[who]]) is None:
                done[who].add(q[heads[who]])
                heads[who] += 1
                progress = True

    def name(who: tuple[str, int]) -> str:
        return f"role {who[0]}" + (f" warpgroup {who[1]}" if groups[who[0]] > 1 else "")

    stuck = []
    for who, q in queues.items():
        if heads[who] < len(q):
            sid, it = q[heads[who]]
            src_who, src, src_it = missing(who, sid, it)
            stuck.append(f"{name(who)} waits at {sid} (iteration {it}) for {src} (iteration {src_it}) "
                         f"of {name(src_who)}")
    if not stuck:
        return []
    return [Violation("deadlock", "roles wait on each other forever: " + "; ".join(stuck))]


_TURN_SYNC, _TURN_ARRIVE = "<turn: wait>", "<turn: hand on>"  # a handoff's named-barrier sync and arrive


def base_stage(plan: ExecutionPlan, graph: STaskGraph, role: str) -> int:
    """The stage at which MaterializeWSSchedule runs a role's loop statements that touch no pipeline
    buffer (wgmma waits, handoff barriers): the lowest stage of the role's pipeline spans (0 without)."""
    piped = {b for p in plan.pipelines if p.scope == "loop" for b in p.buffers}
    return min((plan.append_of(t.id).stage for t in graph.loop_stasks if plan.append_of(t.id).role == role
                and (t.read_buffers() | t.write_buffers()) & piped), default=0)


# Named barriers a handoff may take: one per warpgroup, counted down from the last of the 16 hardware
# barriers; TileLang 0.1.15 numbers its own from 3 upwards (thread_sync_types.h), and the emitted kernel
# is checked for a collision (pt_tvm.emitted.named_barrier_clash).
NAMED_BARRIERS = 16
MAX_HANDOFF_WARPGROUPS = 4


def handoff_barriers(plan: ExecutionPlan, vdev: VDevice) -> dict[str, tuple[int, ...]]:
    """Role -> the named-barrier ids of its warpgroups' turns (warpgroup ``w`` waits on the ``w``-th)."""
    out, top = {}, NAMED_BARRIERS
    for h in plan.handoffs:
        n = plan.role(h.role).warps // vdev.eu.warpgroup_warps
        out[h.role] = tuple(range(top - n, top))
        top -= n
    return out


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
        busy = g.read_buffers() | g.write_buffers()
        for mid in order[i + 1:j]:
            t = graph.stask(mid)
            clash = (t.write_buffers() & busy) | (t.read_buffers() & g.write_buffers())
            if clash and t.seu != SEUKind.TENSOR_CORE:
                out.append(Violation("dependence", f"{mid} touches {', '.join(sorted(clash))} while gemm {gemm} "
                                     f"is still in flight (its Wait is at {waiter})"))
    return out


def wgmma_waits(plan: ExecutionPlan, graph: STaskGraph) -> dict[str, tuple[int, ...]]:
    """In-flight gemm -> the wgmma groups that may stay in flight at its wait, as the stage offsets
    (from the role's base stage) of the gemms that issue them after it.

    Its ``wait_wgmma<N>`` runs at the base stage: in loop step ``k`` the group of a gemm ``o`` stages
    behind exists once ``k >= o``, so ``N`` counts the offsets ``<= k``. wgmma groups complete in
    issue order; a synchronous tensor-core sTask drains them all.
    """
    in_flight = plan.in_flight()
    out: dict[str, tuple[int, ...]] = {}
    for role in plan.roles:
        base = base_stage(plan, graph, role.name)
        pending: list[str] = []  # in-flight gemms of the step not yet waited for, oldest first
        for a in plan.program(role.name, graph, Placement.LOOP):
            for gemm in [g for g in pending if in_flight[g] == a.stask]:
                later = pending[pending.index(gemm) + 1:]
                out[gemm] = tuple(sorted(plan.append_of(g).stage - base for g in later))
                pending = later
            if a.seu == SEUKind.TENSOR_CORE:
                pending = [*pending, a.stask] if a.stask in in_flight else []
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
        stages = {plan.append_of(t.id).stage for t in graph.loop_stasks
                  if set(p.buffers) & t.read_buffers() and plan.append_of(t.id).role == p.consumer}
        if len(stages) > 1:
            out.append(Violation("stage", f"readers of pipeline {p.name} sit at different stages {sorted(stages)}"))
    out += _check_warp_split(plan, graph, vdev)
    return out


_FULL_ROW = "1"  # tl GemmWarpPolicy.FullRow


def _check_warp_split(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> list[Violation]:
    """Each consumer warpgroup's wgmma needs 64 rows of every gemm tile (FullRow splits rows only)."""
    out = []
    role_of = {a.stask: a.role for a in plan.appends}
    for t in graph.stasks:
        if t.op != OpKind.GEMM:
            continue
        wgs = plan.role(role_of[t.id]).warps // vdev.eu.warpgroup_warps
        m, n = t.tile_shape[0], t.tile_shape[1]
        split = m // 64 if t.attrs.get("policy") == _FULL_ROW else (m // 64) * max(1, n // 64)
        if m % 64 or split < wgs or split % wgs:
            out.append(Violation("threads", f"{t.id}: a {m}x{n} gemm tile cannot be split over {wgs} consumer "
                                 f"warpgroups (wgmma takes 64 rows per warpgroup)"))
    return out


def _check_emission(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> list[Violation]:
    """What TileLang 0.1.15 cannot lower (correctly) from a plan."""
    if plan.style != Style.WARP_SPECIALIZED and plan.in_flight():
        return [Violation("emission", f"in-flight gemms {sorted(plan.in_flight())} need a warp-specialized plan "
                          f"(T.Pipelined order/stage cannot place their waits)")]
    return _check_cp_async_order(plan, graph, vdev)


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


def emission_configs(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> dict[str, Any]:
    """TileLang pass configs the plan's kernel must be lowered with.

    * a software-pipelined plan on a chip where TileLang warp-specializes by default turns
      that off (``tl.disable_warp_specialized``): loads become cp.async, all warps compute;
    * a cp.async pipeline over a run-time trip count (causal loops) needs its epilogue's
      wait-group loop unrolled, or TileLang 0.1.15's codegen meets a run-time wait count.
    """
    out: dict[str, Any] = {}
    if plan.style != Style.SOFTWARE_PIPELINE:
        return out
    if "warp_specialization" in vdev.features:
        out["tl.disable_warp_specialized"] = True
    if "cp_async" in vdev.features and not graph.loop.extent.isdigit() and any(a.stage for a in plan.appends):
        out["tl.UnrollLoop"] = {"explicit_unroll": True}
    return out


def register_estimate(graph: STaskGraph, threads: int) -> int:
    """32-bit registers per thread that the fragments need when spread over ``threads`` threads, plus overhead."""
    frag = sum(b.nbytes or 0 for b in graph.buffers.values() if b.scope in ("fragment", "local"))
    return int(math.ceil(frag / 4 / max(threads, 1))) + _REG_OVERHEAD


_REG_OVERHEAD = 40  # addresses, loop state, wgmma descriptors, temporaries (fits ptxas reports of the FA kernels)


def shared_bytes(plan: ExecutionPlan, graph: STaskGraph) -> int:
    """Shared memory the plan allocates: shared buffers times their versions, plus mbarriers.

    Software-pipelined kernels go through TileLang's shared-memory merging, which lets
    buffers whose live ranges do not overlap share bytes (e.g. an epilogue staging tile
    and the loop's input tiles); warp-specialized kernels keep every buffer apart.
    """
    sizes = {name: (b.nbytes or 0) * plan.versions(name) for name, b in graph.buffers.items() if b.scope == "shared"}
    barriers = sum(2 * 8 * p.depth for p in plan.pipelines)
    if plan.style == Style.WARP_SPECIALIZED:
        return sum(sizes.values()) + barriers
    points = [(t.placement, t.index) for t in graph.stasks if t.placement != Placement.LOOP]
    points.append((Placement.LOOP, 0))
    order = {Placement.PROLOGUE: 0, Placement.LOOP: 1, Placement.EPILOGUE: 2}

    def point(t: STask) -> tuple[int, int]:
        return (order[t.placement], 0 if t.placement == Placement.LOOP else t.index)

    live = {}
    for t in graph.stasks:
        for b in t.read_buffers() | t.write_buffers():
            if b in sizes:
                lo, hi = live.get(b, (point(t), point(t)))
                live[b] = (min(lo, point(t)), max(hi, point(t)))
    peak = max((sum(sizes[b] for b, (lo, hi) in live.items() if lo <= (order[pl], i) <= hi)
                for pl, i in ((p, 0 if p == Placement.LOOP else i) for p, i in points)), default=0)
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
    need = register_estimate(graph, compute_threads)
    total = 0
    for r in plan.roles:
        budget = r.max_nreg or eu.max_regs_per_thread
        rthreads = (r.warps if plan.style != Style.WARP_SPECIALIZED
                    else math.ceil(r.warps / eu.warpgroup_warps) * eu.warpgroup_warps) * eu.warp_size
        total += rthreads * (budget if r.max_nreg else min(need, budget))
        if r.max_nreg and not (eu.min_regs_per_thread <= r.max_nreg <= 256 and r.max_nreg % eu.reg_alloc_granularity == 0):
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
