"""How long pt-tvm's schedule search takes on a CPU, per template and config, beside published figures.

The measured time is :func:`pt_tvm.compiler.schedule_template` from a cold
start per config (no plan cache): building and extracting every candidate
tile's PrimFunc, then the two-level search priced by the cost model. No GPU
is used. Measured refinement (``pt_tvm.tune``) adds GPU compile-and-time of
the top k plans on top of this; that is not measured here.

The published column quotes what each work reports; where we have no figure
we could check, it says "see paper" rather than a number.
"""
from __future__ import annotations

import os
import platform
import statistics
import sys
import time
from typing import Any, Mapping, Sequence

from pt_tvm import hw, templates
from pt_tvm.compiler import schedule_template

from .suite import Config, _short

__all__ = ["PUBLISHED", "default_configs", "measure_search_times", "format_table", "cpu_description"]

# (system, how it searches, published search time)
PUBLISHED: tuple[tuple[str, str, str], ...] = (
    ("TileLang autotuner (tilelang.autotune)", "compiles and times each candidate on the GPU",
     "minutes; grows with the number of candidates"),
    ("PipeThreader (OSDI'25)", "schedules the sTask-graph onto specialized execution units", "see paper"),
    ("Twill", "software pipelining and warp specialization", "see paper"),
)


def default_configs() -> list[Config]:
    """Each template at its default problem, plus FlashAttention's other head dims, causal and GQA, and decoding
    over a paged and a contiguous cache."""
    out = [Config("search-time", name, {}, ("pt-tvm",)) for name in ("gemm", "gemm_rowsum", "flash_attention")]
    fa = dict(batch=4, heads=16, kv_heads=16, seq_len=4096, dim=128, causal=False, dtype="float16")
    out += [Config("search-time", "flash_attention", {**fa, **o}, ("pt-tvm",), note) for o, note in (
        (dict(dim=64, heads=32, kv_heads=32), "d64"), (dict(dim=256, heads=8, kv_heads=8), "d256"),
        (dict(causal=True), "causal"), (dict(kv_heads=8), "gqa 16/8"))]
    out.append(Config("search-time", "gemm", dict(M=8192, N=14336, K=4096), ("pt-tvm",), "llama3-8b up"))
    out += [Config("search-time", "chunk_scan", {}, ("pt-tvm",))]
    dec = dict(batch=1, q_len=1, heads=32, kv_heads=8, kv_len=16384, dim=128, dtype="bfloat16", page_size=16,
               dynamic=True)
    out += [Config("search-time", "decode_attention", {**dec, **o}, ("pt-tvm",), note) for o, note in (
        ({}, "batch 1 x 16k paged"), (dict(batch=32, q_len=4, heads=64, kv_len=4096, page_size=0), "batch 32 x 4k"))]
    return out



def measure_search_times(configs: Sequence[Config], target: Any, *, repeat: int = 1,
                         log: Any = None) -> list[dict]:
    """One row per config: wall seconds of ``schedule_template`` (min over ``repeat``), its search share,
    tiles and plans considered. The first config of each template is searched once untimed first
    (imports, TVM's first-call costs)."""
    log = sys.stdout if log is None else log  # the stream of the call, not of import time
    vdev = hw.get(target) if isinstance(target, str) else target
    warmed = set()
    rows = []
    for cfg in configs:
        problem, _ = templates.get(cfg.kernel).resolve(**cfg.problem)
        if cfg.kernel not in warmed:  # first use of a template pays one-time costs: not reported
            schedule_template(cfg.kernel, vdev, params=problem)
            warmed.add(cfg.kernel)
        walls, result = [], None
        for _ in range(max(1, repeat)):
            t0 = time.perf_counter()
            result, _, _ = schedule_template(cfg.kernel, vdev, params=problem)
            walls.append(time.perf_counter() - t0)
        tiles = len({tuple(sorted(c.plan.tile.items())) for c in result.ranked})
        row = {"kernel": cfg.kernel, "config": dict(problem), "note": cfg.note, "target": vdev.name,
               "wall_s": round(min(walls), 3), "wall_s_all": [round(w, 3) for w in walls],
               "search_s": round(result.seconds, 3), "plans_considered": result.considered,
               "tiles_ranked": tiles, "best_plan": result.best.note,
               "predicted_ms": result.best.seconds * 1e3}
        rows.append(row)
        print(f"{cfg.kernel:<16} {_short(problem):<60} {row['wall_s']:7.2f} s  "
              f"({row['plans_considered']} plans)", file=log, flush=True)
    return rows


def cpu_description() -> dict:
    """The CPU the times were measured on."""
    model = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        load = [round(x, 2) for x in os.getloadavg()]  # other work on the machine inflates the times
    except OSError:
        load = None
    return {"cpu": model or "unknown", "cpu_count": os.cpu_count(), "load_avg_1_5_15min": load,
            "python": platform.python_version()}


def format_table(rows: Sequence[Mapping[str, Any]], cpu: Mapping[str, Any] | None = None) -> str:
    """The measured times as Markdown, then the published figures for comparison."""
    target = rows[0]["target"] if rows else "?"
    lines = [f"pt-tvm search time on the CPU (target model {target}"
             + (f"; {cpu['cpu']}, {cpu['cpu_count']} cores" if cpu else "")
             + (f", load average {cpu['load_avg_1_5_15min'][0]}" if cpu and cpu.get("load_avg_1_5_15min") else "")
             + ", no GPU):", "",
             "| template | config | plans | search s | total s |", "|---|---|---|---|---|"]
    for r in rows:
        label = _short(r["config"]) + (f" ({r['note']})" if r.get("note") else "")
        lines.append(f"| {r['kernel']} | {label} | {r['plans_considered']} | {r['search_s']:.2f} | "
                     f"{r['wall_s']:.2f} |")
    if rows:
        lines.append(f"| median | | | {statistics.median(r['search_s'] for r in rows):.2f} | "
                     f"{statistics.median(r['wall_s'] for r in rows):.2f} |")
    lines += ["", "Published search times, for comparison:", "", "| system | how it searches | search time |",
              "|---|---|---|"]
    lines += [f"| {name} | {how} | {fig} |" for name, how, fig in PUBLISHED]
    lines += ["| pt-tvm (this table) | cost-model search on the CPU, then the top-k plans measured on the GPU "
              "(pt_tvm.tune; not in these times) | measured above |"]
    return "\n".join(lines)
