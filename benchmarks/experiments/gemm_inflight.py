"""GPU experiment (issue 15, GEMM): the k-loop's wgmma kept in flight across steps, CUTLASS's mainloop.

A consumer warpgroup of pt-tvm's warp-specialized GEMM waits for the whole k-step (``warpgroup_wait<0>``) before
it releases the step's stage and waits for the next: the tensor cores idle between one step's last wgmma and the
next step's first. CUTLASS's mainloop waits with ``warpgroup_wait<1>`` (every group but the one just issued),
then releases the stage of the step before, so the next step's wgmmas queue behind the running ones. TileLang's
``WSSchedule`` releases a stage in the step that waited for it, so the plan cannot say this yet; this experiment
rewrites the emitted CUDA of the k-loop (a CUDA post-processing hook, only on kernels renamed for it) to measure
what it is worth before building it: per config, the search's pick and the best plan of the other ``block_K``,
each as emitted and rewritten, checked against the float32 reference on fresh random inputs, then timed beside
cuBLAS from CUDA graphs in alternating rounds.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.gemm_inflight $OUT``.
"""
import concurrent.futures
import json
import multiprocessing
import os
import re
import sys
import time

import torch
from tilelang.engine import register_cuda_postproc

from benchmarks.experiments.variants import describe
from benchmarks.suite import header
from benchmarks.systems import build_system
from pt_tvm import hw, templates
from pt_tvm.compiler import schedule_template
from pt_tvm.measure import REL_TOL, as_outputs, check_call, input_sets, time_interleaved
from pt_tvm.passes import apply_plan
from pt_tvm.plan import ExecutionPlan

CONFIGS = [dict(M=4096, N=4096, K=4096, dtype="float16", note="square 4096"),
           dict(M=8192, N=8192, K=8192, dtype="float16", note="square 8192"),
           dict(M=8192, N=4096, K=4096, dtype="float16", note="llama3-8b o"),
           dict(M=8192, N=14336, K=4096, dtype="float16", note="llama3-8b up"),
           dict(M=8192, N=4096, K=14336, dtype="float16", note="llama3-8b down"),
           dict(M=2048, N=6144, K=4096, dtype="float16", note="llama3-8b qkv M2048")]
MARK = "_pt_inflight"
DEADLINE_S = 470

# the consumer's k-loop: its wgmmas, the wait for all of them, the stage's release and the phase's step
_LOOP = re.compile(
    r"(?P<ind>[ \t]*)for \(int (?P<k>k\w*) = 0; (?P=k) < (?P<n>\d+); \+\+(?P=k)\) \{\n"
    r"(?P<body>(?:(?!\n(?P=ind)\}\n).)*?)"
    r"\n(?P<ind2>[ \t]*)(?P<empty>p_\w+_empty)\[(?P<slot>[^\n]*?)\]\.arrive\(\);\n"
    r"(?P=ind2)(?P<ph>p_\w+_phase\w*)\[0\] = \((?P=ph)\[0\] \+ 1\);\n"
    r"(?P=ind)\}\n", re.S)


def in_flight(code: str, target=None) -> str:
    """``code`` (a kernel renamed with :data:`MARK`) with each k-loop step waiting for all but its own wgmmas and
    releasing the stage of the step before; after the loop, a wait for all and the last stage's release."""
    if MARK not in code:
        return code

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

    out, n = _LOOP.subn(sub, code)
    assert out != code, "no k-loop rewritten"
    return out


def _build(problem: dict, tile: dict, plan_json: str, vdev: hw.VDevice, variant: bool):
    tmpl = templates.get("gemm")
    func = apply_plan(tmpl.build(**problem, **tile), ExecutionPlan.from_json(plan_json), vdev)
    if variant:
        func = func.with_attr("global_symbol", str(func.attrs["global_symbol"]) + MARK)
    return tmpl.compile(func, vdev.tvm_target())


def _compile(job: tuple) -> str:
    """Worker: compile one kernel into TileLang's cache; an error string, "" when it compiled."""
    try:
        _build(*job)
        return ""
    except Exception as e:  # reported by the in-process build that follows
        return f"{type(e).__name__}: {e}"[:400]


def _hook() -> None:
    register_cuda_postproc(in_flight, override=True)


