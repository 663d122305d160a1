"""Measuring kernels on a GPU: one protocol for timing, one for correctness (tuning and benchmarks share it).

Timing: CUDA events around each call (queued back to back) or around the
replay of a captured CUDA graph (the host's launch path out, as serving
stacks run kernels), a warm-up measured in milliseconds, the median over
many calls, and inputs rotated over enough sets that their total exceeds
twice the L2 so repeated calls do not read warm tiles.
Correctness: every output of a call against the template's float32 PyTorch
reference on fresh random inputs (never zeros), ``||out - ref|| / ||ref||``
per output, with the free memory of PyTorch's CUDA caching allocator filled
with NaN before the call (:func:`nan_prefill`), so an output element the
kernel never writes reads NaN and fails the check.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Protocol, Sequence

import torch

__all__ = ["Timing", "Sampler", "Queued", "Graphed", "capture", "time_samplers", "time_interleaved",
           "time_replayed", "QUEUED", "GRAPH", "rel_err", "input_sets", "REL_TOL",
           "NanMemory", "nan_prefill", "OutputCheck", "check_call", "as_outputs", "kernel_outputs"]

# fp16/bf16 operands with fp32 accumulation. Every correct kernel of the recorded H200 runs, peers included,
# stayed under 7.5e-4 (fp16) and 5.9e-3 (bf16); a chunk_scan plan that read shared memory still being filled
# scored 7e-3 in fp16, which a bound of 1e-2 let through.
REL_TOL = {"float16": 2e-3, "bfloat16": 1e-2}
QUEUED, GRAPH = "queued", "cuda-graph"  # the two ways of timing a call


@dataclass(frozen=True)
class Timing:
    ms: float  # median
    p20: float
    p80: float
    calls: int


class Sampler(Protocol):
    """A way of timing one callable: ``sampler(samples, offset)`` returns one per-call time (ms) per sample,
    each sample covering ``calls_per_sample`` calls; ``offset`` rotates the input sets."""

    calls_per_sample: int

    def __call__(self, samples: int, offset: int = 0) -> list[float]: ...


def input_sets(make: Callable[[int], tuple], bytes_per_set: int, l2_bytes: int, max_sets: int = 16) -> list[tuple]:
    """Enough independent input sets (seeded 0, 1, ...) that cycling through them defeats the L2."""
    n = max(2, min(max_sets, math.ceil(2 * l2_bytes / max(bytes_per_set, 1))))
    return [make(seed) for seed in range(n)]


@dataclass(frozen=True)
class Queued:
    """Calls queued back to back: events around each call, one synchronize per sample batch, so the host's
    launch overhead hides behind the GPU's queue (as ``triton.testing.do_bench``) and a gap shows only
    where the host cannot keep the GPU busy."""

    fn: Callable[..., Any]
    sets: Sequence[tuple]
    calls_per_sample: int = 1

    def __call__(self, samples: int, offset: int = 0) -> list[float]:
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(samples)]
        for k, (start, end) in enumerate(events):
            start.record()
            self.fn(*self.sets[(offset + k) % len(self.sets)])
            end.record()
        torch.cuda.synchronize()
        return [start.elapsed_time(end) for start, end in events]


@dataclass(frozen=True)
class Graphed:
    """A CUDA graph of calls cycling through the input sets (:func:`capture`); a sample is one replay, its
    per-call time the replay's time over the calls it holds. It keeps the sets, whose memory the graph reads at
    every replay: a graph whose caller dropped them read freed memory, an illegal address once the allocator
    had handed it back (one H200, 2026-11-28: benchmarks/experiments/row_groups.py's first runs)."""

    graph: Any  # torch.cuda.CUDAGraph
    calls_per_sample: int
    sets: Sequence[tuple] = ()

    def __call__(self, samples: int, offset: int = 0) -> list[float]:
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(samples)]
        for start, end in events:
            start.record()
            self.graph.replay()
            end.record()
        torch.cuda.synchronize()
        return [start.elapsed_time(end) / self.calls_per_sample for start, end in events]


