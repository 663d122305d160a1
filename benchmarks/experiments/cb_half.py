"""GPU experiment (issue 15 item 4): Mamba2's chunk_scan reading ``cb`` in the input dtype instead of float32.

chunk_scan is held in the memory hierarchy, L2 first (docs/NOTES-parity.md, "Mamba2 against the rooflines"): every
head's blocks read their group's ``cb`` tiles again, two thirds of a key step's bytes at the suite's 64x64x32 tiles.
mamba-ssm passes ``cb`` in float32, though both kernels round the decayed scores built from it to the input dtype
for their GEMM; ``cb_dtype`` set to the input dtype halves those bytes. Per config, the search's pick for each
``cb_dtype`` (fresh random inputs: ``cb`` computed in float32, then rounded for the half kernel outside the timed
call, as a ``C B^T`` GEMM would write it), every output checked against the float32 reference of the float32
``cb``, then timed from CUDA graphs in alternating rounds beside mamba-ssm's Triton kernel called as its combined
forward calls it (float32 ``cb``; benchmarks/fetch_mamba_ssm.sh on PYTHONPATH).

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.cb_half $OUT``; writes
``cb_half.json``.
"""
import sys
import time

import torch

from benchmarks.experiments.variants import before, describe, save_rows
from benchmarks.systems import build_system
from pt_tvm import hw, templates
from pt_tvm.compiler import schedule_template
from pt_tvm.measure import REL_TOL, as_outputs, capture, check_call, input_sets, time_samplers

CONFIGS = [dict(batch=b, seqlen=s, dtype=d) for b, s, d in
           ((64, 1024, "float16"), (64, 4096, "float16"), (1, 16384, "float16"), (8, 4096, "bfloat16"))]
DEADLINE_S = 300  # no config starts timing after this


def _halved(inputs: tuple, dtype: str) -> tuple:
    """``inputs`` with ``cb`` (the first) rounded to ``dtype``."""
    return (inputs[0].to(getattr(torch, dtype)).contiguous(), *inputs[1:])


def main(out_dir: str) -> None:
    t_start, vdev, tmpl = time.time(), hw.from_device(), templates.get("chunk_scan")
    rows = []
    for cfg in before(CONFIGS, DEADLINE_S, t_start):
        picks, fns, info = {}, {}, {}
        for cbd in ("float32", cfg["dtype"]):
            result, problem, build = schedule_template("chunk_scan", vdev, params={**cfg, "cb_dtype": cbd})
            picks[cbd] = (problem, result.best, tmpl.compile(build(), vdev.tvm_target()))
        problem = picks["float32"][0]
        make = lambda seed: tmpl.make_inputs(problem, "cuda", torch.Generator("cuda").manual_seed(seed))  # noqa: E731
        sets = input_sets(make, sum(t.numel() * t.element_size() for t in make(0)), vdev.l2_bytes, max_sets=4)
        check = make(1_000)
        refs = as_outputs(tmpl.reference(*check, **problem))
        triton, tinfo = build_system("mamba-triton", tmpl, problem, vdev)
        systems = {"mamba-triton": (triton, sets, check, tinfo)}
        for cbd, (_, best, kernel) in picks.items():
            half = cbd != "float32"
            systems[f"pt-tvm cb {cbd}"] = (kernel, [_halved(s, cbd) for s in sets] if half else sets,
                                           _halved(check, cbd) if half else check,
                                           {"kernel": describe(best), "predicted_ms": best.seconds * 1e3})
        for name, (fn, fsets, fcheck, entry) in systems.items():
            info[name] = dict(entry)
            if fn is None:
                continue
            (chk,) = check_call(fn, fcheck, refs)
            info[name].update(rel_err=chk.rel_err, prefill=chk.prefill)
            if chk.rel_err < REL_TOL[problem["dtype"]] and chk.prefill == "nan":
                fns[name] = capture(fn, fsets)
            else:
                info[name]["error"] = f"wrong result: rel err {chk.rel_err:.2e} ({chk.prefill} prefill)"
        del refs
        for name, t in time_samplers(fns, rounds=7, round_ms=150.0).items():
            info[name].update(ms=t.ms, p20_ms=t.p20, p80_ms=t.p80)
        rows.append({"config": cfg, "systems": info})
        save_rows(out_dir, "cb_half", rows)
        base = info["pt-tvm cb float32"].get("ms")
        print(f"{cfg['dtype'][:4]} b{cfg['batch']} s{cfg['seqlen']}: " + "  ".join(
            f"{n} {v['ms']:.4f} ms ({base / v['ms']:.3f}x, err {v['rel_err']:.1e})" if "ms" in v else f"{n} ERR"
            for n, v in info.items()), flush=True)
        torch.cuda.empty_cache()
    print(f"(speed over pt-tvm's float32 cb; {time.time() - t_start:.0f} s)")


if __name__ == "__main__":
    main(sys.argv[1])
