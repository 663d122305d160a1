"""The conv's picks that moved on the H200 chip model (128 x 64 x 256 tiles at 256 threads: 4 x 4096 x 4353 and the
random problem of seed 3, 474 channels), compiled for sm_90a and checked against float32 on the GPU at hand (NaN-
prefilled outputs, fresh inputs): their correctness, where no H200 was lent to time them.

    python benchmarks/results/2026-12-06-conv-threads/h200_picks.py
"""
import sys

import torch

sys.path.insert(0, "tests")
from test_random_problems import draw  # noqa: E402

from pt_tvm import hw, templates  # noqa: E402
from pt_tvm.compiler import schedule_template  # noqa: E402
from pt_tvm.measure import REL_TOL, as_outputs, check_call, kernel_outputs  # noqa: E402

NAME = "causal_conv1d"
tmpl, vdev = templates.get(NAME), hw.from_device()
for params in (dict(batch=4, seqlen=4096, channels=4353), draw(NAME, 3)):
    result, problem, build = schedule_template(NAME, "h200", params=params)
    kernel = tmpl.compile(build(), vdev.tvm_target())
    inputs = tmpl.make_inputs(problem, "cuda", torch.Generator(device="cuda").manual_seed(3))
    checks = check_call(kernel_outputs(tmpl, kernel), inputs, as_outputs(tmpl.reference(*inputs, **problem)))
    ok = all(c.rel_err < REL_TOL[problem["dtype"]] for c in checks)
    print(f"{torch.cuda.get_device_name()} | {problem['batch']}x{problem['seqlen']}x{problem['channels']} "
          f"stride {problem['x_stride']} {problem['dtype']} | H200 pick {dict(result.best.plan.tile)} "
          f"{result.best.note} | rel_err {' '.join(f'{c.rel_err:.2e}({c.prefill})' for c in checks)} "
          f"{'ok' if ok else 'WRONG'}", flush=True)
