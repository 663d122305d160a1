"""Stream-K: a persistent kernel's blocks share out the k-iterations of the tiles a last, partly filled wave would
leave to a few of them.

With ``T`` tiles of ``n`` k-iterations on ``W`` blocks, block ``w`` first runs whole tiles ``w, W + w, ...`` while
they fill every block (``T // W`` waves, as a persistent walk does), then the ``R = T % W`` tiles left over: block
``w < R`` runs the first ``h = ceil(R * n / W)`` iterations of tile ``w`` (its *head*), and the other blocks share
out the tiles' remaining iterations (their *tails*) evenly, in tile order, so every block runs about
``T * n / W`` iterations. A tail segment publishes its fp32 partial sums to a workspace slot and raises its flag;
the head's block waits for each flag of its tile, adds the partials and runs the epilogue. The arithmetic runs
on ints (cost model, verify, tests); emission writes its result into the kernel as a table (:func:`fixup_source`).

The heads start together at ``k = 0`` and run in step, as whole tiles do, so the blocks of heads that read one
operand tile read it from L2 one after another; a tail block runs neighbouring tiles' tails, which share their
weights, one after another. (The first split, ``T * n`` iterations cut into ``W`` even runs, started every
tile at a different k: on one H100 the LLaMA layer's GEMMs at 512-2500 tokens ran 1.1-2.2x slower than whole
tiles, weights reread from DRAM; benchmarks/results/2026-11-26-h100-stream-k.)
"""
from __future__ import annotations

from dataclasses import dataclass

from .graph import Placement, STaskGraph
from .hw import SEUKind
from .plan import ExecutionPlan

__all__ = ["Split", "accumulator", "runs_unskewed", "fixup_source", "FIXUP_NAMESPACE"]

FIXUP_NAMESPACE = "pt_sk"


