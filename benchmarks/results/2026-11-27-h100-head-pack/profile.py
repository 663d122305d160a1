"""One launch of chunk_scan (Mamba2-1.3B, batch 64 x 1024) per block_H, for Nsight Compute: the search's pick
at the suite's tile (64x64x32, 128 threads), as head_pack.py builds it. Run under ncu (run.sh, step profile)."""
import sys

import torch

from pt_tvm import hw, templates
from pt_tvm.compiler import schedule_template

vdev = hw.from_device()
tmpl = templates.get("chunk_scan")
for h in map(int, sys.argv[1:]):
    params = dict(batch=64, seqlen=1024, block_M=64, block_N=64, block_K=32, threads=128, block_H=h)
    result, problem, build = schedule_template("chunk_scan", vdev, params=params)
    kernel = tmpl.compile(build(), vdev.tvm_target())
    inputs = tmpl.make_inputs(problem, "cuda", torch.Generator("cuda").manual_seed(0))
    torch.cuda.synchronize()
    kernel(*inputs)
    torch.cuda.synchronize()
    print(f"block_H={h}: {result.best.note}", flush=True)
