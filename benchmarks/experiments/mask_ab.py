"""GPU experiment (issues 14, 15): FlashAttention's score mask on every key block, as the template applied it
before 8301e53, against only on the blocks that need it (a causal diagonal, the block holding the last key).

Per config, in one process on one GPU: the template at REV (``git show REV:templates/flash_attention.py``, the
mask on every block) and the current one, each at the tile the current search picks and the plan the search
picks for that tile and template, checked on every output against the float32 reference on fresh random inputs,
then timed in alternating rounds with inputs rotated past the L2.

Run from the project root on the GPU machine (a git checkout with REV in its history):
``python -m benchmarks.experiments.mask_ab $OUT [REV]``. Prints a table, writes ``mask_ab.json``.
"""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

import torch

from benchmarks.suite import header
from pt_tvm import hw, templates
from pt_tvm.compiler import schedule, schedule_template
from pt_tvm.measure import REL_TOL, Queued, as_outputs, check_call, input_sets, kernel_outputs, time_samplers
from pt_tvm.passes import apply_plan

REV = "ff889f2"  # the last commit that masked every key block
CONFIGS = [
    {"batch": 16, "heads": 32, "kv_heads": 32, "seq_len": 1024, "dim": 64, "causal": True},
    {"batch": 4, "heads": 16, "kv_heads": 16, "seq_len": 4096, "dim": 128, "causal": True},
    {"batch": 8, "heads": 16, "kv_heads": 16, "seq_len": 1500, "dim": 128, "causal": False},
]


def _template_at(rev: str):
    """The ``flash_attention`` module as it was at ``rev``, imported from a file (TileLang reads kernels' source)."""
    source = subprocess.check_output(["git", "show", f"{rev}:templates/flash_attention.py"], text=True)
    path = os.path.join(tempfile.mkdtemp(), "flash_attention_at_rev.py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location("pt_tvm.templates._flash_attention_at_rev", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _kernel(func, vdev, template):
    best = schedule(func, vdev).best
    return template.compile(apply_plan(func, best.plan, vdev, best.graph), vdev.tvm_target()), best.note


def main(out_dir: str, rev: str = REV) -> None:
    vdev, old = hw.from_device(), _template_at(rev)
    tmpl = templates.get("flash_attention")
    rows = []
    for config in CONFIGS:
        result, problem, build = schedule_template("flash_attention", vdev, params=config)
        tile = {k: v for k, v in result.best.plan.tile.items() if k != "pack_gqa"}
        funcs = {"every block": old.build_flash_attention(**problem, **tile, num_stages=2),
                 "where needed": tmpl.build(**problem, **tile, pack_gqa=0)}
        row, samplers = {"problem": problem, "tile": tile}, {}
        for label, func in funcs.items():
            kernel, note = _kernel(func, vdev, tmpl)
            make = lambda seed: tmpl.make_inputs(problem, "cuda", torch.Generator("cuda").manual_seed(seed))  # noqa: E731
            check = make(7)
            checks = check_call(kernel_outputs(tmpl, kernel), check, as_outputs(tmpl.reference(*check, **problem)))
            row[label] = {"plan": note, "rel_err": max(c.rel_err for c in checks)}
            assert row[label]["rel_err"] < REL_TOL[problem["dtype"]], row
            sets = input_sets(make, sum(t.numel() * t.element_size() for t in check), vdev.l2_bytes, max_sets=4)
            samplers[label] = Queued(kernel_outputs(tmpl, kernel), sets)
        for label, t in time_samplers(samplers, rounds=15, round_ms=150.0).items():
            row[label].update(ms=t.ms, p20_ms=t.p20, p80_ms=t.p80)
        row["speedup"] = row["every block"]["ms"] / row["where needed"]["ms"]
        rows.append(row)
        print(f"{config}  {tile}  every block {row['every block']['ms']:.4f} ms  where needed "
              f"{row['where needed']['ms']:.4f} ms  speed-up {row['speedup']:.3f}", flush=True)
        with open(os.path.join(out_dir, "mask_ab.json"), "w") as f:
            json.dump({"header": header(f"python -m benchmarks.experiments.mask_ab $OUT {rev}",
                                        torch.cuda.get_device_name()), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:])
