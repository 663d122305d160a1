"""The sTask-graph: a kernel's tile ops (sTasks) and the data dependences between them.

An :class:`STask` is one tile op (copy, gemm, fill, reduce, a ``T.Parallel``
nest) of a TileLang kernel, placed before the pipelined loop (``prologue``),
inside it (``loop``) or after it (``epilogue``). An :class:`Edge` says that
``dst`` must observe ``src``: read-after-write, write-after-read or
write-after-write on one buffer, ``distance`` iterations of the pipelined loop
later (0 within an iteration, 1 for a loop-carried dependence). The graph is
plain, frozen data: it serializes to JSON and renders to Graphviz DOT.
"""
from __future__ import annotations

import enum
import functools
import json
import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Iterable, Mapping

from .errors import PtTvmError
from .hw import SEUKind

__all__ = [
    "OpKind",
    "Placement",
    "DepKind",
    "Access",
    "BufferInfo",
    "STask",
    "Edge",
    "LoopInfo",
    "STaskGraph",
    "GraphError",
    "symbols_text",
    "BLOCK_SYNC",
    "BOX_OFF_BOUNDARY",
]

BLOCK_SYNC = "block_sync"  # STask attribute ("1"): the statement holds a barrier of all the block's threads
BOX_OFF_BOUNDARY = "box_off_boundary"  # STask attribute ("1"): a global tile whose rows provably start off 16 bytes


class GraphError(PtTvmError, ValueError):
    """A malformed or corrupt sTask-graph (e.g. a JSON file that does not describe one)."""


class OpKind(str, enum.Enum):
    COPY = "copy"
    GEMM = "gemm"
    FILL = "fill"
    REDUCE = "reduce"
    ELEMENTWISE = "elementwise"  # a T.Parallel nest or another loop of scalar statements
    ATOMIC = "atomic"


class Placement(str, enum.Enum):
    PROLOGUE = "prologue"
    LOOP = "loop"
    EPILOGUE = "epilogue"


class DepKind(str, enum.Enum):
    RAW = "RAW"
    WAR = "WAR"
    WAW = "WAW"


_DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "int8": 1, "uint8": 1,
                "int32": 4, "int64": 8, "float8_e4m3": 1, "float8_e5m2": 1, "bool": 1, "int16": 2}


def symbols_text(symbols: Mapping[str, int]) -> str:
    """``M=4096, K=512``: symbolic sizes and the values they were priced at."""
    return ", ".join(f"{k}={v}" for k, v in symbols.items())


