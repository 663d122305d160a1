"""Role programs run over loop iterations: the one simulator behind the cost model and the deadlock check.

Each role of a plan runs as one *stream* per warpgroup (one for a role of copies alone) that issues its
program in order: the prologue, the loop program once per loop step with each sTask ``stage`` steps
behind, the epilogue. A Handoff adds its warpgroups' turns (a named-barrier wait before the span, a
hand-on after it) at the role's base stage, where TileLang places them. An instance waits for the
instances it depends on: same-role edges on its own stream, cross-role ones on every stream of the
source role, a turn on the previous warpgroup's hand-on. :class:`Simulation` always issues the
earliest-ready head among the streams until none can issue; its hooks say when an issued instance
completes. Unpriced, everything completes at once and the run only tells whether every stream
finishes (:mod:`pt_tvm.verify`'s deadlock rule); :mod:`pt_tvm.cost` prices the hooks per sEU.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .graph import Placement, STaskGraph
from .hw import SEUKind, VDevice
from .lowering import base_stage, carried_gemms
from .plan import Append, ExecutionPlan, effective_distance

__all__ = ["Stream", "Simulation", "TURN_WAIT", "TURN_ARRIVE", "warpgroup_width"]

TURN_WAIT, TURN_ARRIVE = "<turn: wait>", "<turn: hand on>"  # a handoff's named-barrier sync and arrive

Entry = tuple  # (Append or a turn marker, iteration; -1 outside the loop)
Key = tuple  # (stream name, sTask id or marker, iteration): one completed instance


def warpgroup_width(vdev: VDevice) -> int:
    """Warps per stream: a wgmma warpgroup, or four warps where one warp issues tensor-core work alone."""
    return max(vdev.eu.warpgroup_warps, 4 if vdev.eu.warpgroup_warps == 1 else 1)


@dataclass
class Stream:
    """One warpgroup issuing its role's program; compute warpgroups split their sTasks' work evenly."""

    name: str
    role: str
    warpgroup: int
    share: float
    loop_len: int
    queue: list[Entry] = field(default_factory=list)
    time: float = 0.0
    closes: list[bool] = field(init=False)  # whether the entry is its iteration's last sTask on this stream

    def __post_init__(self) -> None:
        self.closes = [False] * len(self.queue)
        nxt = None  # the iteration of the next sTask entry (its own, past the last)
        for i in range(len(self.queue) - 1, -1, -1):
            what, it = self.queue[i]
            if isinstance(what, Append):
                self.closes[i] = it >= 0 and nxt is not None and nxt != it
                nxt = it


class Simulation:
    """The streams of ``plan`` over ``iters`` loop iterations (see the module docstring).

    Subclasses price instances through :meth:`issue`, :meth:`sync_delay` and ``turn_cycles``; unpriced,
    :meth:`run` only finds the instances that wait forever.
    """

    turn_cycles = 0.0  # from a hand-on to the next warpgroup's turn
    overhead = 0.0  # per loop iteration and stream, spread over its loop program

    def __init__(self, plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice, iters: int) -> None:
        self.plan, self.graph, self.vdev, self.iters = plan, graph, vdev, iters
        self.handoffs = {h.role: h for h in plan.handoffs}
        self.stage = {a.stask: a.stage for a in plan.appends}
        self.depth = max(self.stage.values(), default=0)
        self.streams = self._streams()
        self.by_role: dict[str, list[Stream]] = {}
        for s in self.streams:
            self.by_role.setdefault(s.role, []).append(s)
        role_of = {a.stask: a.role for a in plan.appends}
        self.placement = {t.id: t.placement for t in graph.stasks}
        self.plan_pos = {a.stask: i for i, a in enumerate(plan.appends)}
        # a gemm carried into the next step queues its wgmmas behind its own last ones on the tensor cores,
        # which keep their order: it waits for nothing of its own
        self.carried = {g for gemms in carried_gemms(plan, graph).values() for g in gemms}
        incoming: list[tuple] = [(e.dst, e.src, effective_distance(e, plan.versions)) for e in graph.edges
                                 if not (e.src == e.dst and e.src in self.carried)]
        # the waiter of an in-flight gemm holds until the gemm of its own step completes
        incoming += [(waiter, gemm, self.stage[gemm] - self.stage[waiter]) for gemm, waiter in plan.in_flight().items()]
        self.edges_into: dict[str, list[tuple]] = {}  # dst -> (src, loop distance or None, fixed iteration, ...)
        for dst, src, dist in incoming:
            src_place, dst_place = self.placement[src], self.placement[dst]
            same_role = role_of[src] == role_of[dst]
            if src_place == dst_place == Placement.EPILOGUE and same_role:
                continue  # the epilogue runs once, in program order: its own earlier sTasks are issued
            loop = src_place == dst_place == Placement.LOOP
            # outside the loop: the prologue's or epilogue's one instance, or the loop's last
            fixed = iters - 1 if src_place == Placement.LOOP else -1
            reorder_ok = loop and same_role and self.plan_pos[src] > self.plan_pos[dst]
            others = None if same_role else tuple(o.name for o in self.by_role[role_of[src]])
            self.edges_into.setdefault(dst, []).append((src, dist if loop else None, fixed, others, reorder_ok))
        self.done: dict[Key, float] = {}
        self.iter_done = [0.0] * iters

    def _streams(self) -> list[Stream]:
        out = []
        wg = warpgroup_width(self.vdev)
        for r in self.plan.roles:
            progs = [self.plan.program(r.name, self.graph, p) for p in Placement]
            only_copies = all(a.seu == SEUKind.TMA for prog in progs for a in prog)
            n = 1 if only_copies else max(1, r.warps // wg)
            queue = self._unrolled(r.name, *progs)
            for i in range(n):
                out.append(Stream(f"{r.name}{i if n > 1 else ''}", r.name, i, 1.0 / n, len(progs[1]), list(queue)))
        return out

    def _unrolled(self, role: str, prologue: list[Append], loop: list[Append], epilogue: list[Append]) -> list[Entry]:
        """The role's program over the loop steps: each sTask ``stage`` steps behind, its turns at the base stage."""
        h, base = self.handoffs.get(role), base_stage(self.plan, self.graph, role)
        q: list[Entry] = [(a, -1) for a in prologue]
        for step in range(self.iters + self.depth):
            turn = h is not None and 0 <= step - base < self.iters
            for a in loop:
                if turn and a.stask == h.first:
                    q.append((TURN_WAIT, step - base))
                if 0 <= step - a.stage < self.iters:
                    q.append((a, step - a.stage))
                if turn and a.stask == h.last:
                    q.append((TURN_ARRIVE, step - base))
        return q + [(a, -1) for a in epilogue]

    # ------------------------------------------------------------ hooks
    def issue(self, stream: Stream, a: Append, it: int, start: float) -> tuple[float, float]:
        """(completion, the stream's time after issuing) of an instance issued at ``start``."""
        return start, start

    def sync_delay(self, stream: Stream, a: Append) -> float:
        """Cycles the stream spends on barriers right before issuing ``a``."""
        return 0.0

    # ------------------------------------------------------------ the run
    def needs(self, stream: Stream, entry: Entry) -> tuple[float | None, Key | None]:
        """(when the entry's dependences have completed, None) or (None, the first missing completion)."""
        what, it = entry
        if not isinstance(what, Append):  # a turn (an Append's dataclass __eq__ would cost more than this test)
            if what == TURN_ARRIVE:
                return 0.0, None
            # TURN_WAIT: the previous warpgroup's hand-on of this step (the last one's of the one before)
            group, w = self.by_role[stream.role], stream.warpgroup
            key = (group[w - 1].name, TURN_ARRIVE, it) if w else (group[-1].name, TURN_ARRIVE, it - 1)
            if key[2] < 0:
                return 0.0, None
            return (self.done[key] + self.turn_cycles, None) if key in self.done else (None, key)
        ready = 0.0
        done = self.done
        own = (stream.name,)
        for src, dist, fixed, others, reorder_ok in self.edges_into.get(what.stask, ()):
            if dist is not None:
                src_it = it - dist
                if src_it < 0:
                    continue
            else:
                src_it = fixed
            for name in own if others is None else others:
                key = (name, src, src_it)
                end = done.get(key)
                if end is None:
                    if reorder_ok and src_it == it:
                        continue  # a broken same-role order is the dependence rule's to report
                    return None, key
                if end > ready:
                    ready = end
        return ready, None

    def run(self) -> list[tuple[Stream, Entry, Key]]:
        """Issue the earliest-ready head until none can issue; (stream, head, what it waits for) of the
        streams left waiting forever (none when every program finished)."""
        streams, done, epilogue = self.streams, self.done, Placement.EPILOGUE
        ends = [len(s.queue) for s in streams]
        # whether each queue entry is an epilogue sTask (it starts after every loop iteration has completed)
        after_loop = [[isinstance(what, Append) and self.placement[what.stask] == epilogue for what, _ in s.queue]
                for s in streams]
        heads = [0] * len(streams)
        head_ready: list[float | None] = [None] * len(streams)  # a head's dependences, once simulated, cannot change
        blocked: list[Key | None] = [None] * len(streams)  # the first missing completion a stream's head waits for
        while True:
            best, best_start = -1, 0.0
            for n, s in enumerate(streams):
                i = heads[n]
                if i >= ends[n]:
                    continue
                ready = head_ready[n]
                if ready is None:
                    if blocked[n] is not None and blocked[n] not in done:
                        continue  # needs() would stop at the same missing completion again
                    ready, blocked[n] = self.needs(s, s.queue[i])
                    if ready is None:
                        continue
                    head_ready[n] = ready
                start = s.time if s.time > ready else ready
                if after_loop[n][i]:
                    start = max(start, max(self.iter_done))
                if best < 0 or start < best_start:
                    best, best_start = n, start
            if best < 0:
                break
            self._step(streams[best], heads[best], best_start)
            heads[best] += 1
            head_ready[best] = blocked[best] = None
        return [(s, s.queue[heads[n]], blocked[n]) for n, s in enumerate(streams) if heads[n] < len(s.queue)]

    def _step(self, s: Stream, i: int, start: float) -> None:
        what, it = s.queue[i]
        if not isinstance(what, Append):  # a turn: the wait holds the stream, the hand-on marks it
            s.time = start
            self.done[(s.name, what, it)] = start
            return
        end, s.time = self.issue(s, what, it, start + self.sync_delay(s, what))
        self.done[(s.name, what.stask, it)] = end
        if it >= 0:
            self.iter_done[it] = max(self.iter_done[it], end)
            if self.overhead and s.closes[i]:
                s.time += self.overhead * s.share / max(1, s.loop_len)

    def describe(self, s: Stream) -> str:
        """A stream as the deadlock rule names it: its role, and its warpgroup where the role takes turns."""
        return f"role {s.role}" + (f" warpgroup {s.warpgroup}" if s.role in self.handoffs and
                                   len(self.by_role[s.role]) > 1 else "")

