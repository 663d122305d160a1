"""GPU experiment (issue 16): which split-KV plan reaches the copy bandwidth at batch 1, kv 16k, paged.

That config is the decode suite's only one under 85% of the device-to-device copy peak (69% on one H200, 22.6 us a
call: 32 splits of a 2-stage software pipeline, the combine kernel after it). Here its plans by split count
(16, 32, 64), pipeline stages (2-4), key tile (64, 128), the combine's form (kernel or fused) and style, each the
best-priced of its kind, are checked against float32 and timed from CUDA graphs beside a copy of the same bytes
and the 2 GiB copy peak.

Two steps: ``python -m benchmarks.experiments.decode_split plan PLANS.json [LABEL ...]`` searches on any machine
(the GPU machine's time is short; the searches take a minute) and writes the plans; ``python -m
benchmarks.experiments.decode_split run PLANS.json $OUT`` compiles them (in worker processes), checks and times
them on the GPU. Writes ``decode_split.json``.
"""
import json
import os
import sys

from benchmarks.decode import _config

PROBLEM = dict(_config(1, 16384, 32, 8, "llama3-8b", 1, 16).problem)
# (label, style, num_splits, block_N, num_stages, fused): each kind's best plan with its split and key tile pinned
KINDS = [(f"sp{s} b{b} st{st}{' fused' if f else ''}", "software_pipeline", s, b, st, f)
         for s, b, st, f in [(32, 64, 2, 0), (32, 64, 3, 0), (32, 64, 4, 0), (64, 64, 2, 0), (64, 64, 3, 0),
                             (16, 64, 4, 0), (16, 128, 2, 0), (32, 64, 2, 1), (32, 64, 3, 1), (16, 128, 2, 1),
                             (64, 32, 2, 0), (32, 32, 2, 0), (32, 32, 3, 0)]]
KINDS += [(f"ws{s} b{b} d{d}", "warp_specialized", s, b, d, 0) for s, b, d in [(16, 64, 2), (32, 64, 2), (32, 64, 3)]]


def plan(path: str, labels: tuple[str, ...] = ()) -> None:
    """Search each kind's split and key tile (the fused combine pinned where the kind has it) and write its best plan;
    ``labels``: only those kinds."""
    from pt_tvm import hw
    from pt_tvm.compiler import schedule_template

    vdev = hw.get("h200")
    ranked, problem, out = {}, None, []
    for label, style, splits, block_n, stages, fused in KINDS:
        if labels and label not in labels:
            continue
        pins = {"num_splits": splits, "block_N": block_n, **({"fused_combine": 1} if fused else {})}
        key = json.dumps(pins, sort_keys=True)
        if key not in ranked:
            result, resolved, _ = schedule_template("decode_attention", vdev, params={**PROBLEM, **pins})
            ranked[key], problem = result.ranked, problem or resolved
        c = next((c for c in ranked[key] if c.plan.style.value == style and c.plan.num_stages == stages), None)
        if c is not None:
            out.append({"label": label, "tile": c.plan.tile, "plan": c.plan.to_json(),
                        "predicted_ms": c.seconds * 1e3, "note": c.note})
            print(f"{label:18} predicted {c.seconds * 1e6:6.1f} us  {c.note}")
    with open(path, "w") as f:
        json.dump({"problem": problem, "plans": out}, f, indent=1)


def run(path: str, out_dir: str) -> None:
    """Compile, check and time the plans of ``path`` with the copy of the same bytes and the copy peak."""
    import torch

    from benchmarks.decode import hbm_copy_tbps
    from benchmarks.suite import header
    from pt_tvm import hw, templates
    from pt_tvm.measure import REL_TOL, input_sets, rel_err, time_replayed
    from pt_tvm.passes import apply_plan
    from pt_tvm.plan import ExecutionPlan
    from pt_tvm.templates.decode_attention import kv_bytes
    from pt_tvm.tune import warm

    with open(path) as f:
        spec = json.load(f)
    problem, vdev = spec["problem"], hw.from_device()
    template = templates.get("decode_attention")
    jobs = [("decode_attention", dict(problem), p["tile"], p["plan"], vdev) for p in spec["plans"]]
    errors = warm(jobs, workers=max(1, (os.cpu_count() or 2) - 1))
    make = lambda seed: template.make_inputs(problem, "cuda", torch.Generator(device="cuda").manual_seed(seed))  # noqa: E731
    sets = input_sets(make, sum(t.numel() * t.element_size() for t in make(0)), vdev.l2_bytes, max_sets=4)
    check = make(99)
    ref = template.reference(*check, **problem)
    kv = kv_bytes(problem)
    fns, rows = {}, []
    for p, err in zip(spec["plans"], errors):
        row = {k: p[k] for k in ("label", "tile", "predicted_ms", "note")}
        try:
            func = apply_plan(template.build(**problem, **p["tile"]), ExecutionPlan.from_json(p["plan"]), vdev)
            kernel = template.compile(func, vdev.tvm_target())
            row["rel_err"] = rel_err(kernel(*check), ref)
            if row["rel_err"] <= REL_TOL[problem["dtype"]]:
                fns[p["label"]] = kernel
        except Exception as e:  # a plan that does not build is a row, not a crash
            row["error"] = f"{type(e).__name__}: {str(e).strip()[-300:]} {err[-200:]}"
        rows.append(row)
    src = torch.randn(int(kv) // 4, device="cuda")
    dst = torch.empty_like(src)
    fns_copy = {"copy of the KV bytes": lambda *_: dst.copy_(src)}
    way, times = time_replayed({**fns, **fns_copy}, sets, rounds=5, round_ms=100.0)
    peak = hbm_copy_tbps()
    for row in rows:
        if row["label"] in times:
            row["ms"] = times[row["label"]].ms
            row["kv_tbps"] = kv / (row["ms"] * 1e-3) / 1e12
            row["hbm_fraction"] = row["kv_tbps"] / peak
    copy_ms = times["copy of the KV bytes"].ms
    result = {"header": header("python -m benchmarks.experiments.decode_split run PLANS.json $OUT",
                               torch.cuda.get_device_name()),
              "problem": problem, "timing": way, "copy_peak_tbps": peak,
              "same_bytes_copy": {"ms": copy_ms, "tbps": 2 * kv / (copy_ms * 1e-3) / 1e12}, "rows": rows}
    with open(os.path.join(out_dir, "decode_split.json"), "w") as f:
        json.dump(result, f, indent=1)
    print(f"copy peak {peak:.2f} TB/s; a copy of the {kv / 1e6:.0f} MB of K and V: {copy_ms * 1e3:.1f} us "
          f"({result['same_bytes_copy']['tbps']:.2f} TB/s read + written); timing: {way}")
    for row in sorted(rows, key=lambda r: r.get("ms", 1e9)):
        print(f"{row['label']:18} predicted {row['predicted_ms'] * 1e3:6.1f} us  "
              + (f"measured {row['ms'] * 1e3:6.1f} us  {row['hbm_fraction']:.0%} of the copy peak  "
                 f"rel_err {row['rel_err']:.1e}" if "ms" in row else row.get("error", f"rel_err {row.get('rel_err')}")))


if __name__ == "__main__":
    if sys.argv[1] == "plan":
        plan(sys.argv[2], tuple(sys.argv[3:]))
    else:
        run(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else os.environ["OUT"])
