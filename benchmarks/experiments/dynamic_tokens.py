"""GPU experiment (issue 14 item 1): what one kernel per token bucket costs against one per exact token count.

``ops.configure(dynamic_tokens=True)`` compiles the GEMM ops' kernels with a symbolic row count, planned at the
count's bucket (the next power of two), so a model compiles a few kernels instead of one per new count. Per
LLaMA-3-8B projection (``linear``'s layout) and token count: the kernel the exact count gets, the bucket's
symbolic kernel run at that count, and cuBLAS (``F.linear``), each output checked against float32 on fresh
random inputs (NaN-prefilled), timed in alternating rounds with inputs rotated past the L2.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.dynamic_tokens $OUT``.
Writes ``dynamic_tokens.json``.
"""
import os
import sys
import time

import torch
import torch.nn.functional as F

from benchmarks.configs import LLAMA3_SHAPES
from benchmarks.experiments.variants import bucket_line, describe, save_rows
from pt_tvm import hw, templates
from pt_tvm.compiler import planned_func, schedule_template
from pt_tvm.measure import REL_TOL, check_call, input_sets, time_interleaved
from pt_tvm.templates.base import bucket
from pt_tvm.tune import compile_jobs, warm

TOKENS = (512, 777, 2500, 4096)
PROJECTIONS = ("qkv", "down")
DTYPE = "bfloat16"


def main(out_dir):
    t0 = time.time()
    vdev = hw.from_device()
    tmpl = templates.get("gemm")
    plans = {}  # (proj, M, kind) -> (problem the kernel was built for, candidate)
    for proj in PROJECTIONS:
        N, K = LLAMA3_SHAPES[("llama3-8b", proj)]
        for m in TOKENS:
            for kind, problem in (("exact", dict(M=m)), ("bucket", dict(M=bucket(m, 64), dynamic_M=True))):
                problem = dict(problem, N=N, K=K, dtype=DTYPE, trans_B=True)
                key = (proj, problem["M"], kind)
                if key not in plans:
                    result, problem, _ = schedule_template("gemm", vdev, params=problem)
                    plans[key] = (problem, result.best)
    jobs = [job for problem, c in plans.values() for job in compile_jobs("gemm", problem, vdev, [c])]
    errors = warm(jobs, workers=max(1, (os.cpu_count() or 2) - 1))
    print(f"searched and compiled {len(jobs)} kernels in {time.time() - t0:.0f} s ({sum(map(bool, errors))} failed)",
          flush=True)
    kernels = {k: tmpl.compile(planned_func("gemm", p, c, vdev.tvm_target()), vdev.tvm_target())
               for k, (p, c) in plans.items()}
    rows = []
    for proj in PROJECTIONS:
        N, K = LLAMA3_SHAPES[("llama3-8b", proj)]
        for m in TOKENS:
            dt = getattr(torch, DTYPE)

            def make(seed):
                g = torch.Generator("cuda").manual_seed(seed)
                return (torch.randn(m, K, generator=g, device="cuda").to(dt),
                        (torch.randn(N, K, generator=g, device="cuda") / K ** 0.5).to(dt))

            sets = input_sets(make, (m + N) * K * 2, vdev.l2_bytes, max_sets=4)
            check = make(1_000)
            ref = check[0].float() @ check[1].float().T
            fns = {"exact": kernels[(proj, m, "exact")], "bucket": kernels[(proj, bucket(m, 64), "bucket")],
                   "cublas": F.linear}
            info = {}
            for name, fn in fns.items():
                (chk,) = check_call(fn, check, (ref,))
                info[name] = {"rel_err": chk.rel_err, "prefill": chk.prefill}
                if name != "cublas":
                    problem, c = plans[(proj, m if name == "exact" else bucket(m, 64), name)]
                    info[name].update(kernel=describe(c), problem=problem, predicted_ms=c.seconds * 1e3)
                assert chk.rel_err < REL_TOL[DTYPE] and chk.prefill == "nan", (proj, m, name, chk)
            for name, t in time_interleaved(fns, sets, rounds=5, round_ms=150.0).items():
                info[name].update(ms=t.ms, p20_ms=t.p20, p80_ms=t.p80, tflops=2 * m * N * K / t.ms / 1e9)
            rows.append({"projection": proj, "M": m, "N": N, "K": K, "systems": info})
            print(bucket_line(f"{proj:>5} M={m:<5}", info, "cublas"), flush=True)
            save_rows(out_dir, "dynamic_tokens", rows)
    print(f"total {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
