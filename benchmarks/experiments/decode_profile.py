"""GPU experiment (issue 16): batch 1, kv 16k, paged decoding's split kernel (the pick: 32 splits, 64-key tiles, a
2-stage software pipeline) called once inside the NVTX range ``profile``, for Nsight Compute
(``ncu --nvtx --nvtx-include profile/``), after its output is checked against the float32 reference.

Run from the project root on the GPU machine: ``ncu ... python -m benchmarks.experiments.decode_profile``.
"""
import sys

import torch

from benchmarks.experiments.decode_launch import PAGED, TILE
from pt_tvm import hw, templates
from pt_tvm.compiler import schedule_template
from pt_tvm.measure import REL_TOL, rel_err
from pt_tvm.plan import Style


def main() -> int:
    vdev = hw.from_device()
    template = templates.get("decode_attention")
    result, problem, build = schedule_template("decode_attention", vdev, params={**PAGED, **TILE})
    pick = next(c for c in result.ranked if c.plan.style == Style.SOFTWARE_PIPELINE and c.plan.num_stages == 2)
    kernel = template.compile(build(pick), vdev.tvm_target())
    inputs = template.make_inputs(problem, "cuda", torch.Generator(device="cuda").manual_seed(7))
    err = rel_err(kernel(*inputs), template.reference(*inputs, **problem))
    print(f"{pick.note}, tile {dict(pick.plan.tile)}: rel_err {err:.1e}", flush=True)
    for _ in range(3):
        kernel.split(*inputs)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("profile")
    kernel.split(*inputs)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    return int(err > REL_TOL[problem["dtype"]])


if __name__ == "__main__":
    sys.exit(main())
