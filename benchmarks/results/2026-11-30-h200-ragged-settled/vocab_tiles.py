"""Probe (2026-11-30, one H200): the ragged experiment's vocabulary-32001 pair (8192 x 4096 -> 32001, the weight
as nn.Linear holds it; C's rows off 16-byte boundaries) measured 0.929 of its twin (N = 32000) at bb78f7c with the
search's 128 x 256 persistent pick on both, where on 2026-11-28 both picked 256 x 160 tiles and it measured 0.973.
Here each shape's pick beside its best plan at 256 x 160, every output checked, timed from CUDA graphs settled.

    python benchmarks/results/2026-11-30-h200-ragged-settled/vocab_tiles.py $OUT
"""
import json
import os
import sys

import torch

from benchmarks.experiments import ragged
from pt_tvm import hw, templates
from pt_tvm.compiler import planned_func, schedule_template
from pt_tvm.measure import (
    REL_TOL,
    SETTLE_MS,
    Queued,
    as_outputs,
    capture,
    check_call,
    input_sets,
    kernel_outputs,
    time_samplers,
)

PAIR = next(p for p in ragged.PAIRS if "32001" in p[3])


def main(out_dir: str) -> None:
    vdev = hw.from_device()
    tmpl = templates.get("gemm")
    rows, graphs = {}, {}
    for shape, problem, make, flops in ragged.cases(*PAIR[:3]):
        for tile in ("pick", "256 x 160"):
            pins = {} if tile == "pick" else {"block_M": 256, "block_N": 160}
            res, resolved, _ = schedule_template("gemm", vdev, params={**problem, **pins})
            kernel = kernel_outputs(tmpl, tmpl.compile(planned_func("gemm", resolved, res.best, vdev),
                                                       vdev.tvm_target()))
            check = make(1_000)
            err = max(c.rel_err for c in check_call(kernel, check, as_outputs(tmpl.reference(*check, **resolved)),
                                                    inout=tmpl.inout_idx))
            label = f"{shape}, {tile}"
            rows[label] = {"N": resolved["N"], "tile": dict(res.best.plan.tile), "plan": res.best.note,
                           "predicted_ms": res.best.seconds * 1e3, "rel_err": err, "flops": flops}
            print(label, rows[label]["tile"], res.best.note, f"{res.best.seconds * 1e3:.3f} ms predicted, "
                  f"rel err {err:.1e}", flush=True)
            if err < REL_TOL[resolved["dtype"]]:
                sets = input_sets(make, sum(t.numel() * t.element_size() for t in check), vdev.l2_bytes, 2)
                graphs[label] = capture(Queued(kernel, sets).fn, sets)
            del check
    for label, t in time_samplers(graphs, rounds=9, round_ms=150.0, settle_ms=SETTLE_MS).items():
        rows[label].update(ms=t.ms, p20_ms=t.p20, p80_ms=t.p80, tflops=rows[label]["flops"] / t.ms / 1e9)
    with open(os.path.join(out_dir, "vocab_tiles.json"), "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)
    twin = rows["tile multiple, pick"]["tflops"]
    for label, r in rows.items():
        print(f"{label:<26} {r.get('ms', 0) * 1e3:8.1f} us  {r.get('tflops', 0):5.0f} TFLOP/s  over the twin's pick "
              f"{r.get('tflops', 0) / twin:.3f}  predicted {r['predicted_ms'] * 1e3:.1f} us")


if __name__ == "__main__":
    main(sys.argv[1])
