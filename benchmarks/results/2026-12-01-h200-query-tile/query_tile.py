"""Probe (2026-12-01, one H200): ViT-L/14's attention at 336 px (32 x 577 tokens, 16 heads, head dim 64, non-causal),
where the search's pick (192 query rows over three consumer warpgroups, the key tail after the loop) ran 0.98x
cuDNN SDPA: the search's best plan at each query tile (64, 128, 192 rows; 577 queries padded to 640, 640 and 768)
beside cuDNN SDPA, every output checked against float32, timed in alternating rounds from settled CUDA graphs.

    python benchmarks/results/2026-12-01-h200-query-tile/query_tile.py $OUT
"""
import json
import os
import sys

import torch

from benchmarks.systems import build_system
from pt_tvm import hw, templates
from pt_tvm.compiler import planned_func, schedule_template
from pt_tvm.measure import REL_TOL, SETTLE_MS, as_outputs, capture, check_call, input_sets, time_samplers

PROBLEM = {"batch": 32, "seq_len": 577, "heads": 16, "kv_heads": 16, "dim": 64}


def main(out_dir: str) -> None:
    vdev, tmpl = hw.from_device(), templates.get("flash_attention")
    rows, samplers = {}, {}
    problem, _ = tmpl.resolve_problem(**PROBLEM)
    for label in ("pick", 64, 128, 192, "cudnn-sdpa"):
        if label == "cudnn-sdpa":
            fn, info = build_system(label, tmpl, problem, vdev)
            row = {**info}
        else:
            params = PROBLEM if label == "pick" else {**PROBLEM, "block_M": label}
            result, _, _ = schedule_template("flash_attention", vdev, params=params)
            best = result.best
            fn = tmpl.compile(planned_func("flash_attention", problem, best, vdev), vdev.tvm_target())
            row = {"tile": dict(best.plan.tile), "plan": best.note, "predicted_ms": best.seconds * 1e3}

        def make(seed, problem=problem):
            return tmpl.make_inputs(problem, "cuda", torch.Generator("cuda").manual_seed(seed))
        check = make(1_000)
        checks = check_call(fn, check, as_outputs(tmpl.reference(*check, **problem)))
        row["rel_err"] = max(c.rel_err for c in checks)
        if row["rel_err"] < REL_TOL[problem["dtype"]] and all(c.prefill != "unverified" for c in checks):
            nbytes = sum(t.numel() * t.element_size() for t in check)
            samplers[str(label)] = capture(fn, input_sets(make, nbytes, vdev.l2_bytes, max_sets=4))
        rows[str(label)] = row
    for label, t in time_samplers(samplers, rounds=15, round_ms=150.0, settle_ms=SETTLE_MS).items():
        rows[label].update(ms=t.ms, p20_ms=t.p20, p80_ms=t.p80)
    with open(os.path.join(out_dir, "query_tile.json"), "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "problem": PROBLEM, "rows": rows}, f, indent=1)
    base = rows["cudnn-sdpa"].get("ms")
    for label, r in rows.items():
        speed = f"{base / r['ms']:.3f}x cuDNN" if base and r.get("ms") else ""
        print(f"{label:<11} {r.get('ms', float('nan')) * 1e3:8.1f} us  predicted {r.get('predicted_ms', 0) * 1e3:7.1f}"
              f"  {speed}  {r['rel_err']:.1e}  {r.get('tile', '')}")


if __name__ == "__main__":
    main(sys.argv[1])
