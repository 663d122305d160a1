"""Step 1 of run3.sh: at 4 x 4096 x 4353 fp16, does the conv's time follow its blocks an SM (ptxas's registers) or
its tile's width? The best plan of each tile below with the tile pinned (the pick's at 128 and 256 threads, which
the search on Hopper does not try: one thread count a tile), every output checked against float32 (NaN-prefilled),
timed from CUDA graphs in alternating rounds beside torch.compile of HF's PyTorch path; each kernel's registers a
thread as ptxas counts them (nvcc on the device's CPU) and the blocks an SM they give.

    python benchmarks/results/2026-12-05-h200-conv-weights/threads.py $OUT
"""
import json
import os
import sys
import time

import torch

from benchmarks.experiments.variants import best_pinned, graphed_if_right
from benchmarks.registers import ptxas_usage
from benchmarks.suite import header
from benchmarks.systems import build_system
from pt_tvm import cost, hw, templates
from pt_tvm.compiler import planned_func
from pt_tvm.measure import SETTLE_MS, kernel_outputs, time_samplers

NAME = "causal_conv1d"
PROBLEM = {"batch": 4, "seqlen": 4096, "channels": 4353, "x_stride": 4353, "dtype": "float16"}
TILES = [  # (block_L, block_D, block_S, threads): registers and blocks an SM by ptxas on the CPU, 2026-12-05
    (32, 128, 256, 128),  # the pick: 122, 4 blocks of 4 warps
    (32, 128, 256, 256),  # 80, 3 blocks of 8 warps
    (32, 256, 256, 256),  # 105, 2 blocks of 8 warps
    (32, 256, 256, 128),  # 203, 2 blocks of 4 warps (measured 1.33x the pick's time on an H100)
    (64, 64, 256, 128),   # 72, 4 blocks: a thread's rows interleave (4.25 shared loads an output)
    (64, 64, 256, 256),   # 63, 4 blocks of 8 warps
]
ROUNDS = 9


def main(out_dir: str) -> None:
    t_start = time.time()
    vdev, tmpl = hw.from_device(), templates.get(NAME)
    params = [{**PROBLEM, "block_L": l, "block_D": d, "block_S": s, "threads": t, "stage_y": 0} for l, d, s, t in TILES]
    picks = best_pinned(NAME, params, vdev)
    print(f"searched and compiled {len(picks)} kernels in {time.time() - t_start:.0f} s", flush=True)
    rows, samplers, arch = {}, {}, str(vdev.target["arch"])
    for (best, problem), tile in zip(picks, TILES):
        key = "x".join(map(str, tile))
        if best is None:
            rows[key] = {"error": problem}
            continue
        kernel = tmpl.compile(planned_func(NAME, problem, best, vdev), vdev.tvm_target())  # from TileLang's cache
        regs, spills = ptxas_usage(kernel.get_kernel_source(), arch)
        entry = {"tile": dict(best.plan.tile), "plan": best.note, "predicted_ms": best.seconds * 1e3,
                 "registers": regs, "spill_bytes": spills, "model_blocks": best.estimate.blocks_per_eu,
                 "blocks": cost.blocks_per_eu(best.plan, best.graph, vdev, registers=regs)}
        sampler = graphed_if_right(tmpl, kernel_outputs(tmpl, kernel), problem, vdev, entry)
        if sampler is not None:
            samplers[key] = sampler
        rows[key] = entry
    problem = tmpl.resolve_problem(**PROBLEM)[0]
    fn, info = build_system("torch-compile", tmpl, problem, vdev)
    rows["torch-compile"] = dict(info)
    if fn is not None:
        sampler = graphed_if_right(tmpl, fn, problem, vdev, rows["torch-compile"])
        if sampler is not None:
            samplers["torch-compile"] = sampler
    for key, t in time_samplers(samplers, rounds=ROUNDS, round_ms=150.0, settle_ms=SETTLE_MS).items():
        rows[key].update(ms=t.ms, p20_ms=t.p20, p80_ms=t.p80)
    with open(os.path.join(out_dir, "threads.json"), "w") as f:
        json.dump({"header": header("python benchmarks/results/2026-12-05-h200-conv-weights/threads.py $OUT",
                                    torch.cuda.get_device_name()), "problem": PROBLEM, "rows": rows}, f, indent=1,
                  default=str)
    pick = rows["x".join(map(str, TILES[0]))].get("ms")
    print(f"\n{'tile (L x D x S x threads)':<28} {'us':>8} {'/pick':>6} {'priced us':>10} {'regs':>5} "
          f"{'blocks model/ptxas':>19} {'rel_err':>8}")
    for key, r in rows.items():
        if "ms" not in r:
            print(f"{key:<28} {str(r.get('error', ''))[:100]}")
            continue
        print(f"{key:<28} {r['ms'] * 1e3:8.1f} {r['ms'] / pick if pick else float('nan'):6.3f} "
              f"{r.get('predicted_ms', float('nan')) * 1e3:10.1f} {r.get('registers', '-'):>5} "
              f"{str(r.get('model_blocks', '-')) + '/' + str(r.get('blocks', '-')):>19} "
              f"{r.get('rel_err', float('nan')):8.1e}")
    print(f"total {time.time() - t_start:.0f} s")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