def dtype_bytes(dtype: str) -> int:
    """Bytes per element of a TVM dtype string."""
    if dtype in _DTYPE_BYTES:
        return _DTYPE_BYTES[dtype]
    digits = "".join(c for c in dtype if c.isdigit())
    return max(1, int(digits) // 8) if digits else 4


@dataclass(frozen=True)
class BufferInfo:
    """A buffer the kernel touches: global parameter, shared memory or register fragment."""

    name: str
    shape: tuple[int | None, ...]
    dtype: str
    scope: str  # "global" | "shared" | "fragment" | "local"
    strides: tuple[int | None, ...] = ()  # elements between neighbours along each dim; () for packed rows

    @property
    def nbytes(self) -> int | None:
        if any(s is None for s in self.shape):
            return None
        return math.prod(self.shape) * dtype_bytes(self.dtype)


@dataclass(frozen=True)
class Access:
    """One region of one buffer read or written by an sTask.

    ``block_vars`` names the launch indices (``bx``, ``by``, ...) the region's
    offsets depend on: blocks that differ only in other indices read the same
    tile, which is how the cost model counts L2 reuse of global tiles.
    """

    buffer: str
    scope: str
    offsets: tuple[str, ...]
    extents: tuple[int | None, ...]
    block_vars: tuple[str, ...] = ()

    def elements(self) -> int | None:
        if any(e is None for e in self.extents):
            return None
        return math.prod(self.extents)

    def describe(self) -> str:
        if not self.offsets:
            return self.buffer
        return f"{self.buffer}[" + ", ".join(f"{o}:+{e}" for o, e in zip(self.offsets, self.extents)) + "]"


@dataclass(frozen=True)
class STask:
    """One tile op of the kernel, with what it reads and writes and the work it does.

    Attributes
    ----------
    id : str
        Stable id; becomes the op's ``tl.ws_op_id`` when a plan is emitted.
    op : OpKind
    placement : Placement
    index : int
        Position among the statements of its placement (program order).
    label : str
        A one-line human description (``gemm Q_shared, K_shared -> acc_s``).
    tile_shape : tuple[int, ...]
        gemm: (M, N, K); copy/fill: the tile; reduce: the source tile; T.Parallel: the loop extents.
    reads, writes : tuple[Access, ...]
    flops : float
        Arithmetic operations (tensor-core FLOPs for gemm, scalar ops otherwise).
    sfu_ops : float
        Transcendental operations (exp2, log2, ...), which run on the SFU.
    bytes : float
        Bytes moved by a copy (or operand bytes a gemm reads from shared memory).
    seu : SEUKind
        The sEU kind this op runs on for the graph's target.
    dtype : str
        Element type of the op's main operand (gemm's A, a copy's source).
    attrs : Mapping[str, str]
        Op-specific details (transpose flags, reduce type, source op name).
    """

    id: str
    op: OpKind
    placement: Placement
    index: int
    label: str
    tile_shape: tuple[int, ...]
    reads: tuple[Access, ...]
    writes: tuple[Access, ...]
    flops: float
    sfu_ops: float
    bytes: float
    seu: SEUKind
    dtype: str = ""
    attrs: Mapping[str, str] = field(default_factory=dict)

    def read_buffers(self) -> frozenset[str]:
        return frozenset(a.buffer for a in self.reads)

    def write_buffers(self) -> frozenset[str]:
        return frozenset(a.buffer for a in self.writes)


@dataclass(frozen=True)
class Edge:
    """``dst`` depends on ``src`` through ``buffer``, ``distance`` loop iterations later."""

    src: str
    dst: str
    kind: DepKind
    buffer: str
    distance: int = 0

    @property
    def loop_carried(self) -> bool:
        return self.distance > 0


@dataclass(frozen=True)
class LoopInfo:
    """The pipelined loop: its variable, trip count and the annotations it came with."""

    id: str
    var: str
    extent: str  # the extent expression as written
    trip_count: float  # mean trips over the grid (the extent may depend on the block index)
    annotations: Mapping[str, str] = field(default_factory=dict)
    max_trip_count: float = 0.0  # the heaviest block's trips where they vary over the grid (a causal mask), else 0
    block_trips: tuple[int, ...] = ()  # where they vary: the trips at each value of the launch index ...
    trips_index: str = ""  # ... named here (``bx``), so the cost model can walk the blocks in a plan's order


@dataclass(frozen=True)
class STaskGraph:
    """The sTask-graph of one kernel for one target.

    Attributes
    ----------
    name : str
        The PrimFunc's global symbol.
    target : str
        The hardware model's name (``pt_tvm.hw``).
    stasks : tuple[STask, ...]
        In program order: prologue, loop body, epilogue.
    edges : tuple[Edge, ...]
    buffers : Mapping[str, BufferInfo]
    loop : LoopInfo
    grid : Mapping[str, int | None]
        Launch indices (``bx`` -> extent) in blockIdx order.
    threads : int
        Threads per block the kernel was written for.
    symbols : Mapping[str, int]
        The symbolic sizes (``T.dynamic``) of the kernel and the values the grid, trip count and buffer
        shapes were priced at (a caller's hints or :data:`pt_tvm.passes.SYMBOLIC_HINT`); empty for a kernel of
        static shapes.
    """

    name: str
    target: str
    stasks: tuple[STask, ...]
    edges: tuple[Edge, ...]
    buffers: Mapping[str, BufferInfo]
    loop: LoopInfo
    grid: Mapping[str, int | None]
    threads: int
    symbols: Mapping[str, int] = field(default_factory=dict)

    # ------------------------------------------------------------ queries
    def __post_init__(self) -> None:
        ids = [t.id for t in self.stasks]
        if len(set(ids)) != len(ids):
            raise GraphError(f"graph {self.name!r}: duplicate sTask ids")
        known = set(ids)
        for e in self.edges:
            if e.src not in known or e.dst not in known:
                raise GraphError(f"graph {self.name!r}: edge {e.src}->{e.dst} names an unknown sTask")

    def stask(self, sid: str) -> STask:
        try:
            return self.by_id[sid]
        except KeyError:
            raise KeyError(f"graph {self.name!r} has no sTask {sid!r}") from None

    @functools.cached_property
    def by_id(self) -> dict[str, STask]:
        """sTask id -> sTask."""
        return {t.id: t for t in self.stasks}

    def placed(self, placement: Placement) -> tuple[STask, ...]:
        return tuple(t for t in self.stasks if t.placement == placement)

    @property
    def loop_stasks(self) -> tuple[STask, ...]:
        return self.placed(Placement.LOOP)

    @property
    def loads_and_multiplies(self) -> bool:
        """Whether the loop only copies tiles and multiplies them (a GEMM's main loop): no CUDA-core work beside
        the tensor cores."""
        return all(t.op in (OpKind.COPY, OpKind.GEMM) for t in self.loop_stasks)

    def loads_shared_along(self, index: str) -> tuple[STask, ...]:
        """The loop's copies from global memory whose tile does not vary with launch index ``index``: blocks that
        differ only along it load the same bytes (which a 2-CTA cluster may load once, ``ExecutionPlan.multicast``)."""
        out = []
        for t in self.loop_stasks:
            reads = [a for a in t.reads if a.scope == "global"]
            if t.op == OpKind.COPY and reads and not any(a.scope == "global" for a in t.writes) \
                    and index not in reads[0].block_vars:
                out.append(t)
        return tuple(out)

    def edges_into(self, sid: str) -> tuple[Edge, ...]:
        return tuple(e for e in self.edges if e.dst == sid)

    def edges_from(self, sid: str) -> tuple[Edge, ...]:
        return tuple(e for e in self.edges if e.src == sid)

    def find_edges(self, src: str | None = None, dst: str | None = None, kind: DepKind | None = None,
                   buffer: str | None = None, distance: int | None = None) -> tuple[Edge, ...]:
        """Edges matching every given field."""
        return tuple(e for e in self.edges
                     if (src is None or e.src == src) and (dst is None or e.dst == dst)
                     and (kind is None or e.kind == kind) and (buffer is None or e.buffer == buffer)
                     and (distance is None or e.distance == distance))

    def writers_of(self, buffer: str) -> tuple[STask, ...]:
        return tuple(t for t in self.stasks if buffer in t.write_buffers())

    def grid_blocks(self) -> int | None:
        if any(v is None for v in self.grid.values()):
            return None
        return math.prod(self.grid.values()) if self.grid else 1

    def with_stasks(self, stasks: Iterable[STask]) -> "STaskGraph":
        return replace(self, stasks=tuple(stasks))

    # ------------------------------------------------------------ serialization
    def to_dict(self) -> dict:
        d = asdict(self)
        d["format"] = "pt-tvm.stask-graph/1"
        return json.loads(json.dumps(d, default=_enum_value))

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "STaskGraph":
        if not isinstance(d, Mapping):
            raise GraphError(f"not a pt-tvm sTask-graph (a JSON {type(d).__name__}, not an object)")
        if d.get("format") != "pt-tvm.stask-graph/1":
            raise GraphError(f"not a pt-tvm sTask-graph (format={d.get('format')!r})")
        try:
            stasks = tuple(
                STask(**{**t, "op": OpKind(t["op"]), "placement": Placement(t["placement"]),
                         "seu": SEUKind(t["seu"]), "tile_shape": tuple(t["tile_shape"]),
                         "reads": tuple(_access(a) for a in t["reads"]),
                         "writes": tuple(_access(a) for a in t["writes"])})
                for t in d["stasks"])
            edges = tuple(Edge(**{**e, "kind": DepKind(e["kind"])}) for e in d["edges"])
            buffers = {k: BufferInfo(**{**b, "shape": tuple(b["shape"]), "strides": tuple(b.get("strides", ()))})
                       for k, b in d["buffers"].items()}
            return cls(name=d["name"], target=d["target"], stasks=stasks, edges=edges, buffers=buffers,
                       loop=_loop(d["loop"]), grid=dict(d["grid"]), threads=int(d["threads"]),
                       symbols={str(k): int(v) for k, v in d.get("symbols", {}).items()})
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise GraphError(f"corrupt sTask-graph: {type(e).__name__}: {e}") from None

    @classmethod
    def from_json(cls, text: str) -> "STaskGraph":
        try:
            return cls.from_dict(json.loads(text))
        except json.JSONDecodeError as e:
            raise GraphError(f"corrupt sTask-graph JSON: {e}") from None

    def to_dot(self) -> str:
        """Graphviz DOT: one cluster per placement, nodes coloured by sEU kind, carried edges dashed."""
        colors = {SEUKind.TMA: "#8dd3c7", SEUKind.LSU: "#ffffb3", SEUKind.TENSOR_CORE: "#fb8072",
                  SEUKind.CUDA_CORE: "#80b1d3", SEUKind.SFU: "#bebada"}
        lines = [f'digraph "{self.name}" {{', "  rankdir=TB;",
                 '  node [shape=box, style="rounded,filled", fontname="Helvetica"];']
        for placement in Placement:
            tasks = self.placed(placement)
            if not tasks:
                continue
            title = (f"loop {self.loop.var} (x{self.loop.trip_count:g})" if placement == Placement.LOOP
                     else placement.value)
            lines.append(f'  subgraph "cluster_{placement.value}" {{ label="{title}";')
            for t in tasks:
                lines.append(f'    "{t.id}" [label="{t.id}\\n{_dot_escape(t.label)}\\n{t.seu.value} {_work(t)}", '
                             f'fillcolor="{colors[t.seu]}"];')
            lines.append("  }")
        for e in self.edges:
            style = ', style=dashed, constraint=false' if e.loop_carried else ""
            dist = f" d={e.distance}" if e.loop_carried else ""
            lines.append(f'  "{e.src}" -> "{e.dst}" [label="{e.kind.value} {e.buffer}{dist}"{style}];')
        lines.append("}")
        return "\n".join(lines) + "\n"

    def summary(self) -> str:
        """A text table of sTasks and edges (what ``pt-tvm graph`` prints)."""
        out = [f"sTask-graph {self.name} for {self.target}: {len(self.stasks)} sTasks, {len(self.edges)} edges; "
               f"pipelined loop {self.loop.var} x{self.loop.trip_count:g}, grid {dict(self.grid)}, "
               f"{self.threads} threads"
               + (f"; symbolic sizes priced at {symbols_text(self.symbols)}" if self.symbols else "")]
        out.append(f"  {'id':<14}{'where':<10}{'sEU':<13}{'tile':<16}{'FLOPs':>12}{'SFU':>9}{'bytes':>10}  op")
        for t in self.stasks:
            out.append(f"  {t.id:<14}{t.placement.value:<10}{t.seu.value:<13}{'x'.join(map(str, t.tile_shape)):<16}"
                       f"{t.flops:>12.4g}{t.sfu_ops:>9.3g}{t.bytes:>10.4g}  {t.label}")
        out.append("  edges (src -> dst, kind, buffer, distance):")
        for e in self.edges:
            out.append(f"    {e.src:>12} -> {e.dst:<12} {e.kind.value}  {e.buffer:<18} d={e.distance}")
        return "\n".join(out)


def _work(t: STask) -> str:
    parts = []
    if t.flops:
        parts.append(f"{t.flops:.3g} FLOP")
    if t.sfu_ops:
        parts.append(f"{t.sfu_ops:.3g} SFU")
    if t.bytes and t.op == OpKind.COPY:
        parts.append(f"{t.bytes:.3g} B")
    return ", ".join(parts)


def _dot_escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"')


def _access(a: Mapping[str, Any]) -> Access:
    return Access(buffer=a["buffer"], scope=a["scope"], offsets=tuple(a["offsets"]),
                  extents=tuple(a["extents"]), block_vars=tuple(a.get("block_vars", ())))


def _loop(d: Mapping[str, Any]) -> LoopInfo:
    """The loop of a graph's JSON (``block_trips`` back to a tuple; absent in graphs written before it)."""
    return LoopInfo(**{**d, "block_trips": tuple(d.get("block_trips", ()))})


def _enum_value(o: Any) -> Any:
    if isinstance(o, enum.Enum):
        return o.value
    raise TypeError(f"not serializable: {o!r}")
