"""GPU experiment (issue 15): GEMM with its output tiles walked in panels (L2 reuse) and persistently, against
the same search's best plan in launch order and cuBLAS, in one process on one GPU.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.tile_walk $OUT``
(about 6 minutes on one H100). Per config, one search; from its ranking the best plan in launch order
(what the search offered before tile orders), the best walked in panels, the best walked persistently,
and the best plans of the other tile shape in launch order and in panels (the 128x256 / 256x128
question: does the order rescue the slower one?); each checked on
every output against the float32 reference on fresh random inputs (NaN-prefilled), then timed in
alternating rounds with inputs rotated past the L2. Prints a table, writes ``tile_walk.json``.
"""
import json
import os
import sys
import time

import torch

from benchmarks.configs import LLAMA3_SHAPES
from benchmarks.suite import header
from benchmarks.systems import build_system
from pt_tvm import hw, templates
from pt_tvm.compiler import planned_func, schedule_template
from pt_tvm.measure import REL_TOL, as_outputs, check_call, input_sets, time_interleaved
from pt_tvm.tune import compile_jobs, warm

TOKENS = 8192
SHAPES = [(n, n, n, f"square {n}") for n in (4096, 8192, 16384)] + [
    (TOKENS, *LLAMA3_SHAPES[("llama3-70b", p)], f"llama3-70b {p}") for p in ("up", "down")]
CONFIGS = [dict(M=M, N=N, K=K, dtype=dt, note=note) for dt in ("float16", "bfloat16") for M, N, K, note in SHAPES]
VARIANTS = ("launch order", "panels", "persistent", "other tile", "other in panels")
DEADLINE_S = 420  # no config starts timing after this (the device call's limit is 8 minutes)


def variants(result):
    """Variant name -> the best-predicted candidate of that kind in the search's ranking."""
    ranked = result.ranked
    launch = next(c for c in ranked if c.plan.tile_order.is_launch_order and not c.plan.persistent)
    shape = lambda c: (c.plan.tile["block_M"], c.plan.tile["block_N"])  # noqa: E731
    other = [c for c in ranked if shape(c) == shape(launch)[::-1] != shape(launch) and not c.plan.persistent]
    picks = {
        "launch order": launch,
        "panels": next((c for c in ranked if not c.plan.tile_order.is_launch_order and not c.plan.persistent), None),
        "persistent": next((c for c in ranked if c.plan.persistent), None),
        "other tile": next((c for c in other if c.plan.tile_order.is_launch_order), None),
        "other in panels": next((c for c in other if not c.plan.tile_order.is_launch_order), None),
    }
    out = {}
    for name, c in picks.items():  # a plan that is two of these is timed once, under its first name
        if c is not None and all(c is not o for o in out.values()):
            out[name] = c
    return out


def describe(c):
    t = c.plan.tile
    return (f"{t['block_M']}x{t['block_N']}x{t['block_K']}, {c.plan.tile_order.describe()}"
            + (", persistent" if c.plan.persistent else ""))


