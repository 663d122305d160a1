"""GPU experiment (issue 16, the op in a serving loop): does a decode kernel of ``dynamic`` sizes (the batch size
and the cache's sizes as kernel arguments, one kernel for every batch) run as fast as the kernel compiled for the
exact sizes?

For each config, the search's best plan at its sizes is built twice, with static sizes and with ``dynamic=True``
(priced at the same sizes), both checked against float32 on fresh inputs and timed from CUDA graphs in the same
rounds. Then ``pt_tvm.decode.DecodeAttention`` in a loop whose batch changes: its first call of a bucket (search
and compile), and a call at another batch size of the same bucket (neither).

Two steps: ``python -m benchmarks.experiments.decode_dynamic plan PLANS.json`` searches on any machine;
``python -m benchmarks.experiments.decode_dynamic run PLANS.json $OUT`` compiles (in worker processes), checks and
times on the GPU. Writes ``decode_dynamic.json``.
"""
import json
import os
import sys
import time

from benchmarks.decode import _GQA, _PAGE, _config

# (batch, kv_len, GQA index, q_len, page size): both layouts, the batch sizes of the suite
CONFIGS = [(1, 16384, 0, 1, 0), (1, 16384, 0, 1, _PAGE), (8, 65536, 1, 1, _PAGE), (32, 16384, 1, 4, _PAGE),
           (128, 4096, 0, 1, 0), (128, 16384, 0, 1, 0)]


def plan(path: str) -> None:
    """Search each config at its sizes and write the best plan."""
    from pt_tvm import hw
    from pt_tvm.compiler import schedule_template

    out = []
    for entry in CONFIGS:
        problem = dict(_config(*entry[:2], *_GQA[entry[2]], *entry[3:]).problem)
        result, resolved, _ = schedule_template("decode_attention", hw.get("h200"), params=problem)
        best = result.best
        out.append({"problem": resolved, "tile": best.plan.tile, "plan": best.plan.to_json(),
                    "predicted_ms": best.seconds * 1e3, "note": best.note})
        print(f"{entry}: predicted {best.seconds * 1e6:7.1f} us  {best.plan.tile}  {best.note}")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)


def run(path: str, out_dir: str) -> None:
    """Compile, check and time each config's plan at static and dynamic sizes; then the op's calls."""
    import torch

    from benchmarks.suite import header
    from pt_tvm import hw, templates
    from pt_tvm.measure import REL_TOL, input_sets, rel_err, time_replayed
    from pt_tvm.passes import apply_plan
    from pt_tvm.plan import ExecutionPlan
    from pt_tvm.tune import warm

    with open(path) as f:
        specs = json.load(f)
    vdev = hw.from_device()
    template = templates.get("decode_attention")
    forms = {"static": False, "dynamic": True}
    jobs = [("decode_attention", {**s["problem"], "dynamic": d}, s["tile"], s["plan"], vdev)
            for s in specs for d in forms.values()]
    errors = warm(jobs, workers=max(1, (os.cpu_count() or 2) - 1))
    rows = []
    for i, spec in enumerate(specs):
        problem = spec["problem"]
        make = lambda seed: template.make_inputs(problem, "cuda", torch.Generator(device="cuda").manual_seed(seed))  # noqa: E731
        check = make(99)
        ref = template.reference(*check, **problem)
        row = {"config": problem, "tile": spec["tile"], "note": spec["note"], "predicted_ms": spec["predicted_ms"]}
        fns = {}
        for j, (form, dynamic) in enumerate(forms.items()):
            try:
                func = apply_plan(template.build(**{**problem, "dynamic": dynamic}, **spec["tile"]),
                                  ExecutionPlan.from_json(spec["plan"]), vdev)
                kernel = template.compile(func, vdev.tvm_target())
                row[f"{form}_rel_err"] = rel_err(kernel(*check), ref)
                if row[f"{form}_rel_err"] <= REL_TOL[problem["dtype"]]:
                    fns[form] = kernel
            except Exception as e:  # a form that does not build is a row, not a crash
                row[f"{form}_error"] = f"{type(e).__name__}: {str(e).strip()[-300:]} {errors[2 * i + j][-200:]}"
        del check, ref
        sets = input_sets(make, sum(t.numel() * t.element_size() for t in make(0)), vdev.l2_bytes, max_sets=4)
        row["timing"], times = time_replayed(fns, sets, rounds=5, round_ms=100.0)
        for form, t in times.items():
            row[f"{form}_ms"] = t.ms
        del sets
        torch.cuda.empty_cache()
        rows.append(row)
        print(_line(row), flush=True)
    result = {"header": header("python -m benchmarks.experiments.decode_dynamic run PLANS.json $OUT",
                               torch.cuda.get_device_name()), "rows": rows}
    path = os.path.join(out_dir, "decode_dynamic.json")
    with open(path, "w") as f:  # the kernels' rows first: the op's calls search and compile, and may run out
        json.dump(result, f, indent=1)
    result["op"] = _op_calls(template)
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    for call in result["op"]:
        print(f"op: batch {call['batch']:3} kv {call['longest']:6}: {call['seconds']:8.3f} s, buckets "
              f"{call['buckets']}, kernels {call['kernels']}, rel_err {call['rel_err']:.1e}")


def _line(row: dict) -> str:
    c = row["config"]
    head = f"b{c['batch']:<3} kv{c['kv_len']:<6} h{c['heads']} q{c['q_len']} page{c['page_size']:<3}"
    if "static_ms" in row and "dynamic_ms" in row:
        return (f"{head} static {row['static_ms'] * 1e3:8.1f} us  dynamic {row['dynamic_ms'] * 1e3:8.1f} us  "
                f"dynamic/static {row['dynamic_ms'] / row['static_ms']:.3f}  rel_err {row['static_rel_err']:.1e} "
                f"{row['dynamic_rel_err']:.1e}")
    return f"{head} {row}"


def _op_calls(template) -> list[dict]:
    """A serving loop's calls of the op on one paged pool: batch sizes changing within a bucket and across one,
    each call's wall time (search and compile on a bucket's first call), checked against float32."""
    import torch

    from pt_tvm.decode import DecodeAttention
    from pt_tvm.measure import rel_err

    op = DecodeAttention()
    problem = dict(_config(32, 8192, *_GQA[0], 1, _PAGE).problem)
    problem, _ = template.resolve(**problem)
    q, k, v, seqlens, table = template.make_inputs(problem, "cuda", torch.Generator(device="cuda").manual_seed(5))
    calls = []
    for batch, longest in ((24, 6000), (20, 6100), (31, 6200), (8, 6300), (7, 6400)):
        lengths = torch.full_like(seqlens[:batch], longest)
        args = (q[:batch], k, v, lengths, table[:batch])
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = op(*args, max_seqlen=longest)
        torch.cuda.synchronize()
        seconds = time.perf_counter() - t0
        calls.append({"batch": batch, "longest": longest, "seconds": seconds, "buckets": len(op.book),
                      "kernels": len(op.plans()), "rel_err": rel_err(out, template.reference(*args, **problem))})
    return calls


if __name__ == "__main__":
    if sys.argv[1] == "plan":
        plan(sys.argv[2])
    else:
        run(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else os.environ["OUT"])
