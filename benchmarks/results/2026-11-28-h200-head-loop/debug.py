"""Where chunk_scan's head_loop kernel goes wrong: one small shape, TileLang's own pipelining and pt-tvm's plans,
the output's NaNs and errors per chunk, row block and head against the float32 reference."""

import torch

from pt_tvm import hw, templates
from pt_tvm.compiler import schedule_template

vdev = hw.from_device()
t = templates.get("chunk_scan")
base = dict(batch=1, seqlen=512, heads=16, dtype="float16", block_M=64, block_N=64, block_K=64, threads=128)
for hl in (4, 0):
    params = dict(base, head_loop=hl)
    problem, _ = t.resolve_problem(**params)
    inputs = t.make_inputs(problem, "cuda", torch.Generator("cuda").manual_seed(1))
    ref = t.reference(*inputs, **problem)
    r, _, build = schedule_template("chunk_scan", vdev, params=params)
    variants = {"tilelang": t.build(num_stages=1, **params), "tilelang2": t.build(num_stages=2, **params)}
    for i, c in enumerate(r.ranked[:3]):
        with vdev.tvm_target():
            variants[f"plan{i} {c.note[:60]}"] = build(c)
    for name, f in variants.items():
        try:
            k = t.compile(f, vdev.tvm_target())
            out = k(*inputs)
            torch.cuda.synchronize()
        except Exception as ex:
            print(f"head_loop={hl} {name}: {type(ex).__name__}: {str(ex)[:300]}", flush=True)
            continue
        o = out.float().view(1, 2, 4, 64, 16, 64)  # b, chunk, row block, row, head, col
        rf = ref.float().view(1, 2, 4, 64, 16, 64)
        nan = o.isnan().any(dim=(0, 3, 5))
        err = ((o - rf).abs().amax(dim=(0, 3, 5)) / rf.abs().amax())
        worst = float(err[~nan].max()) if (~nan).any() else float("nan")
        print(f"head_loop={hl} {name}: nan {int(o.isnan().sum())} of {o.numel()}; max rel err {worst:.2e}", flush=True)
        for what, grid in (("nan", nan), ("err>1e-2", err > 1e-2)):
            print(f"  {what} (chunk, row block) x head:")
            for row in grid.reshape(8, 16).tolist():
                print("  " + "".join("X" if v else "." for v in row))
