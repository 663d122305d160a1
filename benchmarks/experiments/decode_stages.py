"""GPU experiment (issue 16): batch 1, kv 16k, paged decoding with its split kernel 2, 3 and 4 stages deep.

The split kernel runs 1.5 us behind a bare read of its bytes at its block count (19.3 against 17.8 us on one H200,
``benchmarks/results/2026-11-29-h200-decode-ceiling``); its 2-stage software pipeline keeps one 32 KB key/value tile
in flight a block, two blocks an SM. The model prices two and three stages alike (16.24 us) and picks two. Here the
pick's tile (32 splits, 64-key tiles) at each depth, the best-priced software pipeline of each, checked against the
float32 reference on fresh inputs, then the call and its split kernel alone timed from CUDA graphs in alternating
rounds, inputs rotated past the L2.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.decode_stages $OUT``.
"""
import json
import os
import sys

import torch

from benchmarks.experiments.decode_launch import PAGED, TILE
from benchmarks.suite import header
from pt_tvm import hw, templates
from pt_tvm.compiler import schedule_template
from pt_tvm.measure import REL_TOL, capture, input_sets, rel_err, time_samplers
from pt_tvm.plan import Style
from pt_tvm.templates.decode_attention import kv_bytes
from pt_tvm.tune import compile_jobs, warm

DEPTHS = (2, 3, 4)


def main(out_dir: str) -> None:
    vdev = hw.from_device()
    template = templates.get("decode_attention")
    result, problem, build = schedule_template("decode_attention", vdev, params={**PAGED, **TILE})
    picks = {d: next((c for c in result.ranked
                      if c.plan.style == Style.SOFTWARE_PIPELINE and c.plan.num_stages == d), None) for d in DEPTHS}
    picks = {d: c for d, c in picks.items() if c is not None}
    warm(compile_jobs("decode_attention", problem, vdev, picks.values()), max(1, (os.cpu_count() or 2) - 1))
    kernels = {d: template.compile(build(c), vdev.tvm_target()) for d, c in picks.items()}  # from the warm cache
    predicted = {d: c.seconds * 1e6 for d, c in picks.items()}
    kv = kv_bytes(problem)
    make = lambda seed: template.make_inputs(problem, "cuda", torch.Generator(device="cuda").manual_seed(seed))  # noqa: E731
    check = make(99)
    ref = template.reference(*check, **problem)
    errors = {d: rel_err(k(*check), ref) for d, k in kernels.items()}
    assert all(e <= REL_TOL[problem["dtype"]] for e in errors.values()), errors
    sets = input_sets(make, int(kv), vdev.l2_bytes, max_sets=4)
    graphs = {}
    for d, k in kernels.items():
        graphs[f"call, {d} stages"] = capture(k, sets)
        graphs[f"split kernel, {d} stages"] = capture(k.split, sets)
    times = time_samplers(graphs, rounds=7, round_ms=100.0, settle_ms=200.0)
    rows = [{"system": n, "us": t.ms * 1e3, "p20_us": t.p20 * 1e3, "p80_us": t.p80 * 1e3} for n, t in times.items()]
    with open(os.path.join(out_dir, "decode_stages.json"), "w") as f:
        head = header("python -m benchmarks.experiments.decode_stages $OUT", torch.cuda.get_device_name())
        json.dump({"header": head, "problem": problem, "tile": TILE, "predicted_us": predicted, "rel_err": errors,
                   "rows": rows}, f, indent=1)
    for r in rows:
        print(f"{r['system']:26} {r['us']:6.2f} us ({r['p20_us']:.2f}-{r['p80_us']:.2f})")
    print("predicted:", {d: round(p, 2) for d, p in predicted.items()}, "rel_err:", errors)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
