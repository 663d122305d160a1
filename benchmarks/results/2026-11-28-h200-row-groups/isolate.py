"""One row_groups kernel alone (shape index, row_group; "graph": also replayed from a CUDA graph), as run.sh says."""
import sys

import torch

from benchmarks.experiments.row_groups import SHAPES
from pt_tvm import hw, templates
from pt_tvm.compiler import schedule_template

i, g = int(sys.argv[1]), int(sys.argv[2])
label, M, N, K, twin, tile = SHAPES[i]
n = twin if g == 0 else N
vdev = hw.from_device()
params = {"M": M, "N": n, "K": K, "dtype": "float16", "trans_B": True, **tile, "row_group": g}
r, p, b = schedule_template("gemm", vdev, params=params)
k = templates.get("gemm").compile(b(), vdev.tvm_target())


def randn(rows: int) -> torch.Tensor:
    return torch.randn(rows, K, device="cuda", dtype=torch.float16)


a, w = randn(M), randn(n)
for rep in range(3):
    c = k(a, w)
torch.cuda.synchronize()
err = ((c.float() - a.float() @ w.float().T).norm() / (a.float() @ w.float().T).norm()).item()
print(f"OK {label} g={g} rel_err {err:.2e} {r.best.note}", flush=True)
if len(sys.argv) > 3:
    from pt_tvm.measure import capture, time_samplers

    t = time_samplers({"x": capture(k, [(randn(M), randn(n)) for _ in range(2)])}, rounds=3, round_ms=100.0)
    torch.cuda.synchronize()
    print(f"GRAPH OK {label} g={g} {t['x'].ms * 1e3:.1f} us", flush=True)