def main(out_dir: str) -> None:
    t0 = time.time()
    _hook()
    vdev = hw.from_device()
    tmpl = templates.get("gemm")
    searched = []
    for cfg in CONFIGS:
        problem = {k: v for k, v in cfg.items() if k != "note"}
        result, problem, _ = schedule_template("gemm", vdev, params=problem)
        other = next((c for c in result.ranked if c.plan.tile["block_K"] != result.best.plan.tile["block_K"]), None)
        picks = {"pick": result.best, **({"other block_K": other} if other else {})}
        searched.append((cfg, problem, picks))
    jobs = [(problem, dict(c.plan.tile), c.plan.to_json(), vdev, v)
            for _, problem, picks in searched for c in picks.values() for v in (False, True)]
    with concurrent.futures.ProcessPoolExecutor(max(1, (os.cpu_count() or 2) - 1), initializer=_hook,
                                                mp_context=multiprocessing.get_context("spawn")) as pool:
        errors = iter(list(pool.map(_compile, jobs)))
    print(f"searched {len(CONFIGS)} configs, compiled {len(jobs)} kernels in {time.time() - t0:.0f} s", flush=True)
    rows, head = [], header("python -m benchmarks.experiments.gemm_inflight $OUT", torch.cuda.get_device_name())
    for cfg, problem, picks in searched:
        errs = {(name, v): next(errors) for name in picks for v in (False, True)}
        if time.time() - t0 > DEADLINE_S:
            print(f"{cfg['note']}: not timed, past {DEADLINE_S} s", flush=True)
            continue
        make = lambda seed: tmpl.make_inputs(problem, "cuda", torch.Generator("cuda").manual_seed(seed))  # noqa: E731
        check = make(1_000)
        refs = as_outputs(tmpl.reference(*check, **problem))
        cublas, _ = build_system("cublas", tmpl, problem, vdev)
        fns, info = {"cublas": cublas}, {"cublas": {}}
        for name, c in picks.items():
            for v in (False, True):
                label = f"{name}{', in flight' if v else ''}"
                entry = {"kernel": describe(c), "plan": c.plan.to_dict(), "predicted_ms": c.seconds * 1e3,
                         "worker": errs[name, v]}
                try:
                    fn = _build(problem, dict(c.plan.tile), c.plan.to_json(), vdev, v)
                    src = fn.get_kernel_source()
                    entry["rewritten"] = MARK in src and "warpgroup_wait<1>" in src
                    fns[label] = fn
                except Exception as e:  # reported in the row
                    entry["error"] = f"{type(e).__name__}: {e}"[:400]
                info[label] = entry
        for name, fn in list(fns.items()):
            (chk,) = check_call(fn, check, refs)
            info[name].update(rel_err=chk.rel_err, prefill=chk.prefill)
            if not (chk.rel_err < REL_TOL[problem["dtype"]] and chk.prefill == "nan"):
                info[name]["error"] = f"wrong result: rel err {chk.rel_err:.2e} ({chk.prefill} prefill)"
                del fns[name]
        del refs, check
        sets = input_sets(make, sum(t.numel() * t.element_size() for t in make(0)), vdev.l2_bytes, max_sets=4)
        for name, t in time_interleaved(fns, sets, rounds=7, round_ms=150.0).items():
            info[name].update(ms=t.ms, p20_ms=t.p20, p80_ms=t.p80, tflops=tmpl.flops(problem) / t.ms / 1e9)
        rows.append({"config": cfg, "systems": info})
        base = info["cublas"]["tflops"]
        print(f"{cfg['note']:<22} cublas {base:.0f}  " + "  ".join(
            f"{n} {v['tflops']:.0f} ({v['tflops'] / base:.3f}x)" if "tflops" in v else f"{n} ERR"
            for n, v in info.items() if n != "cublas") + f"  [{time.time() - t0:.0f} s]", flush=True)
        with open(os.path.join(out_dir, "gemm_inflight.json"), "w") as f:
            json.dump({"header": head, "rows": rows}, f, indent=1, default=str)
    print("\nTFLOP/s over cuBLAS's; in flight over as emitted")
    for r in rows:
        s = r["systems"]
        for name in (n for n in s if n != "cublas" and not n.endswith("in flight")):
            a, b = s[name], s.get(f"{name}, in flight", {})
            if "tflops" in a and "tflops" in b:
                base = s["cublas"]["tflops"]
                print(f"{r['config']['note']:<22} {name:<14} {a['kernel']:<44} {a['tflops'] / base:.3f}"
                      f" -> {b['tflops'] / base:.3f}  ({b['tflops'] / a['tflops']:.3f}x)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
