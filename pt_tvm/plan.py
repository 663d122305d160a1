"""Execution plans: the paper's Append / Wait primitives (plus Handoff) over one sTask-graph, and their JSON.

An :class:`ExecutionPlan` is a sequence of primitives over one sTask-graph:
``Append(stask, role, seu, stage)`` puts an sTask at the end of a role's
program (a role is a range of warps, the paper's EU-level partition) on one of
its sEUs, ``stage`` iterations behind the loop's current iteration; ``Wait``
makes an sTask wait for the completion of others (cross-role waits become
pipeline barriers; a same-role Wait on a tensor-core sTask keeps its wgmma in
flight until then); ``Handoff`` makes a role's warpgroups take turns issuing a
span of its program (named barriers: FlashAttention-3's ping-pong).
:class:`Pipeline` s multi-version shared buffers between a producer role and
its consumers. :mod:`pt_tvm.verify` holds the rules a plan must pass before it
reaches TileLang.
"""
from __future__ import annotations

import enum
import functools
import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

from .errors import PtTvmError
from .graph import DepKind, Edge, Placement, STask, STaskGraph
from .hw import SEUKind

__all__ = [
    "Style",
    "Role",
    "Append",
    "Wait",
    "Handoff",
    "Pipeline",
    "TileOrder",
    "Step",
    "ExecutionPlan",
    "PlanError",
    "Violation",
    "effective_distance",
    "in_flight_clash",
]


class PlanError(PtTvmError, ValueError):
    """A plan that must not reach TileLang; ``violations`` lists every reason."""

    def __init__(self, violations: Sequence["Violation"], message: str | None = None):
        self.violations = tuple(violations)
        super().__init__(message or "plan rejected:\n" + "\n".join(f"  - {v}" for v in self.violations))


@dataclass(frozen=True)
class Violation:
    """One broken rule: ``rule`` is a short key (``dependence``, ``shared_memory``, ...)."""

    rule: str
    message: str

    def __str__(self) -> str:
        return f"[{self.rule}] {self.message}"


CLUSTER = 2  # CTAs a cluster of a multicast plan (ExecutionPlan.multicast)


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


Step = Append | Wait | Handoff  # one primitive of a plan


