"""Stream-K: a persistent kernel's blocks share out the output tiles' k-iterations, not whole tiles.

With ``T = tiles * n`` iterations (``n`` the pipelined loop's trip count) and ``W`` blocks, block ``w`` runs
iterations ``[w*T//W, (w+1)*T//W)``: a run of segments, each a part of one tile's k-range, so no block waits
on a last, partly filled wave. A tile's first segment (``k0 == 0``) is the last of its block's range and
ends last; the tile's other segments are each the first of a later block. Those publish their fp32 partial
sums to their block's workspace slot and raise its flag; the block with the first segment waits for each
flag, adds the partials and runs the epilogue. The arithmetic runs on ints (cost model, verify, tests) and
on TIR expressions (emission), like :meth:`pt_tvm.plan.TileOrder.coords`.

The blocks that read one operand tile run it at different k, so none shares it in L2: on one H100 the LLaMA
layer's GEMMs at 512-2500 tokens ran 1.1-2.2x slower split than in whole tiles, weights read from DRAM once per
row of tiles (benchmarks/results/2026-11-26-h100-stream-k). The cost model prices that, and the search tries
splits only when asked (:attr:`pt_tvm.space.SearchSpace.stream_k`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .graph import Placement, STaskGraph
from .hw import SEUKind
from .plan import ExecutionPlan

__all__ = ["Split", "accumulator", "runs_unskewed", "fixup_source", "FIXUP_NAMESPACE"]

FIXUP_NAMESPACE = "pt_sk"


@dataclass(frozen=True)
class Split:
    """``tiles`` output tiles of ``n`` k-iterations each, shared by ``workers`` blocks."""

    tiles: int
    n: int
    workers: int

    def __post_init__(self) -> None:
        if self.tiles * self.n < self.workers:  # every block must hold an iteration: a tile's blocks all publish
            raise ValueError(f"stream-K: {self.tiles} tiles x {self.n} iterations leave some of {self.workers} "
                             "blocks without work")

    @property
    def total(self) -> int:
        return self.tiles * self.n

    def begin(self, w: Any) -> Any:
        """Block ``w``'s first iteration."""
        return w * self.total // self.workers

    def end(self, w: Any) -> Any:
        """One past block ``w``'s last iteration."""
        return (w + 1) * self.total // self.workers

    def owner(self, x: Any) -> Any:
        """The block whose range holds iteration ``x``."""
        return ((x + 1) * self.workers - 1) // self.total

    def segment(self, w: Any, s: Any, lo_max: Callable[[Any, Any], Any] = max,
                hi_min: Callable[[Any, Any], Any] = min) -> tuple[Any, Any, Any]:
        """``(tile, k0, k1)`` of block ``w``'s ``s``-th segment; empty (``k0 >= k1``) past its range."""
        begin, end = self.begin(w), self.end(w)
        tile = begin // self.n + s
        return tile, lo_max(begin, tile * self.n) - tile * self.n, hi_min(end, tile * self.n + self.n) - tile * self.n

    def last_contributor(self, tile: Any) -> Any:
        """The block holding the tile's last iteration (the tile's first is at ``owner(tile * n)``)."""
        return self.owner(tile * self.n + self.n - 1)

    @property
    def segments(self) -> int:
        """The most segments any block runs: the loop count of the kernel's walk."""
        return max((self.end(w) - 1) // self.n - self.begin(w) // self.n + 1
                   for w in range(self.workers) if self.end(w) > self.begin(w))

    @property
    def iterations(self) -> int:
        """The most k-iterations any block runs."""
        return -(-self.total // self.workers)


def accumulator(graph: STaskGraph) -> tuple[str, str]:
    """``(gemm, buffer)``: the loop's one tensor-core sTask and the fragment it sums into, when that fragment is
    all the loop carries from one iteration to the next (a split adds partial sums of it); else ValueError
    naming what else the loop carries."""
    gemms = [t for t in graph.loop_stasks if t.seu == SEUKind.TENSOR_CORE]
    carried = {e.buffer for e in graph.edges if e.loop_carried and graph.by_id[e.src].placement == Placement.LOOP
               and graph.by_id[e.dst].placement == Placement.LOOP and graph.buffers[e.buffer].scope == "fragment"}
    if len(gemms) != 1 or carried != set(gemms[0].write_buffers()):
        raise ValueError(f"the loop's iterations carry {sorted(carried) or 'nothing'} through "
                         f"{len(gemms)} tensor-core sTasks, not one gemm's accumulator alone")
    return gemms[0].id, next(iter(carried))


def runs_unskewed(plan: ExecutionPlan, graph: STaskGraph) -> bool:
    """Whether the plan's loop runs without stage offsets, wgmma in flight or turns: what a split needs, since a
    segment may be one iteration long."""
    return not (plan.in_flight() or plan.handoffs or len({plan.append_of(t.id).stage for t in graph.loop_stasks}) > 1)


def fixup_source(split: Split, regs: int, lo: int, threads: int) -> str:
    """CUDA for a stream-K kernel's partial sums: a ``W x tile`` fp32 workspace and ``W`` flags in static device
    memory (zero at module load; the flags are left zero again by each launch), ``publish`` (a block stores its
    accumulator's ``regs`` registers a thread, thread-major, so the block that adds them reads them back in its
    own fragment layout, then raises its flag once per thread) and ``accumulate`` (wait for a block's flag, add
    its partials; the last reader resets the flag). ``lo``: the accumulator role's first thread; ``threads``: its
    thread count."""
    if regs % 4:
        raise ValueError(f"stream-K: the accumulator's {regs} registers a thread are not a multiple of 4")
    quads = regs // 4
    return f"""
namespace {FIXUP_NAMESPACE} {{
__device__ float4 ws[{split.workers * quads * threads}];
__device__ int flags[{split.workers}];
__device__ __forceinline__ void publish(const float* acc, int w) {{
  float4* dst = ws + (size_t)w * {quads * threads} + (threadIdx.x - {lo});
  #pragma unroll
  for (int r = 0; r < {quads}; ++r)
    __stcg(dst + r * {threads}, make_float4(acc[4 * r], acc[4 * r + 1], acc[4 * r + 2], acc[4 * r + 3]));
  __threadfence();
  atomicAdd(flags + w, 1);
}}
__device__ __forceinline__ void accumulate(float* acc, int w) {{
  int seen;
  do {{
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(seen) : "l"(flags + w) : "memory");
  }} while (seen < {threads});
  const float4* src = ws + (size_t)w * {quads * threads} + (threadIdx.x - {lo});
  #pragma unroll
  for (int r = 0; r < {quads}; ++r) {{
    float4 p = __ldcg(src + r * {threads});
    acc[4 * r] += p.x; acc[4 * r + 1] += p.y; acc[4 * r + 2] += p.z; acc[4 * r + 3] += p.w;
  }}
  if (atomicAdd(flags + w, 1) == {2 * threads - 1}) atomicExch(flags + w, 0);
}}
}}  // namespace {FIXUP_NAMESPACE}
"""
