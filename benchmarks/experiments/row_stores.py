"""GPU experiment (issue 14, ragged shapes): where the time of a GEMM whose output rows TMA cannot address goes.

GPT-2's lm_head (2048 x 768 -> 50257, the weight as it lies) against its tile-multiple twin (50304), at one plan
shape (the search's pick with the tile pinned to 128 x 256): the twin's TMA store; the ragged kernel's staged tile
stored an element a thread (TileLang's ``T.copy``); the same each row shifted in shared memory onto the
global row's 16-byte boundaries and bulk-copied by the TMA unit (:mod:`pt_tvm.passes.row_store`).
Each is checked against the float32 reference on fresh random inputs, then timed in alternating rounds from CUDA
graphs. ``profile`` instead launches each kernel once, for Nsight Compute.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.row_stores $OUT [profile]``.
"""
import contextlib
import json
import os
import sys

import torch

from benchmarks.suite import header
from pt_tvm import hw, templates
from pt_tvm.compiler import planned_func, schedule_template
from pt_tvm.measure import REL_TOL, as_outputs, capture, check_call, input_sets, time_samplers
from pt_tvm.passes import row_store

PROBLEM = {"M": 2048, "K": 768, "trans_B": True, "dtype": "float16", "block_M": 128, "block_N": 256}
KERNELS = {"twin, TMA store": (50304, True), "ragged, element stores": (50257, False),
           "ragged, rows shifted in place, bulk-copied": (50257, True),
           "diagnostic: the same, no store": (50257, "no store")}
# the diagnostic's helper: every store behind a condition no lane meets (lane > 64), so that the loads, shuffles,
# shifts and shared-memory writes stay and nothing is written to global memory; its output is not checked
_NO_STORE = {"if (lane == 0 && here && full > 0) {": "if (lane > 64 && here && full > 0) {",
             "if (e >= head && c + e < cols)": "if (lane > 64 && e >= head && c + e < cols)",
             "if (e < head && c + 8 + e < cols)": "if (lane > 64 && e < head && c + 8 + e < cols)",
             "if (e < head && e < cols)": "if (lane > 64 && e < head && e < cols)"}


@contextlib.contextmanager
def _row_stores(on: bool | str):
    """Templates built inside store rows off 16-byte boundaries through :mod:`pt_tvm.passes.row_store` (``"no
    store"``: its diagnostic form) or, off, through TileLang's element-wise ``T.copy``."""
    lanes, source = row_store.LANES, row_store.SOURCE
    row_store.LANES = lanes if on else ()
    if on == "no store":
        for old, new in _NO_STORE.items():
            assert old in source, old
            row_store.SOURCE = row_store.SOURCE.replace(old, new)
    try:
        yield
    finally:
        row_store.LANES, row_store.SOURCE = lanes, source


def main(out_dir: str, profile: bool = False) -> None:
    vdev = hw.from_device()
    tmpl = templates.get("gemm")
    fns, info = {}, {}
    for name, (n, rows) in KERNELS.items():
        with _row_stores(rows):
            result, problem, _ = schedule_template("gemm", vdev, params={**PROBLEM, "N": n})
            best = result.best
            kernel = tmpl.compile(planned_func("gemm", problem, best, vdev), vdev.tvm_target())
        make = lambda seed, p=problem: tmpl.make_inputs(p, "cuda", torch.Generator("cuda").manual_seed(seed))  # noqa: E731
        check = make(1_000)
        (chk,) = check_call(kernel, check, as_outputs(tmpl.reference(*check, **problem)))
        assert rows == "no store" or (chk.rel_err < REL_TOL["float16"] and chk.prefill == "nan"), (name, chk)
        info[name] = {"problem": problem, "plan": best.note, "predicted_ms": best.seconds * 1e3, "rel_err": chk.rel_err,
                      "flops": tmpl.flops(problem)}
        sets = input_sets(make, sum(t.numel() * t.element_size() for t in check), vdev.l2_bytes, max_sets=4)
        fns[name] = (kernel, sets)
        print(f"{name}: {best.note}, rel err {chk.rel_err:.1e}", flush=True)
    if profile:
        for kernel, sets in fns.values():
            kernel(*sets[0])
        torch.cuda.synchronize()
        return
    timings = time_samplers({k: capture(f, sets) for k, (f, sets) in fns.items()}, rounds=7, round_ms=150.0,
                            settle_ms=300.0)
    twin = info["twin, TMA store"]
    for name, t in timings.items():
        info[name].update(ms=t.ms, p20_ms=t.p20, p80_ms=t.p80, tflops=info[name]["flops"] / t.ms / 1e9)
    for name, e in info.items():
        print(f"{name:<54} {e['ms'] * 1e3:8.1f} us  {e['tflops']:5.0f} TFLOP/s  {e['tflops'] / twin['tflops']:.3f} "
              "of the twin (CUDA graphs)")
    with open(os.path.join(out_dir, "row_stores.json"), "w") as f:
        json.dump({"header": header("python -m benchmarks.experiments.row_stores $OUT", torch.cuda.get_device_name()),
                   "kernels": info}, f, indent=1, default=str)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"], "profile" in sys.argv[2:])