@dataclass(frozen=True)
class TileOrder:
    """The order in which the kernel's output tiles (its thread blocks) are walked: an inter-EU choice.

    ``panel == 1`` is the launch order (``blockIdx.x`` fastest). A larger panel walks the grid in
    panels of ``panel`` block rows (``axis="row"``: consecutive tiles go down a column of the panel,
    then to the next column, so the tiles resident at once share their column operands in L2) or of
    ``panel`` block columns (``axis="column"``), odd panels walked backwards: the order of TileLang's
    ``rasterization2DRow`` / ``rasterization2DColumn`` (``T.use_swizzle``). ``snake=False`` walks every panel
    forwards: a causal FlashAttention's query blocks (``blockIdx.x``, heaviest first) then run heaviest first
    within each panel of heads, so the grid's last wave holds its lightest blocks (FlashAttention 3's
    sections of heads that share L2).
    """

    panel: int = 1
    axis: str = "row"
    snake: bool = True

    AXES = ("row", "column")

    @property
    def is_launch_order(self) -> bool:
        return self.panel == 1

    def coords(self, linear: Any, gx: int, gy: int, select: Callable[[Any, Any, Any], Any] | None = None
               ) -> tuple[Any, Any]:
        """``(x, y)`` block indices of the ``linear``-th tile of a ``gx`` x ``gy`` grid in this order.

        Plain arithmetic, so it runs on ints (the cost model) and on TIR expressions (emission, with
        ``select`` building the conditional expression)."""
        if self.panel == 1:
            return linear % gx, linear // gx
        pick = select or (lambda c, a, b: a if c else b)
        fast, slow = (gx, gy) if self.axis == "row" else (gy, gx)  # swept / cut into panels
        size = self.panel * fast
        panels = (fast * slow + size - 1) // size
        last = (fast * slow - (panels - 1) * size) // fast  # the last panel's width
        idx, offset = linear // size, linear % size

        def walk(width: int) -> tuple[Any, Any]:
            """Coordinates in a panel ``width`` wide, every division by a constant: plain arithmetic for the cost
            model and for nvcc (emission hides the result from TVM's analyses, ``passes.apply._walked``)."""
            along = offset // width
            along = pick(idx % 2 == 1, fast - 1 - along, along) if self.snake else along
            return along, offset % width + idx * self.panel

        along, across = walk(self.panel)
        if last != self.panel:  # a partial last panel
            full = idx + 1 < panels
            last_along, last_across = walk(last)
            along, across = pick(full, along, last_along), pick(full, across, last_across)
        return (along, across) if self.axis == "row" else (across, along)

    def describe(self) -> str:
        return ("launch order" if self.panel == 1 else f"panels of {self.panel} block {self.axis}s"
                + ("" if self.snake else ", each forwards"))


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
    tile_order : TileOrder
        The order the output tiles are walked in (L2 reuse between the tiles resident at once).
    persistent : bool
        One block per EU walks the output tiles in ``tile_order`` (a persistent kernel): the next tile's
        loads overlap the current tile's epilogue.
    row_split : bool
        The warpgroups running a gemm split its tile by rows only (TileLang's ``GemmWarpPolicy.FullRow``, as
        CUTLASS's cooperative kernel does): each issues ``m64nN`` wgmmas over the tile's full width, where the
        template's policy may split the width (a 128x256 tile: one ``m64n256k16`` per k16 instead of two
        ``m64n128k16`` rereading B).
    stream_k : bool
        A persistent plan's blocks share out the tiles' k-iterations evenly instead of whole tiles
        (:mod:`pt_tvm.stream_k`): a tile split between blocks is finished by the block holding its first
        iterations, which adds the others' fp32 partial sums. For grids that leave the last wave part empty.
    carry_gemms : bool
        The gemms of a consumer's loop stay in flight into the next step (CUTLASS's mainloop): a step issues its
        wgmmas, waits for all but its own and only then releases the stages of the step before, so the tensor
        cores run one step's wgmmas behind the last one's instead of idling while a warpgroup waits for them.
        TileLang's ``WSSchedule`` releases a stage in the step that waited for it; pt-tvm moves the release
        (:mod:`pt_tvm.passes.carry`).
    multicast : str
        A launch index of the grid (e.g. ``"by"``), or empty. Set, a persistent plan runs its output tiles in pairs
        of neighbours along that index on the two CTAs of a cluster, and the loop's copies whose tile does not vary
        along it (:meth:`~pt_tvm.graph.STaskGraph.loads_shared_along`) are loaded once into both by TMA multicast:
        half their L2 reads (:mod:`pt_tvm.passes.multicast`).
    """

    graph: str
    target: str
    style: Style
    roles: tuple[Role, ...]
    steps: tuple[Append | Wait | Handoff, ...]
    pipelines: tuple[Pipeline, ...] = ()
    num_stages: int = 1
    tile: Mapping[str, Any] = field(default_factory=dict)
    tile_order: TileOrder = TileOrder()
    persistent: bool = False
    row_split: bool = False
    stream_k: bool = False
    carry_gemms: bool = False
    multicast: str = ""

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

    def root_buffers(self) -> set[str]:
        """The buffers of the root pipelines: loaded once a tile, before the loop."""
        return {b for p in self.pipelines if p.scope == "root" for b in p.buffers}

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

    def reader_stages(self, pipeline: Pipeline, graph: STaskGraph) -> set[int]:
        """The stages at which the pipeline's consumer role reads its buffers in the loop."""
        return {self.append_of(t.id).stage for t in graph.loop_stasks
                if set(pipeline.buffers) & t.read_buffers() and self.append_of(t.id).role == pipeline.consumer}

    def pipeline_of(self, buffer: str) -> Pipeline | None:
        for p in self.pipelines:
            if buffer in p.buffers:
                return p
        return None

    @property
    def num_warps(self) -> int:
        return max(r.warp_hi for r in self.roles)

    # ------------------------------------------------------------ serialization
    def to_dict(self) -> dict:
        steps = [{"append": asdict(s)} if isinstance(s, Append) else {"handoff": asdict(s)} if isinstance(s, Handoff)
                 else {"wait": {**asdict(s), "on": list(s.on)}} for s in self.steps]
        d = {"format": "pt-tvm.plan/1", "graph": self.graph, "target": self.target, "style": self.style.value,
             "roles": [asdict(r) for r in self.roles], "steps": steps,
             "pipelines": [{**asdict(p), "buffers": list(p.buffers)} for p in self.pipelines],
             "num_stages": self.num_stages, "tile": dict(self.tile),
             "tile_order": asdict(self.tile_order), "persistent": self.persistent,
             "row_split": self.row_split, "stream_k": self.stream_k}
        if self.carry_gemms:  # only where set: the JSON of every plan without it stays as it was
            d["carry_gemms"] = True
        if self.multicast:
            d["multicast"] = self.multicast
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
                       num_stages=int(d["num_stages"]), tile=dict(d.get("tile", {})),
                       tile_order=TileOrder(**d.get("tile_order", {})), persistent=bool(d.get("persistent", False)),
                       row_split=bool(d.get("row_split", False)), stream_k=bool(d.get("stream_k", False)),
                       carry_gemms=bool(d.get("carry_gemms", False)), multicast=str(d.get("multicast", "")))
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
                 f"num_stages={self.num_stages}" + (f", tile {dict(self.tile)}" if self.tile else "")
                 + ("" if self.tile_order.is_launch_order else f", tiles in {self.tile_order.describe()}")
                 + (", persistent" if self.persistent else "") + (", stream-K" if self.stream_k else "")
                 + (", gemm rows split over warpgroups" if self.row_split else "")
                 + (", gemms carried into the next step" if self.carry_gemms else "")
                 + (f", 2-CTA clusters along {self.multicast}" if self.multicast else "")]
        for r in self.roles:
            lines.append(f"  role {r.name}: warps [{r.warp_lo},{r.warp_hi})"
                         + (f", {r.max_nreg} regs/thread" if r.max_nreg else ""))
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
            lines.append(f"  pipeline {p.name}: {', '.join(p.buffers)} x{p.depth} "
                         f"({p.producer} -> {p.consumer}, {p.scope})")
        return "\n".join(lines)


def effective_distance(e: Edge, versions: Callable[[str], int]) -> int:
    """Loop distance of a dependence once buffer versions are counted (WAR/WAW on versioned buffers relax)."""
    if e.kind == DepKind.RAW:
        return e.distance
    return e.distance + versions(e.buffer) - 1


def in_flight_clash(t: STask, gemm: STask) -> set[str]:
    """The buffers through which ``t`` would touch what in-flight ``gemm`` still uses: writing its operands or
    accumulator, or reading its accumulator."""
    return ((t.write_buffers() & (gemm.read_buffers() | gemm.write_buffers()))
            | (t.read_buffers() & gemm.write_buffers()))
