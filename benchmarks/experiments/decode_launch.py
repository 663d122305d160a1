"""GPU experiment (issue 16): where batch 1, kv 16k, paged decoding spends its time, and what its launches cost.

That config's pick (32 splits of a 2-stage software pipeline over 64-key tiles, then the combine kernel) ran
22.4 us a call on one H200, 71% of the copy peak; the bar's 85% is 18.5 us for its 67 MB of K and V. Timed here
from CUDA graphs in one process, every output checked against float32:

- the call as the suite makes it, and its two kernels alone (the combine on one call's partials): on a chip with
  programmatic dependent launch (``pdl`` among its features), the split kernel triggers it first and the combine's
  blocks, placed while the split kernel runs, wait for the partials on the device;
- the call with the combine launched plainly after the split kernel (``build_combine(pdl=False)``), as before
  ae9a895;
- the fused combine (the last block of each KV head combines; no second kernel) at the same tile and depth;
- torch reading the same bytes (a float32 ``sum`` over a tensor of K's and V's size) and copying them;
- the call and the split kernel from graphs of one call per input set, as :func:`pt_tvm.measure.capture` made
  them before it repeated the sets (a replay's own launch then weighs on two calls).

torch.profiler then gives each kernel's device time over eager calls (the gaps between kernels left out).
``python -m benchmarks.experiments.decode_launch $OUT [contiguous]`` writes ``decode_launch[-contiguous].json``;
``contiguous``: the same config on a contiguous cache, to tell what reading through the block table costs.
"""
import json
import os
import sys

from benchmarks.decode import _config

PAGED = dict(_config(1, 16384, 32, 8, "llama3-8b", 1, 16).problem)
TILE = {"num_splits": 32, "block_N": 64}
STAGES = 2


def _kernels(vdev, template, problem):
    """The 2-stage software pipeline at ``TILE`` with the combine kernel and fused, each searched here."""
    from pt_tvm.compiler import schedule_template
    from pt_tvm.plan import Style

    out = {}
    for fused in (0, 1):
        result, resolved, build = schedule_template("decode_attention", vdev,
                                                    params={**problem, **TILE, "fused_combine": fused})
        cand = next(c for c in result.ranked
                    if c.plan.style == Style.SOFTWARE_PIPELINE and c.plan.num_stages == STAGES)
        out[fused] = (template.compile(build(cand), vdev.tvm_target()), cand.seconds * 1e3, resolved)
    return out


