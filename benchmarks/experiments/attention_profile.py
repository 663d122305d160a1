"""GPU experiment (issue 15 item 3): pt-tvm's FlashAttention kernel beside flash-attn-4's Hopper kernel under
Nsight Compute, at attention-core configs where pt-tvm trails it (head dim 128 non-causal, 64 and 256 causal).

Per config, pt-tvm's kernel is the cost model's first pick (no measured refinement, as ``pt-tvm-model`` in the
suites); both systems' outputs are checked against the float32 reference on fresh random inputs, then each is
called once inside the NVTX range ``profile``, which ``ncu --nvtx --nvtx-include profile/`` profiles alone
(the results folder's run.sh). Run from the project root on the GPU machine, flash-attn-4 importable:
``ncu ... python -m benchmarks.experiments.attention_profile``.
"""
import sys

import torch

from benchmarks.experiments.attention_tiles import _cfg
from benchmarks.systems import build_system
from pt_tvm import hw, templates
from pt_tvm.compiler import planned_func, schedule_template
from pt_tvm.measure import REL_TOL, as_outputs, check_call

CONFIGS = [_cfg(128, 4096, False), _cfg(64, 4096, True), _cfg(256, 4096, True)]


def main() -> int:
    vdev = hw.from_device()
    tmpl = templates.get("flash_attention")
    failed = 0
    for cfg in CONFIGS:
        result, problem, _ = schedule_template("flash_attention", vdev, params=cfg)
        best = result.best
        kernel = tmpl.compile(planned_func("flash_attention", problem, best, vdev), vdev.tvm_target())
        shape = {k: v for k, v in problem.items() if k not in tmpl.tile}
        inputs = tmpl.make_inputs(shape, "cuda", torch.Generator("cuda").manual_seed(7))
        refs = as_outputs(tmpl.reference(*inputs, **shape))
        fa3, info = build_system("fa3", tmpl, shape, vdev)
        if fa3 is None:
            raise RuntimeError(f"flash-attn-4 did not build: {info}")
        systems = {"pt-tvm": kernel, "fa3": fa3}
        for name, fn in systems.items():
            err = max(c.rel_err for c in check_call(fn, inputs, refs))
            ok = err < REL_TOL[shape["dtype"]]
            failed += not ok
            print(f"D{shape['dim']} S{shape['seq_len']} {'causal' if shape['causal'] else 'full'} {name}: "
                  f"rel_err {err:.2e} {'ok' if ok else 'WRONG'}"
                  + (f"; tile {dict(best.plan.tile)}, {best.note}" if name == "pt-tvm" else ""), flush=True)
        del refs
        for fn in systems.values():  # warm: JIT caches and first-launch work stay out of the profiled range
            fn(*inputs)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push("profile")
        for fn in systems.values():
            fn(*inputs)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    return failed


if __name__ == "__main__":
    sys.exit(main())
