"""GPU experiment (issue #6): FlashAttention forward with the consumer warpgroups taking turns (Handoff)
and every wgmma kept in flight (FlashAttention-3's intra-warpgroup overlap), against the same plan
synchronous, the search's first pick and cuDNN SDPA, in one process on one GPU.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.handoff $OUT``.
Each kernel is checked against the float32 reference on fresh random inputs before it is timed.
"""
import json
import os
import sys
import time

import torch

from benchmarks.systems import build_system
from pt_tvm import hw, templates
from pt_tvm.compiler import schedule_template
from pt_tvm.graph import Placement
from pt_tvm.measure import REL_TOL, input_sets, rel_err, time_interleaved
from pt_tvm.passes import apply_plan, extract_stask_graph
from pt_tvm.space import Priority, handoff_variants, overlapped, reordered, warp_specialized
from pt_tvm.tune import warm
from pt_tvm.verify import verify

BASE = dict(batch=8, heads=16, kv_heads=16, seq_len=4096, dim=128, causal=False, dtype="float16")
CONFIGS = [dict(BASE), dict(BASE, causal=True), dict(BASE, batch=4, heads=32, kv_heads=32, dim=64),
           dict(BASE, batch=4, dim=256), dict(BASE, batch=4, seq_len=8192, dtype="bfloat16")]


def gemm_first_order(plan, graph):
    """The plan with the kernel's second loop gemm moved right behind its first (S = QK^T, then O += PV)."""
    order = plan.program("consumer", graph, Placement.LOOP)
    gemms = sorted((a for a in order if a.seu.value == "tensor_core"), key=lambda a: graph.stask(a.stask).index)
    rest = [a for a in order if a is not gemms[-1]]
    k = rest.index(gemms[0]) + 1
    return reordered(plan, "consumer", graph, [*rest[:k], gemms[-1], *rest[k:]])


def variants(problem, vdev):
    result, _, _ = schedule_template("flash_attention", vdev, params=problem)
    tile = dict(block_M=128, block_N=64 if problem["dim"] == 256 else 128, threads=256)
    func = templates.get("flash_attention").build(**problem, **tile)
    graph = extract_stask_graph(func, vdev)
    base = warp_specialized(graph, vdev, consumer_wgs=2, depth=2, pipeline_stage={"V_shared": 1},
                            priority=Priority.TENSOR_FIRST, tile=tile)
    base = gemm_first_order(base, graph)
    ho = handoff_variants(base, graph, vdev)
    out = {"search-pick": result.best.plan, "sync": base, "overlapped": overlapped(base, graph, "consumer"),
           "handoff": ho[0], "handoff+overlapped": ho[1]}
    for p in out.values():
        verify(p, extract_stask_graph(templates.get("flash_attention").build(**problem, **dict(p.tile)), vdev), vdev)
    return out


def main(out_dir):
    vdev = hw.from_device()
    tmpl = templates.get("flash_attention")
    plans = [(i, name, p) for i, prob in enumerate(CONFIGS) for name, p in variants(prob, vdev).items()]
    jobs = [("flash_attention", CONFIGS[i], dict(p.tile), p.to_json(), vdev) for i, _, p in plans]
    t0 = time.time()
    errors = warm(jobs, workers=max(1, (os.cpu_count() or 2) - 1))
    print(f"compiled {len(jobs)} kernels in {time.time() - t0:.0f} s", flush=True)
    rows = []
    for i, prob in enumerate(CONFIGS):

        def make(seed):
            return tmpl.make_inputs(prob, "cuda", torch.Generator("cuda").manual_seed(seed))

        sets = input_sets(make, sum(t.numel() * t.element_size() for t in make(0)), 50 << 20, max_sets=4)
        ref = tmpl.reference(*sets[0], **prob)
        fns, info = {}, {}
        for (j, name, plan), err in zip(plans, errors):
            if j != i:
                continue
            try:
                func = apply_plan(tmpl.build(**prob, **dict(plan.tile)), plan, vdev)
                kernel = tmpl.compile(func, vdev.tvm_target())
                e = rel_err(kernel(*sets[0]), ref)
                info[name] = {"rel_err": e, "plan": plan.to_dict(), "tile": dict(plan.tile)}
                if e < REL_TOL[prob["dtype"]]:
                    fns[name] = kernel
                else:
                    info[name]["error"] = f"wrong result: rel err {e:.2e}"
            except Exception as ex:  # reported in the row
                info[name] = {"error": f"{type(ex).__name__}: {ex}"[:400], "worker": err}
        cudnn, _ = build_system("cudnn-sdpa", tmpl, prob, vdev)
        info["cudnn-sdpa"] = {"rel_err": rel_err(cudnn(*sets[0]), ref)}
        fns["cudnn-sdpa"] = cudnn
        times = time_interleaved(fns, sets, rounds=5)
        flops = tmpl.flops(prob)
        for name, t in times.items():
            info[name].update(ms=t.ms, tflops=flops / t.ms / 1e9)
        rows.append({"problem": prob, "systems": info})
        line = "  ".join(f"{n} {v.get('tflops', 0):.0f}" + ("" if "error" not in v else " ERR")
                         for n, v in info.items())
        print(f"[{i}] {prob['dtype']} D{prob['dim']} S{prob['seq_len']} causal={prob['causal']}: {line}", flush=True)
    head = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "date": time.strftime("%Y-%m-%d %H:%M"),
            "command": "python -m benchmarks.experiments.handoff $OUT"}
    with open(os.path.join(out_dir, "handoff.json"), "w") as f:
        json.dump({"header": head, "rows": rows}, f, indent=1, default=str)
    print("\nTFLOP/s (ratio to cuDNN)")
    for r in rows:
        p, s = r["problem"], r["systems"]
        c = s["cudnn-sdpa"]["tflops"]
        print(f"{p['dtype']:>8} D{p['dim']:<3} causal={p['causal']!s:<5} cudnn {c:4.0f} | " + " | ".join(
            f"{n} {v['tflops']:.0f} ({v['tflops'] / c:.2f}x, err {v['rel_err']:.1e})" if "tflops" in v else f"{n} ERR"
            for n, v in s.items() if n != "cudnn-sdpa"))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
