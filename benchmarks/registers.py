"""The cost model's registers a thread against ptxas's, for a template's best software-pipelined plans (CPU, nvcc).

``python -m benchmarks registers TEMPLATE [--param K=V ...] [--target h100] [--top 4]`` searches the template,
takes the best plan of each of its ``top`` best tiles, lowers it to CUDA, assembles that for the target's arch
(``nvcc --cubin -Xptxas -v``) and prints the model's count (:func:`pt_tvm.verify.register_estimate`) beside
ptxas's, its spills, and the blocks an SM each count gives (:func:`pt_tvm.cost.blocks_per_eu`). Warp-specialized
plans are left out: they run one block an SM whatever their count, which ``setmaxnreg`` then splits between the
roles. The count decides how many blocks of a software pipeline share an SM, which the model reads from
fragments alone; the conv's unrolled taps take 2-5x that (docs/NOTES-shapes.md).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from typing import Any, Mapping

from tilelang.env import CUTLASS_INCLUDE_DIR, TILELANG_TEMPLATE_PATH

from pt_tvm import cost, hw, templates
from pt_tvm.compiler import lower_planned, require_toolchain, schedule_template
from pt_tvm.plan import Style
from pt_tvm.verify import register_estimate

__all__ = ["Usage", "ptxas_usage", "compare_registers", "format_table", "as_json"]


@dataclass(frozen=True)
class Usage:
    """One plan's registers a thread as the model counts them and as ptxas allocates them."""
    tile: dict
    num_stages: int
    threads: int
    model: int
    ptxas: int
    spill_bytes: int
    model_blocks: int
    ptxas_blocks: int


def ptxas_usage(cuda: str, arch: str) -> tuple[int, int]:
    """(registers a thread, spill store bytes) ptxas reports for the kernel of ``cuda`` built for ``arch``
    (``sm_90a``), with the flags TileLang compiles with (``-O3 --use_fast_math``)."""
    nvcc = require_toolchain({"kind": "cuda", "arch": arch})
    code = arch.removeprefix("sm_")
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "kernel.cu")
        with open(src, "w") as f:
            f.write(cuda)
        done = subprocess.run([nvcc, "--cubin", "-O3", f"-gencode=arch=compute_{code},code=sm_{code}",
                               "-std=c++20", "-I" + TILELANG_TEMPLATE_PATH, "-I" + CUTLASS_INCLUDE_DIR,
                               "--use_fast_math", "-Xptxas", "-v", "-o", os.path.join(tmp, "kernel.cubin"), src],
                              capture_output=True, text=True)
    regs = re.findall(r"Used (\d+) registers", done.stderr)
    if done.returncode or not regs:
        raise RuntimeError(f"nvcc failed (rc {done.returncode}): {done.stderr.strip()[-500:]}")
    spills = re.findall(r"(\d+) bytes spill stores", done.stderr)
    return int(regs[-1]), int(spills[-1]) if spills else 0


def compare_registers(name: str, target: Any = "h100", params: Mapping[str, Any] | None = None,
                      top: int = 4) -> list[Usage]:
    """The model's and ptxas's counts for the best software-pipelined plan of each of the ``top`` best tiles."""
    vdev = hw.for_target(target)
    arch = str(vdev.target.get("arch", ""))
    if vdev.target.get("kind") != "cuda" or not arch.startswith("sm_"):
        raise ValueError(f"registers: target {vdev.name!r} is not a CUDA chip (ptxas counts CUDA kernels only)")
    template = templates.get(name)
    result, _, build = schedule_template(name, vdev, params=params)
    out, seen = [], set()
    for c in sorted(result.ranked, key=lambda c: c.seconds):
        key = json.dumps(c.plan.tile, sort_keys=True)
        if c.plan.style != Style.SOFTWARE_PIPELINE or key in seen:
            continue
        seen.add(key)
        threads = c.plan.num_warps * vdev.eu.warp_size
        regs, spills = ptxas_usage(lower_planned(build(c), vdev.tvm_target(), template.pass_configs).kernel_source,
                                   arch)
        out.append(Usage(tile=dict(c.plan.tile), num_stages=c.plan.num_stages, threads=threads,
                         model=register_estimate(c.graph, threads), ptxas=regs, spill_bytes=spills,
                         model_blocks=cost.blocks_per_eu(c.plan, c.graph, vdev),
                         ptxas_blocks=cost.blocks_per_eu(c.plan, c.graph, vdev, registers=regs)))
        if len(out) == top:
            break
    return out


def format_table(rows: list[Usage]) -> str:
    lines = ["| tile | stages | threads | registers: model / ptxas | spilled bytes | blocks an SM: model / ptxas |",
             "|---|---|---|---|---|---|"]
    for u in rows:
        tile = " ".join(f"{k}={v}" for k, v in u.tile.items())
        lines.append(f"| {tile} | {u.num_stages} | {u.threads} | {u.model} / {u.ptxas} | {u.spill_bytes} | "
                     f"{u.model_blocks} / {u.ptxas_blocks} |")
    return "\n".join(lines)


def as_json(rows: list[Usage]) -> str:
    return json.dumps([asdict(u) for u in rows], indent=1)
