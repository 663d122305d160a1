"""GPU experiment (issue 14): why the LLaMA layer's CUDA-graph time with pt-tvm's ops is 12-15% over the sum of
its kernels profiled apart, where torch.compile's is 6-8% (2026-11-26 layers runs).

Per system (torch-compile, pt-tvm+compile) on one LLaMA-3-8B layer config: the graph the suite times (one call
per input set, :func:`pt_tvm.measure.capture`) replayed for ``SUSTAIN_S`` seconds with the SM clock, power and
clock-event reasons sampled by ``nvidia-smi``; then torch.profiler over replays of that graph (each kernel's
duration inside the graph, the span of a replay and the idle time between kernels); then the suite's own
profile (three eager calls on one input set, :func:`benchmarks.layers.suite.kernel_profile`'s protocol); then
the graph after the GPU idled a second (a cool start). Whether the excess is gaps between kernels, kernels that
run slower inside the sustained graph, or clocks, reads off the table.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.graph_gap $OUT [SEQLEN ...]``.
Writes ``graph_gap.json`` and the profiler traces.
"""
import json
import os
import statistics
import subprocess
import sys
import time

import torch

from benchmarks.layers.models import LAYERS
from benchmarks.layers.suite import _build, kernel_profile
from benchmarks.layers.warm import Warmer, kernel_calls
from benchmarks.suite import header
from pt_tvm.measure import capture, input_sets

SYSTEMS = ("torch-compile", "pt-tvm+compile")
SUSTAIN_S = 2.0
PROFILED_REPLAYS = 5


class Sampler:
    """``nvidia-smi`` sampling the SM clock, power and clock-event reasons every 20 ms into a file."""

    FIELDS = "timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active"

    def __init__(self, path):
        self.path = path
        self.proc = subprocess.Popen(["nvidia-smi", f"--query-gpu={self.FIELDS}", "--format=csv,noheader,nounits",
                                      "-lms", "20", "-f", path], stderr=subprocess.DEVNULL)
        time.sleep(0.3)

    def stop(self):
        self.proc.terminate()
        self.proc.wait()

    def between(self, t0, t1):
        """Median SM MHz, watts, max temperature and the set of event-reason masks sampled in [t0, t1]."""
        rows = []
        for line in open(self.path):
            parts = [p.strip() for p in line.split(",")]
            if len(parts) < 5:
                continue
            try:
                ts = time.mktime(time.strptime(parts[0].split(".")[0], "%Y/%m/%d %H:%M:%S"))
                ts += float("0." + parts[0].split(".")[1]) if "." in parts[0] else 0.0
                rows.append((ts, float(parts[1]), float(parts[2]), float(parts[3]), parts[4]))
            except ValueError:
                continue
        rows = [r for r in rows if t0 <= r[0] <= t1]
        if not rows:
            return {"samples": 0}
        return {"samples": len(rows), "sm_mhz": statistics.median(r[1] for r in rows),
                "sm_mhz_min": min(r[1] for r in rows), "watts": statistics.median(r[2] for r in rows),
                "temp_c": max(r[3] for r in rows), "reasons": sorted({r[4] for r in rows})}


def replays(graph, seconds):
    """Replay for about ``seconds``; per-call milliseconds of each replay."""
    out, t_end = [], time.time() + seconds
    while time.time() < t_end:
        out += graph(20)
    return out