def _kernel_times(fns, inputs, calls=50):
    """Each callable's kernels' mean device time (us) per call, from torch.profiler over eager calls."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    out = {}
    for name, fn in fns.items():
        fn(*inputs)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                fn(*inputs)
            torch.cuda.synchronize()
        out[name] = {e.key[:60]: e.device_time_total / calls for e in prof.key_averages() if e.device_time_total > 0}
    return out


def run(out_dir: str, contiguous: bool = False) -> None:
    import tilelang
    import torch

    from benchmarks.decode import hbm_copy_tbps
    from benchmarks.suite import header
    from pt_tvm import hw, templates
    from pt_tvm.measure import GRAPH, REL_TOL, capture, input_sets, rel_err, time_samplers
    from pt_tvm.templates.decode_attention import SplitKV, build_combine, kv_bytes

    vdev = hw.from_device()
    template = templates.get("decode_attention")
    kernels = _kernels(vdev, template, {**PAGED, "page_size": 0} if contiguous else PAGED)
    split_kv, predicted, problem = kernels[0]
    fused, fused_predicted, _ = kernels[1]
    p = problem
    combine_plain = tilelang.compile(
        build_combine(p["batch"], p["q_len"], p["heads"], p["dim"], p["dtype"], TILE["num_splits"], pdl=False),
        out_idx=[-1], target=vdev.tvm_target(), pass_configs=dict(template.pass_configs))
    plain = SplitKV(split_kv.split, combine_plain)

    kv = kv_bytes(problem)
    make = lambda seed: template.make_inputs(problem, "cuda", torch.Generator(device="cuda").manual_seed(seed))  # noqa: E731
    sets = input_sets(make, int(kv), vdev.l2_bytes, max_sets=4)
    blobs = [torch.randn(int(kv) // 2, device="cuda", dtype=torch.bfloat16) for _ in sets]  # K's and V's bytes
    sets = [(*s, b) for s, b in zip(sets, blobs)]
    dst = torch.empty_like(blobs[0])
    partials = split_kv.split(*sets[0][:-1])
    systems = {
        "call (split + combine)": lambda *a: split_kv(*a[:-1]),
        "call, combine launched plainly": lambda *a: plain(*a[:-1]),
        "fused combine": lambda *a: fused(*a[:-1]),
        "split kernel alone": lambda *a: split_kv.split(*a[:-1]),
        "combine kernel alone": lambda *a: split_kv.combine(*partials),
        "torch sum of the bytes": lambda *a: a[-1].sum(dtype=torch.float32),
        "copy of the bytes": lambda *a: dst.copy_(a[-1]),
    }
    check = make(99)
    ref = template.reference(*check, **problem)
    errors = {name: rel_err(systems[name](*check, None), ref) for name in list(systems)[:3]}
    again = make(98)
    errors["fused combine, second call"] = rel_err(fused(*again), template.reference(*again, **problem))
    tol = REL_TOL[problem["dtype"]]
    graphs = {name: capture(fn, sets) for name, fn in systems.items()}
    for name in ("call (split + combine)", "split kernel alone"):  # as captured before REPLAY_MIN_MS
        graphs[f"{name}, {len(sets)} calls a graph"] = capture(systems[name], sets, min_replay_ms=0.0)
    way, times = GRAPH, time_samplers(graphs, rounds=7, round_ms=100.0, settle_ms=200.0)
    peak = hbm_copy_tbps()
    device_us = _kernel_times({k: systems[k] for k in list(systems)[:3]}, sets[0])
    rows = []
    for name, t in times.items():
        row = {"system": name, "us": t.ms * 1e3, "p20_us": t.p20 * 1e3, "p80_us": t.p80 * 1e3,
               "graph_calls": graphs[name].calls_per_sample}
        if name in errors:
            row["rel_err"] = errors[name]
            row["valid"] = errors[name] <= tol
        if name.startswith(("call", "fused", "split", "torch sum")):
            row["kv_tbps"] = kv / (t.ms * 1e-3) / 1e12
            row["copy_peak_fraction"] = row["kv_tbps"] / peak
        rows.append(row)
    command = "python -m benchmarks.experiments.decode_launch $OUT" + (" contiguous" if contiguous else "")
    result = {"header": header(command, torch.cuda.get_device_name()),
              "problem": problem, "tile": {**TILE, "num_stages": STAGES}, "timing": way, "copy_peak_tbps": peak,
              "kv_bytes": kv, "predicted_us": {"combine kernel": predicted * 1e3, "fused": fused_predicted * 1e3},
              "rows": rows, "device_us_per_call": device_us,
              "fused second call rel_err": errors["fused combine, second call"]}
    with open(os.path.join(out_dir, f"decode_launch{'-contiguous' if contiguous else ''}.json"), "w") as f:
        json.dump(result, f, indent=1)
    print(f"{torch.cuda.get_device_name()}; copy peak {peak:.2f} TB/s; {kv / 1e6:.0f} MB of K and V; timing {way}")
    for row in rows:
        extra = f"  {row['copy_peak_fraction']:.0%} of the copy peak" if "copy_peak_fraction" in row else ""
        err = f"  rel_err {row['rel_err']:.1e}" if "rel_err" in row else ""
        print(f"{row['system']:42} {row['us']:7.1f} us ({row['p20_us']:.1f}-{row['p80_us']:.1f}), "
              f"{row['graph_calls']} calls a graph{extra}{err}")
    for name, kernels_us in device_us.items():
        print(f"{name}: " + ", ".join(f"{k} {v:.1f} us" for k, v in kernels_us.items()))


if __name__ == "__main__":
    run(sys.argv[1], "contiguous" in sys.argv[2:])