# A captured graph holds at least this much GPU time a replay (its calls cycling through the input sets), at most
# MAX_GRAPH_CALLS calls: a replay's own launch costs about 3 us on the device, which graphs of two calls charged to
# each as about 1.5 us (one H100, 2026-11-27: a decode kernel 27.3 us a call from graphs of 2, 26.0 from graphs of
# 16; benchmarks/results/2026-11-27-h100-graph-calls)
REPLAY_MIN_MS = 0.5
MAX_GRAPH_CALLS = 64


def capture(fn: Callable[..., Any], sets: Sequence[tuple], min_replay_ms: float = REPLAY_MIN_MS) -> Graphed:
    """Capture ``fn`` into one CUDA graph, once on each input set, the sets repeated until the graph holds about
    ``min_replay_ms`` of calls (their time taken from a warm call; :data:`MAX_GRAPH_CALLS` at most), after a
    warm-up on a side stream as ``torch.cuda.graphs`` asks; raises what the capture raised."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(side):
        for inputs in sets[:2]:
            fn(*inputs)
        start.record()
        fn(*sets[0])
        end.record()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    most = max(1, MAX_GRAPH_CALLS // len(sets))
    repeats = min(most, max(1, math.ceil(min_replay_ms / max(start.elapsed_time(end) * len(sets), 1e-3))))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(repeats):
            for inputs in sets:
                fn(*inputs)
    torch.cuda.synchronize()
    return Graphed(graph, repeats * len(sets), sets)


def _summary(times: list[float], calls: int) -> Timing:
    times = sorted(times)
    q = statistics.quantiles(times, n=5) if len(times) >= 5 else [times[0]] * 4
    return Timing(ms=statistics.median(times), p20=q[0], p80=q[3], calls=calls)


# Untimed calls of a sampler before each of its timed rounds (time_samplers' ``settle_ms``), long enough for a GPU
# at its power cap to reach the clock the sampler's own load sets (one H100: about half a second,
# benchmarks/experiments/graph_gap.py). The benchmarks time every system so, and the tuner its candidates, or
# one plan is timed at the clock another left (one H100, 2026-11-27: a 64x64 software pipeline measured 0.717 ms
# among the tuner's unsettled candidates and 0.826 ms settled in the suite, where the 192-row plan it beat ran
# 0.738)
SETTLE_MS = 500.0


def time_samplers(samplers: Mapping[Any, Sampler], rounds: int = 5, warmup_ms: float = 100.0,
                  round_ms: float = 100.0,
                  on_error: Callable[[Any, Exception], None] | None = None,
                  settle_ms: float = 0.0) -> dict[Any, Timing]:
    """Median per-call times of several samplers measured in alternating rounds.

    Clock and thermal drift during a run then touches every sampler alike, so their
    ratios are fair even when the absolute times wander. Each is first warmed up for
    ``warmup_ms`` (compile and launch caches), then timed for about ``round_ms`` per round;
    the order rotates from round to round. With ``settle_ms``, each sampler runs that long untimed before its
    timed share of a round, so that it is timed at the clock its own load sets: a GPU at its power cap
    clocks down within about half a second (one H100, 2026-11-26: 1980 MHz idle, 1275-1620 MHz under a
    LLaMA layer's CUDA graph at 690 W), and without settling a sampler is timed partly at the clock its
    predecessor left. With ``on_error``, a sampler that raises (out of memory beside the others' CUDA graphs)
    is told to it and dropped, and the rest are timed on; without, the error propagates.
    """
    live = dict(samplers)

    def sample(name: Any, count: int, offset: int) -> list[float] | None:
        try:
            return live[name](count, offset)
        except Exception as e:
            if on_error is None:
                raise
            if torch.cuda.is_available():
                torch.cuda.synchronize()  # a failure that broke the CUDA context stops the run here, loudly
            del live[name]
            on_error(name, e)
            return None

    per_sample = {}
    for name in list(live):
        spent, n = 0.0, 0
        while name in live and (spent < warmup_ms or n < 3):
            got = sample(name, 1, n)
            spent += got[0] * samplers[name].calls_per_sample if got else 0.0
            n += 1
        got = sample(name, 3, n) if name in live else None
        if got:
            per_sample[name] = max(statistics.median(got) * samplers[name].calls_per_sample, 1e-3)
    samples: dict[Any, list[float]] = {name: [] for name in live}
    order = list(live)
    for r in range(rounds if order else 0):
        for name in order[r % len(order):] + order[:r % len(order)]:
            if name not in live:
                continue
            count = int(max(3, min(200, round_ms / per_sample[name])))
            if settle_ms > 0 and sample(name, int(min(5000, max(1, settle_ms / per_sample[name]))), 0) is None:
                continue
            samples[name] += sample(name, count, r * count) or []
    return {name: _summary(samples[name], len(samples[name]) * samplers[name].calls_per_sample) for name in live}


def time_interleaved(fns: Mapping[str, Callable[..., Any]], sets: Sequence[tuple], rounds: int = 5,
                     warmup_ms: float = 100.0, round_ms: float = 100.0, settle_ms: float = 0.0) -> dict[str, Timing]:
    """:func:`time_samplers` of callables queued back to back (:class:`Queued`), inputs cycling through ``sets``."""
    return time_samplers({name: Queued(fn, sets) for name, fn in fns.items()}, rounds, warmup_ms, round_ms,
                         settle_ms=settle_ms)


def time_replayed(fns: Mapping[str, Callable[..., Any]], sets: Sequence[tuple], rounds: int = 5,
                  warmup_ms: float = 100.0, round_ms: float = 100.0,
                  settle_ms: float = 0.0) -> tuple[str, dict[str, Timing]]:
    """(way, timings): every callable replayed from a CUDA graph of calls cycling through the input sets
    (``GRAPH``, :func:`capture`), as the benchmarks' headline times them; if any capture fails, all are timed
    queued (``QUEUED``), so the callables are always compared one way. Where calls are short, queued timing
    measures the host's launch path, which is the same for every plan of a template, and ties them."""
    try:
        graphs = {name: capture(fn, sets) for name, fn in fns.items()}
    except Exception:  # a callable that cannot be captured: compare all of them queued
        torch.cuda.synchronize()  # a capture that broke the CUDA context stops here, loudly
        return QUEUED, time_interleaved(fns, sets, rounds, warmup_ms, round_ms, settle_ms)
    return GRAPH, time_samplers(graphs, rounds, warmup_ms, round_ms, settle_ms=settle_ms)


def rel_err(out: Any, ref: Any) -> float:
    """``||out - ref|| / ||ref||`` in float64; NaN or Inf anywhere gives ``inf``."""
    o, r = out.double(), ref.double()
    if not torch.isfinite(o).all():
        return math.inf
    return float(torch.linalg.vector_norm(o - r) / torch.linalg.vector_norm(r).clamp_min(1e-30))


# ---------------------------------------------------------------------------------------------- correctness

_POISON_BYTE = 0xFF  # 0xFF.. is NaN in float32, float16, bfloat16 and the fp8 formats (-1 in integers)
_SMALL_REQUEST = 1 << 20  # the caching allocator serves requests up to 1 MiB from its small pool
_SWEEPS = 4  # rounds of taking the allocator's free blocks (a small block may need two requests)


@dataclass(frozen=True)
class NanMemory:
    """The device memory :func:`nan_prefill` filled with NaN: ``covers(t)`` says whether a tensor lies in it."""

    ranges: tuple[tuple[int, int], ...] = ()  # (start, end) byte addresses, merged and sorted

    def covers(self, t: Any) -> bool:
        start = t.untyped_storage().data_ptr()
        end = start + t.untyped_storage().nbytes()
        return any(lo <= start and end <= hi for lo, hi in self.ranges)


def _merged(ranges: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return tuple(out)


def _free_blocks(snapshot: Sequence[Mapping[str, Any]], device: int, stream: int) -> list[tuple[int, bool]]:
    """(bytes, in the small pool) of every free block the allocator could hand to a request on ``stream``
    (CUDA-graph pools excluded)."""
    out = []
    for seg in snapshot:
        if seg["device"] != device or seg.get("stream", stream) != stream or any(seg.get("segment_pool_id") or ()):
            continue
        small = seg.get("segment_type") == "small"
        out += [(b["size"], small) for b in seg["blocks"] if b["state"] == "inactive"]
    return out


def nan_prefill(device: Any, reserve_bytes: int = 64 << 20) -> NanMemory:
    """Fill the free memory of PyTorch's CUDA caching allocator on ``device`` with NaN, for the next call.

    Every free block of the current stream is taken, fresh segments are added (``reserve_bytes`` in
    the large pool, a few in the small one), all are filled with ``0xFF`` bytes and handed back: any
    tensor the next call allocates through the caching allocator (PyTorch, Inductor, Triton wrappers,
    TileLang's TVM-FFI outputs) then starts as NaN, and :meth:`NanMemory.covers` tells which did.
    Live tensors (inputs) are untouched. Off CUDA nothing is filled.
    """
    device = torch.device(device)
    if device.type != "cuda":
        return NanMemory()
    index = device.index if device.index is not None else torch.cuda.current_device()
    torch.cuda.synchronize(index)
    torch.cuda.empty_cache()
    stream = torch.cuda.current_stream(index).cuda_stream
    held = []
    for _ in range(_SWEEPS):
        free = _free_blocks(torch.cuda.memory_snapshot(), index, stream)
        if not free:
            break
        held += [torch.empty(min(size, _SMALL_REQUEST) if small else size, dtype=torch.uint8, device=device)
                 for size, small in free]
    held.append(torch.empty(max(reserve_bytes, 2 * _SMALL_REQUEST), dtype=torch.uint8, device=device))
    held += [torch.empty(_SMALL_REQUEST, dtype=torch.uint8, device=device) for _ in range(4)]
    for t in held:
        t.fill_(_POISON_BYTE)
    memory = NanMemory(_merged([(t.data_ptr(), t.data_ptr() + t.numel()) for t in held]))
    del held  # back to the free lists, NaN-filled; the fills come first in stream order
    return memory


@dataclass(frozen=True)
class OutputCheck:
    """One output of a checked call: its relative error and what its memory held before the call
    (``"nan"``: NaN-prefilled; ``"zero"``: an in/out accumulator handed over zeroed, as its contract
    says; ``"unverified"``: memory :func:`nan_prefill` did not fill, e.g. a fresh ``cudaMalloc``)."""

    rel_err: float
    prefill: str


def as_outputs(result: Any) -> tuple:
    """A call's result as a tuple of outputs."""
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)


def kernel_outputs(template: Any, kernel: Callable[..., Any]) -> Callable[..., Any]:
    """A compiled template kernel as a function of its inputs that returns every output in the order of
    the template's reference: its ``out_idx`` results, then the inputs it updates in place
    (``template.inout_idx``, e.g. the row sums of ``gemm_rowsum``)."""
    inout = tuple(template.inout_idx)
    if not inout:
        return kernel

    def call(*inputs: Any) -> tuple:
        return (*as_outputs(kernel(*inputs)), *(inputs[i] for i in inout))

    return call


def check_call(fn: Callable[..., Any], inputs: Sequence[Any], refs: Sequence[Any], *, inout: Sequence[int] = (),
               prefill: Callable[[Any, int], NanMemory] = nan_prefill) -> tuple[OutputCheck, ...]:
    """Call ``fn`` once on ``inputs`` with NaN in the allocator's free memory (``prefill``) and compare every
    output with ``refs``; the inputs at ``inout`` (accumulators the call adds into) are copied first, so
    each checked call starts from the inputs' values. Raises ValueError when the outputs do not match the
    reference in number or size."""
    given = [t.clone() if i in inout else t for i, t in enumerate(inputs)]
    reserve = sum(2 * r.numel() * r.element_size() for r in refs) + (64 << 20)
    nan = prefill(refs[0].device, reserve)
    outs = as_outputs(fn(*given))
    if refs[0].device.type == "cuda":
        torch.cuda.synchronize()
    if len(outs) != len(refs):
        raise ValueError(f"the call returned {len(outs)} output(s), the reference has {len(refs)}")
    checks = []
    for k, (out, ref) in enumerate(zip(outs, refs)):
        if out.numel() != ref.numel():
            raise ValueError(f"output {k} has {out.numel()} elements, the reference {ref.numel()}")
        accumulator = any(out.data_ptr() == given[i].data_ptr() for i in inout)
        prefill = "zero" if accumulator else "nan" if nan.covers(out) else "unverified"
        checks.append(OutputCheck(rel_err(out.reshape(ref.shape), ref), prefill))
    return tuple(checks)