@dataclass(frozen=True)
class Split:
    """``tiles`` output tiles of ``n`` k-iterations each, walked by ``workers`` blocks: whole ``waves``, then the
    ``rest`` tiles' heads (``head`` iterations, a block each) and tails (``tail`` iterations, shared out evenly
    by ``tail_workers`` blocks)."""

    tiles: int
    n: int
    workers: int

    def __post_init__(self) -> None:
        if self.rest == 0:
            raise ValueError(f"stream-K: {self.tiles} tiles fill whole waves of {self.workers} blocks")
        if self.tail < 1:
            raise ValueError(f"stream-K: {self.rest} tiles of {self.n} iterations on {self.workers} blocks leave "
                             "nothing to split beyond a tile a block")

    @property
    def waves(self) -> int:
        return self.tiles // self.workers

    @property
    def rest(self) -> int:
        return self.tiles % self.workers

    @property
    def head(self) -> int:
        return -(-self.rest * self.n // self.workers)

    @property
    def tail(self) -> int:
        return self.n - self.head

    @property
    def tail_workers(self) -> int:
        """The blocks after the heads' that run tails: as many as have an iteration to run."""
        return min(self.workers - self.rest, self.rest * self.tail)

    def _tail_range(self, v: int) -> tuple[int, int]:
        """Tail block ``v``'s iterations in the tails' order (tile-major)."""
        total, blocks = self.rest * self.tail, self.tail_workers
        return v * total // blocks, (v + 1) * total // blocks

    @property
    def tail_quota(self) -> int:
        """The most tail iterations any tail block runs."""
        return -(-self.rest * self.tail // self.tail_workers)

    def tail_owner(self, x: int) -> int:
        """The tail block whose range holds tail iteration ``x``."""
        total = self.rest * self.tail
        return ((x + 1) * self.tail_workers - 1) // total

    def segment(self, w: int, s: int) -> tuple[int, int, int]:
        """``(tile, k0, k1)`` of block ``w``'s ``s``-th segment; empty (``k0 >= k1``) past its work."""
        if s < self.waves:
            return s * self.workers + w, 0, self.n
        j, v = s - self.waves, w - self.rest
        if v < 0:
            return self.waves * self.workers + w, 0, self.head if j == 0 else 0
        if v >= self.tail_workers:
            return 0, 0, 0
        b, e = self._tail_range(v)
        t = b // self.tail + j
        return (self.waves * self.workers + t, self.head + max(b, t * self.tail) - t * self.tail,
                self.head + min(e, t * self.tail + self.tail) - t * self.tail)

    def slot(self, t: int, v: int) -> int:
        """The workspace slot (and flag) of tail block ``v``'s partial sums of rest tile ``t``: ``t + v`` grows
        along the tails' order, so no two partials share one, and stays below ``workers``."""
        return t + v

    def contributors(self, t: int) -> tuple[int, int]:
        """The first and last tail blocks holding rest tile ``t``'s tail."""
        return self.tail_owner(t * self.tail), self.tail_owner(t * self.tail + self.tail - 1)

    def added(self, t: int) -> int:
        """How many partial sums rest tile ``t``'s head adds."""
        first, last = self.contributors(t)
        return last - first + 1

    @property
    def tail_segments(self) -> int:
        """The most tail segments (partial sums published) any tail block runs."""
        def count(v: int) -> int:
            b, e = self._tail_range(v)
            return (e - 1) // self.tail - b // self.tail + 1
        return max(count(v) for v in range(self.tail_workers))

    @property
    def segments(self) -> int:
        """The most segments any block runs: the loop count of the kernel's walk."""
        return self.waves + self.tail_segments

    @property
    def iterations(self) -> int:
        """The most k-iterations any block runs."""
        return self.waves * self.n + max(self.head, self.tail_quota)

    @property
    def adds(self) -> int:
        """The most partial sums a head's block adds."""
        return max(self.added(t) for t in range(self.rest))


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
    """CUDA for a stream-K kernel: the split's segments (``tile``, ``k_begin``, ``k_end``, ``slot`` of block ``w``'s
    ``s``-th; whole tiles computed, the rest read from a static table, which keeps the kernel's index arithmetic
    and registers those of a persistent walk), ``adds`` (how many slots from its own a head adds), a
    ``workers x tile`` fp32 workspace and its flags in static device memory (zero at module load; each launch
    leaves the flags zero again), ``publish`` (a block stores its accumulator's ``regs`` registers a thread,
    thread-major, so the head reads them back in its own fragment layout, then raises the slot's flag once per
    thread) and ``accumulate`` (wait for a slot's flag, add its partials; the last reader resets the flag).
    ``lo``: the accumulator role's first thread; ``threads``: its thread count."""
    if regs % 4:
        raise ValueError(f"stream-K: the accumulator's {regs} registers a thread are not a multiple of 4")
    quads, rows = regs // 4, split.tail_segments
    entries = []
    for w in range(split.workers):
        for s in range(split.waves, split.segments):
            tile, k0, k1 = split.segment(w, s)
            t, v = tile - split.waves * split.workers, w - split.rest
            slot = split.slot(t, v) if k0 > 0 else split.slot(t, split.contributors(t)[0]) if k1 > k0 else 0
            entries.append(f"{{{t},{k0},{k1},{slot}}}")
    adds = [split.added(t) for t in range(split.rest)]
    return f"""
namespace {FIXUP_NAMESPACE} {{
__device__ const int4 rest[{len(entries)}] = {{{",".join(entries)}}};
__device__ const int added[{len(adds)}] = {{{",".join(map(str, adds))}}};
__device__ __forceinline__ int4 segment(int w, int s) {{
  if (s < {split.waves}) return make_int4(s * {split.workers} + w, 0, {split.n}, 0);
  int4 r = rest[w * {rows} + s - {split.waves}];
  r.x += {split.waves * split.workers};
  return r;
}}
__device__ __forceinline__ int tile(int w, int s) {{ return segment(w, s).x; }}
__device__ __forceinline__ int k_begin(int w, int s) {{ return segment(w, s).y; }}
__device__ __forceinline__ int k_end(int w, int s) {{ return segment(w, s).z; }}
__device__ __forceinline__ int slot(int w, int s) {{ return segment(w, s).w; }}
__device__ __forceinline__ int adds(int w) {{ return added[w]; }}
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