def main(out_dir):
    t_start = time.time()
    vdev = hw.from_device()
    tmpl = templates.get("gemm")
    searched = []
    for cfg in CONFIGS:
        problem = {k: v for k, v in cfg.items() if k != "note"}
        result, problem, _ = schedule_template("gemm", vdev, params=problem)
        searched.append((cfg, problem, result, variants(result)))
    keys = [(i, name) for i, (_, _, _, picks) in enumerate(searched) for name in picks]
    jobs = [job for _, problem, _, picks in searched for job in compile_jobs("gemm", problem, vdev, picks.values())]
    errors = dict(zip(keys, warm(jobs, workers=max(1, (os.cpu_count() or 2) - 1))))
    print(f"searched {len(CONFIGS)} configs and compiled {len(jobs)} kernels in {time.time() - t_start:.0f} s",
          flush=True)
    rows = []
    head = header("python -m benchmarks.experiments.tile_walk $OUT", torch.cuda.get_device_name())
    for i, (cfg, problem, result, picks) in enumerate(searched):
        if time.time() - t_start > DEADLINE_S:
            print(f"{cfg['dtype']} {cfg['note']}: not timed, past {DEADLINE_S} s", flush=True)
            continue
        make = lambda seed: tmpl.make_inputs(problem, "cuda", torch.Generator("cuda").manual_seed(seed))  # noqa: E731
        sets = input_sets(make, sum(t.numel() * t.element_size() for t in make(0)), vdev.l2_bytes, max_sets=4)
        check = make(1_000)
        refs = as_outputs(tmpl.reference(*check, **problem))
        fns, info = {}, {}
        cublas, _ = build_system("cublas", tmpl, problem, vdev)
        for name, c in [("cublas", None), *picks.items()]:
            entry = {"worker": errors[i, name]} if c is not None else {}
            try:
                fn = cublas if c is None else tmpl.compile(planned_func("gemm", problem, c, vdev), vdev.tvm_target())
                (chk,) = check_call(fn, check, refs)
                entry.update(rel_err=chk.rel_err, prefill=chk.prefill)
                if c is not None:
                    entry.update(plan=c.plan.to_dict(), kernel=describe(c), predicted_ms=c.seconds * 1e3,
                                 predicted_dram_gb=c.estimate.dram_bytes / 1e9)
                if chk.rel_err < REL_TOL[problem["dtype"]] and chk.prefill == "nan":
                    fns[name] = fn
                else:
                    entry["error"] = f"wrong result: rel err {chk.rel_err:.2e} ({chk.prefill} prefill)"
            except Exception as ex:  # reported in the row
                entry["error"] = f"{type(ex).__name__}: {ex}"[:400]
            info[name] = entry
        del refs
        for name, t in time_interleaved(fns, sets, rounds=5, round_ms=150.0).items():
            info[name].update(ms=t.ms, p20_ms=t.p20, p80_ms=t.p80, tflops=tmpl.flops(problem) / t.ms / 1e9)
        info["model pick"] = {"is": next(n for n, c in picks.items() if c is result.best)
                              if result.best in picks.values() else describe(result.best)}
        rows.append({"config": cfg, "systems": info})
        base = info["cublas"].get("tflops")
        line = "  ".join(f"{n} {v['tflops']:.0f} ({v['tflops'] / base:.2f}x)" if "tflops" in v and base
                         else f"{n} ERR" for n, v in info.items() if n not in ("cublas", "model pick"))
        print(f"{cfg['dtype']:>8} {cfg['note']:<16} cublas {base or 0:.0f}  {line}", flush=True)
        torch.cuda.empty_cache()
        with open(os.path.join(out_dir, "tile_walk.json"), "w") as f:  # after every config: a cut run keeps them
            json.dump({"header": head, "rows": rows}, f, indent=1, default=str)
    print(f"\nTFLOP/s over cuBLAS's; kernels as searched (total {time.time() - t_start:.0f} s)")
    print(f"{'config':<26}{'cuBLAS':>8}" + "".join(f"{v:>16}" for v in VARIANTS) + "  model pick")
    for r in rows:
        s, cfg = r["systems"], r["config"]
        base = s["cublas"].get("tflops")
        cells = [f"{s[v]['tflops']:.0f} ({s[v]['tflops'] / base:.2f}x)" if v in s and "tflops" in s[v] and base
                 else ("ERR" if v in s else "-") for v in VARIANTS]
        print(f"{cfg['dtype'][:4] + ' ' + cfg['note']:<26}{base or 0:>8.0f}" + "".join(f"{c:>16}" for c in cells)
              + f"  {s['model pick']['is']}")
    for r in rows:
        for v in VARIANTS:
            if v in r["systems"]:
                e = r["systems"][v]
                print(f"  {r['config']['dtype'][:4]} {r['config']['note']:<16} {v:<13} {e.get('kernel', '')}: "
                      f"predicted {e.get('predicted_ms', 0):.3f} ms, measured {e.get('ms', float('nan')):.3f} ms"
                      + (f"  {e['error']}" if "error" in e else ""))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
