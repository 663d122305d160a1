"""Which part of the conv's row-group kernel faults ("illegal instruction" on one H200 at 818ea2e)? One problem, its
search pick (or a pinned tile), run once on fresh inputs and checked against float32; one process a problem.

    python benchmarks/results/2026-12-06-conv-row-groups/probe.py KEY=VALUE ...
"""
import sys

import torch

from pt_tvm import hw
from pt_tvm.cli import parse_params
from pt_tvm.compiler import schedule_template
from pt_tvm.measure import as_outputs, check_call, kernel_outputs
from pt_tvm.templates import get

params = parse_params(sys.argv[1:])
vdev, template = hw.from_device(), get("causal_conv1d")
result, problem, build = schedule_template("causal_conv1d", vdev, params=params)
print(f"PLAN {result.best.note} {result.best.plan.tile}", flush=True)
kernel = template.compile(build(), vdev.tvm_target())
with open(f"/tmp/probe-{abs(hash(str(params)))}.cu", "w") as f:
    f.write(kernel.get_kernel_source())
inputs = template.make_inputs(problem, "cuda", torch.Generator(device="cuda").manual_seed(0))
refs = as_outputs(template.reference(*inputs, **problem))
checks = check_call(kernel_outputs(template, kernel), inputs, refs, inout=template.inout_idx)
print("REL_ERR " + " ".join(f"{c.rel_err:.3e}" for c in checks), flush=True)