def traced(fn, path):
    """Kernels of ``fn()`` under torch.profiler: [(name, start_us, dur_us)] sorted by start; trace kept."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    prof.export_chrome_trace(path)
    events = json.load(open(path))["traceEvents"]
    kernels = [(e["name"], float(e["ts"]), float(e["dur"])) for e in events
               if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "dur" in e]
    return sorted(kernels, key=lambda k: k[1])


def per_kernel(kernels, calls):
    """{kernel name: microseconds per layer call} and the whole busy time, span and idle time per call."""
    by = {}
    for name, _, dur in kernels:
        by[name[:80]] = by.get(name[:80], 0.0) + dur / calls
    busy = sum(k[2] for k in kernels) / calls
    span = (kernels[-1][1] + kernels[-1][2] - kernels[0][1]) / calls if kernels else 0.0
    return by, busy, span


def run(out, seqlens):
    command = "python -m benchmarks.experiments.graph_gap $OUT " + " ".join(map(str, seqlens))
    head = header(command, torch.cuda.get_device_name())
    print("device:", head["device"], flush=True)
    configs = [{"batch": 1, "seqlen": s, "dtype": "float16"} for s in seqlens]
    results = []
    sampler = Sampler(os.path.join(out, "smi.csv"))
    with Warmer([kernel_calls("llama3-8b", c) for c in configs], max(1, (os.cpu_count() or 2) - 1)) as warmer, \
            torch.no_grad():
        for i, problem in enumerate(configs):
            torch._dynamo.reset()
            layer = LAYERS["llama3-8b"](device="cuda", dtype=torch.float16).reset(seed=0)
            shape = (problem["batch"], problem["seqlen"], layer.width)

            def make(seed):
                g = torch.Generator(device="cuda").manual_seed(1000 + seed)
                return (torch.randn(shape, generator=g, device="cuda").to(torch.float16),)

            sets = input_sets(make, make(0)[0].numel() * 2, torch.cuda.get_device_properties(0).L2_cache_size)
            warmer.wait(i)
            for system in SYSTEMS:
                fn, _ = _build(system, layer)
                fn(*sets[0])
                graph = capture(fn, sets)
                tag = f"{system.replace('+', '-')}-s{problem['seqlen']}"
                t0 = time.time()
                sustained = replays(graph, SUSTAIN_S)
                t1 = time.time()
                in_graph = traced(lambda g=graph: [g.graph.replay() for _ in range(PROFILED_REPLAYS)],
                                  os.path.join(out, f"trace-{tag}-graph.json"))
                calls = PROFILED_REPLAYS * graph.calls_per_sample
                kernels_g, busy_g, span_g = per_kernel(in_graph, calls)
                apart = traced(lambda f=fn: [f(*sets[0]) for _ in range(3)],
                               os.path.join(out, f"trace-{tag}-apart.json"))
                kernels_a, busy_a, _ = per_kernel(apart, 3)
                suite_top = kernel_profile(fn, sets[0])
                torch.cuda.synchronize()
                time.sleep(1.0)
                t2 = time.time()
                cool = graph(3)
                t3 = time.time()
                row = {"system": system, "config": problem, "graph_ms": statistics.median(sustained),
                       "graph_ms_p20_p80": statistics.quantiles(sustained, n=5)[::3], "replays": len(sustained),
                       "in_graph_busy_us": busy_g, "in_graph_span_us": span_g,
                       "in_graph_idle_us": span_g - busy_g, "apart_busy_us": busy_a,
                       "suite_profile_top_sum_us": sum(k["us"] for k in suite_top),
                       "cool_ms": cool,
                       "windows": {"sustained": (t0 + SUSTAIN_S / 2, t1), "cool": (t2 - 0.5, t3 + 0.05)},
                       "kernels_in_graph_us": kernels_g, "kernels_apart_us": kernels_a,
                       "launches_in_graph_per_call": len(in_graph) / calls}
                results.append(row)
                print(f"{tag}: graph {row['graph_ms']:.3f} ms, in-graph busy {busy_g:.0f} us span {span_g:.0f} "
                      f"(idle {span_g - busy_g:.0f}), apart busy {busy_a:.0f}, "
                      f"suite top {row['suite_profile_top_sum_us']:.0f}"
                      f", cool {min(cool):.3f} ms", flush=True)
                for name in sorted(kernels_g, key=kernels_g.get, reverse=True)[:8]:
                    print(f"    {kernels_g[name]:9.1f} in graph  {kernels_a.get(name, float('nan')):9.1f} apart  "
                          f"{name[:70]}", flush=True)
                del graph, fn
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
    time.sleep(0.5)
    sampler.stop()  # the clocks are read once nvidia-smi has written its last samples
    for row in results:
        row["clocks"] = {k: sampler.between(*w) for k, w in row.pop("windows").items()}
        print(f"{row['system']} s{row['config']['seqlen']}: {row['clocks']}", flush=True)
    with open(os.path.join(out, "graph_gap.json"), "w") as f:
        json.dump({"header": head, "rows": results}, f, indent=1)


if __name__ == "__main__":
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"]
    run(out_dir, [int(s) for s in sys.argv[2:]] or [4096])
