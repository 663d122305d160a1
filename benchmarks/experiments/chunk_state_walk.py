"""GPU experiment (issue 15 item 4): Mamba2's chunk_state against the memory roofline, its pick (a software
pipeline, two to four blocks an SM, each loading its chunk's rows and then storing its 32 KB float32 state tile)
against the best warp-specialized plan without turns, launched and walked persistently (one block an SM whose
producer loads the next tile's rows while the consumers store this one's state). The model prices the walk 1.10x
the pick and the launched plan 1.29x at batch 64 x 1024 (it priced the pick 1.24x its measured time there on
2026-11-28). Each kernel is checked on every output against the float32 reference on fresh random inputs
(NaN-prefilled), then timed in alternating rounds; achieved bandwidth counts every parameter read or written once
(``benchmarks.roofline.compulsory_bytes``).

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.chunk_state_walk $OUT``.
"""
import json
import os
import sys
import time

import torch

from benchmarks.experiments.variants import check_and_time, pinned_kernel, priced
from benchmarks.roofline import compulsory_bytes
from benchmarks.suite import header
from pt_tvm import hw, templates
from pt_tvm.compiler import schedule_template
from pt_tvm.plan import Style
from pt_tvm.search import Candidate, SearchResult
from pt_tvm.space import tile_walks
from pt_tvm.tune import compile_jobs, warm
from pt_tvm.verify import PlanError, verify

CONFIGS = [dict(batch=64, seqlen=1024), dict(batch=64, seqlen=4096), dict(batch=1, seqlen=16384)]


def variants(result: SearchResult, vdev: hw.VDevice) -> dict[str, Candidate]:
    """The pick; the best warp-specialized plan without turns; its cheapest persistent walk that verifies."""
    ws = next(c for c in result.ranked if c.plan.style == Style.WARP_SPECIALIZED and not c.plan.handoffs)
    walks = []
    for plan in (p for p in tile_walks(ws.plan, ws.graph, vdev) if p.persistent):
        try:
            verify(plan, ws.graph, vdev)
        except PlanError:
            continue
        walks.append(priced(ws, plan, vdev, "persistent"))
    return {"pick": result.best, "ws": ws, **({"ws walk": min(walks, key=lambda c: c.seconds)} if walks else {})}


def main(out_dir: str) -> None:
    t0 = time.time()
    vdev = hw.from_device()
    tmpl = templates.get("chunk_state")
    searched = []
    for cfg in CONFIGS:
        result, problem, _ = schedule_template("chunk_state", vdev, params=cfg)
        searched.append((problem, variants(result, vdev)))
    errors = iter(warm([j for problem, cands in searched for j in compile_jobs("chunk_state", problem, vdev,
                                                                             cands.values())],
                       workers=max(1, (os.cpu_count() or 2) - 1)))
    rows = []
    for problem, cands in searched:
        failed = {name: err for name, err in zip(list(cands), errors) if err}
        cands = {name: c for name, c in cands.items() if name not in failed}  # a kernel that did not build: reported
        fns = {name: pinned_kernel("chunk_state", c, problem, vdev) for name, c in cands.items()}
        shape = {k: v for k, v in problem.items() if k not in tmpl.tile}
        info = check_and_time(fns, tmpl, shape, vdev, rounds=7)
        nbytes = compulsory_bytes("chunk_state", problem)
        for name, c in cands.items():
            info[name].update(tbps=nbytes / info[name]["ms"] / 1e9, predicted_ms=c.seconds * 1e3, plan=c.note,
                              tile=dict(c.plan.tile), persistent=c.plan.persistent)
        rows.append({"config": shape, "bytes": nbytes, "systems": info, "did not build": failed})
        base = info["pick"]["ms"]
        print(f"b{shape['batch']} s{shape['seqlen']}: " + "  ".join(
            f"{n} {v['ms']:.4f} ms ({base / v['ms']:.3f}x, {v['tbps']:.2f} TB/s, predicted {v['predicted_ms']:.4f})"
            for n, v in info.items()) + f"  [{time.time() - t0:.0f} s]", flush=True)
        with open(os.path.join(out_dir, "chunk_state_walk.json"), "w") as f:
            json.dump({"header": header("python -m benchmarks.experiments.chunk_state_walk $OUT",
                                        torch.cuda.get_device_name()), "rows": rows}, f, indent=1, default=str)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
