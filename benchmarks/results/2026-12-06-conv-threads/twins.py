"""The conv's pick before and after its software pipelines take their threads on chips that warp-specialize
(``Template.pipelines_take_threads``, cf9d9fd), at the configs whose pick it moved: both searched here on the GPU's
chip model, compiled, checked against float32 (NaN-prefilled) and timed from CUDA graphs in alternating rounds.

    python benchmarks/results/2026-12-06-conv-threads/twins.py $OUT
"""
import dataclasses
import json
import os
import sys
import time

import torch

from benchmarks.experiments.conv1d import LAYER
from benchmarks.experiments.variants import graphed_if_right
from benchmarks.suite import header
from pt_tvm import hw, templates
from pt_tvm.compiler import planned_func, schedule_template
from pt_tvm.measure import SETTLE_MS, kernel_outputs, time_samplers

NAME = "causal_conv1d"
CONFIGS = [{"batch": 4, "seqlen": 2048, **LAYER},  # the layer's x B C columns: the H200 pick moved on a tie
           {"batch": 4, "seqlen": 4096, "channels": 4353, "x_stride": 4353}]  # rows TMA cannot address
ROUNDS = 9


def main(out_dir: str) -> None:
    t_start = time.time()
    vdev, tmpl = hw.from_device(), templates.get(NAME)
    before = dataclasses.replace(tmpl, pipelines_take_threads=False)
    rows, samplers = [], {}
    for cfg in CONFIGS:
        problem, pins = tmpl.resolve_problem(**cfg, dtype="float16")
        for label, t in (("before", before), ("after", tmpl)):
            result, problem, _ = schedule_template(NAME, vdev, params={**cfg, "dtype": "float16"},
                                                   tiles=t.tile_candidates(problem, vdev.features, pins))
            best = result.best
            entry = {"config": cfg, "system": label, "tile": dict(best.plan.tile), "plan": best.note,
                     "predicted_ms": best.seconds * 1e3}
            key = f"{cfg['batch']}x{cfg['seqlen']}x{cfg['channels']} {label}"
            if rows and rows[-1]["tile"] == entry["tile"] and rows[-1]["plan"] == entry["plan"]:
                entry["same_as"] = rows[-1]["system"]
            else:
                kernel = tmpl.compile(planned_func(NAME, problem, best, vdev), vdev.tvm_target())
                sampler = graphed_if_right(tmpl, kernel_outputs(tmpl, kernel), problem, vdev, entry)
                if sampler is not None:
                    samplers[key] = sampler
            entry["key"] = key
            rows.append(entry)
    print(f"searched and compiled in {time.time() - t_start:.0f} s", flush=True)
    for key, t in time_samplers(samplers, rounds=ROUNDS, round_ms=150.0, settle_ms=SETTLE_MS).items():
        next(r for r in rows if r["key"] == key).update(ms=t.ms, p20_ms=t.p20, p80_ms=t.p80)
    with open(os.path.join(out_dir, "twins.json"), "w") as f:
        json.dump({"header": header("python benchmarks/results/2026-12-06-conv-threads/twins.py $OUT",
                                    torch.cuda.get_device_name()), "rows": rows}, f, indent=1, default=str)
    print(f"\n{'config':<22} {'system':<7} {'us':>8} {'priced':>8} {'rel_err':>8}  tile, plan")
    for r in rows:
        us = f"{r['ms'] * 1e3:8.1f}" if "ms" in r else f"{'same' if 'same_as' in r else 'ERR':>8}"
        print(f"{r['key'].split()[0]:<22} {r['system']:<7} {us} {r['predicted_ms'] * 1e3:8.1f} "
              f"{r.get('rel_err', float('nan')):8.1e}  {_tile_text(r)}")
    print(f"total {time.time() - t_start:.0f} s")


def _tile_text(r: dict) -> str:
    return "x".join(str(v) for v in r["tile"].values()) + f" {r['plan']}"[:90]


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
