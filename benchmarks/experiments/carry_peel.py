"""GPU experiment (issue 15, GEMM): is peeling the carried k-loop's last step what made the persistent GEMMs slower?

``carry_gemms`` first left the last step's group in flight at the loop's exit and waited after the loop
(69f4ca1: the persistent picks 1.02-1.05x their waiting twins on one H200); then ptxas was found moving a launched
kernel's epilogue conversions above that wait (wrong sums), so the last step was peeled to wait inside it
(d49f4e0: the persistent picks 0.92-0.96x their twins in the next run). Here, in one process, the search's
persistent pick waiting, carried as pt-tvm emits it now (peeled), and carried with the loop unpeeled (the waiting
kernel's CUDA rewritten by a post-processing hook, as ab25a9e's first run did), each checked on every output
against the float32 reference on fresh inputs, then timed beside cuBLAS in alternating rounds.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.carry_peel $OUT``.
"""
import json
import os
import re
import sys
import time
from dataclasses import replace

import torch
from tilelang import env as tl_env
from tilelang.engine import register_cuda_postproc

from benchmarks.experiments.variants import check_and_time
from benchmarks.suite import header
from benchmarks.systems import build_system
from pt_tvm import hw, templates
from pt_tvm.compiler import planned_func, schedule_template

CONFIGS = [dict(M=4096, N=4096, K=4096, dtype="float16"), dict(M=2048, N=6144, K=4096, dtype="float16"),
           dict(M=8192, N=4096, K=4096, dtype="float16")]
_LOOP = re.compile(
    r"(?P<ind>[ \t]*)for \(int (?P<k>k\w*) = 0; (?P=k) < (?P<n>\d+); \+\+(?P=k)\) \{\n"
    r"(?P<body>(?:(?!\n(?P=ind)\}\n).)*?)"
    r"\n(?P<ind2>[ \t]*)(?P<empty>p_\w+_empty)\[(?P<slot>[^\n]*?)\]\.arrive\(\);\n"
    r"(?P=ind2)(?P<ph>p_\w+_phase\w*)\[0\] = \((?P=ph)\[0\] \+ 1\);\n"
    r"(?P=ind)\}\n", re.S)


def unpeeled(code: str, target=None) -> str:
    """The waiting kernel's k-loop carried without a peeled last step (ab25a9e's rewrite)."""
    def sub(m: re.Match) -> str:
        body = m["body"]
        if body.count("tl::warpgroup_wait<0>();") != 1 or "wgmma" not in body:
            return m[0]
        prev = m["slot"].replace(f"{m['ph']}[0]", f"({m['ph']}[0] - 1)")
        ind, ind2, k = m["ind"], m["ind2"], m["k"]
        return (f"{ind}for (int {k} = 0; {k} < {m['n']}; ++{k}) {{\n"
                + body.replace("tl::warpgroup_wait<0>();", "tl::warpgroup_wait<1>();") + "\n"
                + f"{ind2}if ({k} > 0) {{\n{ind2}  {m['empty']}[{prev}].arrive();\n{ind2}}}\n"
                + f"{ind2}{m['ph']}[0] = ({m['ph']}[0] + 1);\n{ind}}}\n"
                + f"{ind}tl::warpgroup_wait<0>();\n{ind}{m['empty']}[{prev}].arrive();\n")

    out = _LOOP.sub(sub, code)
    assert out != code, "no k-loop rewritten"
    return out


def main(out_dir: str) -> None:
    t0 = time.time()
    tl_env.disable_cache()
    vdev = hw.from_device()
    tmpl = templates.get("gemm")
    rows = []
    for cfg in CONFIGS:
        result, problem, _ = schedule_template("gemm", vdev, params=cfg)
        pick = next(c for c in result.ranked if c.plan.carry_gemms and c.plan.persistent)
        waiting = replace(pick, plan=replace(pick.plan, carry_gemms=False))
        kernels = {}
        for name, c, post in (("waiting", waiting, None), ("carried, peeled", pick, None),
                              ("carried, unpeeled", waiting, unpeeled)):
            register_cuda_postproc(post or (lambda code, target: code), override=True)
            kernels[name] = tmpl.compile(planned_func("gemm", problem, c, vdev), vdev.tvm_target())
        register_cuda_postproc(lambda code, target: code, override=True)
        cublas, _ = build_system("cublas", tmpl, problem, vdev)
        info = check_and_time({"cublas": cublas, **kernels}, tmpl, problem, vdev, rounds=9)
        rows.append({"config": cfg, "plan": pick.note, "tile": dict(pick.plan.tile), "systems": info})
        base = info["waiting"]["ms"]
        print(f"{cfg['M']}x{cfg['N']}x{cfg['K']}: " + "  ".join(
            f"{n} {v['tflops']:.0f} TFLOP/s ({base / v['ms']:.3f}x waiting)" for n, v in info.items())
            + f"  [{time.time() - t0:.0f} s]", flush=True)
        with open(os.path.join(out_dir, "carry_peel.json"), "w") as f:
            json.dump({"header": header("python -m benchmarks.experiments.carry_peel $OUT",
                                        torch.cuda.get_device_name()), "rows": rows}, f, indent=1, default=str)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
