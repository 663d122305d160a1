"""GPU experiment (issues 14, 15): how deep a warp-specialized GEMM's load pipeline should be.

cuBLAS's kernels for the LLaMA layer's GEMMs at 512 tokens keep 5 or 6 stages in flight (``nvjet_sm90_hsh_128x128
_64x6``, ``..._176x128_64x5``: the H100 graph_gap profile of 2026-11-26), pt-tvm's picks 3 (the search space
stopped at 4, and the model never priced a 64-deep-K plan past 3 faster). A 128x128x64 tile moves 32 KB a
k-step; under load the L2 answers in about a microsecond, so 2 stages in flight hold about as much as one SM
streams in that time. Per config: the model's pick, and the same plan at depths 2 to 6 (where shared memory
takes them), and the best 128x128x64 plan (cuBLAS's tile there) 6 deep; the same for the fused SwiGLU kernel
(gate and up in one B tile) against cuBLAS's linear with SiLU and product. Each checked on every output against
float32 and timed against cuBLAS (``linear``'s layout).

Since 128x256 tiles take a 4th stage (their epilogue tile laid over the stages, non-persistent plans only),
also the best-priced persistent plan, which keeps the epilogue tile apart, and square GEMMs of the ``gemm`` suite;
since tiles of 160 and 224 columns are searched, the best 128x256 plan beside them.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.depth $OUT``. Writes
``depth.json`` and ``depth-swiglu.json``.
"""
import os
import sys
from dataclasses import replace

from benchmarks.configs import LLAMA3_SHAPES
from benchmarks.experiments.variants import compare_gemms, priced
from pt_tvm.hw import VDevice
from pt_tvm.plan import Style
from pt_tvm.search import Candidate, SearchSpace
from pt_tvm.verify import violations

_LLAMA = [("qkv", *LLAMA3_SHAPES[("llama3-8b", "qkv")]), ("o", *LLAMA3_SHAPES[("llama3-8b", "o")]),
          ("gate_up", 2 * LLAMA3_SHAPES[("llama3-8b", "up")][0], 4096),
          ("down", *LLAMA3_SHAPES[("llama3-8b", "down")])]
CONFIGS = ([dict(M=512, N=N, K=K, dtype="float16", trans_B=True, note=f"llama {p} M512") for p, N, K in _LLAMA]
           + [dict(M=777, N=N, K=K, dtype="float16", trans_B=True, note=f"llama {p} M777")
              for p, N, K in _LLAMA if p in ("o", "down")]
           + [dict(M=2500, N=N, K=K, dtype="float16", trans_B=True, note=f"llama {p} M2500")
              for p, N, K in _LLAMA if p in ("o", "down")]
           + [dict(M=4096, N=N, K=K, dtype="float16", trans_B=True, note=f"llama {p} M4096")
              for p, N, K in _LLAMA if p in ("qkv", "down")]
           + [dict(M=n, N=n, K=n, dtype="float16", note=f"square {n}") for n in (4096, 8192)])
SWIGLU = [dict(M=M, N=LLAMA3_SHAPES[("llama3-8b", "up")][0], K=4096, dtype="float16", note=f"llama swiglu M{M}")
          for M in (512, 777, 4096)]
DEPTHS = (2, 3, 4, 5, 6)
VARIANTS = ("pick", *(f"d{d}" for d in DEPTHS), "128x128 d6", "persistent", "128x256")
SPACE = SearchSpace(depths=(1, *DEPTHS))
DEADLINE_S = 400


def at_depth(c: Candidate, depth: int, vdev: VDevice) -> Candidate | None:
    """``c`` with its in-loop pipelines ``depth`` deep, priced; None where it breaks a limit (shared memory)."""
    pipes = tuple(replace(p, depth=depth) if p.scope == "loop" else p for p in c.plan.pipelines)
    plan = replace(c.plan, pipelines=pipes, num_stages=depth)
    if violations(plan, c.graph, vdev):
        return None
    return priced(c, plan, vdev, f"depth {depth}")


def variants(result, vdev):
    """The model's pick, then the same plan at each depth (a plan already timed under another name is timed once),
    the best-priced warp-specialized 128x128x64 plan 6 deep, the best-priced persistent plan and the best-priced
    128x256x64 plan (beside a pick of the 160- and 224-column tiles that fill the SMs' waves)."""
    square = next((c for c in result.ranked if c.plan.style == Style.WARP_SPECIALIZED
                   and (c.plan.tile["block_M"], c.plan.tile["block_N"], c.plan.tile["block_K"]) == (128, 128, 64)),
                  None)
    return {"pick": result.best, **{f"d{d}": at_depth(result.best, d, vdev) for d in DEPTHS},
            "128x128 d6": square and at_depth(square, 6, vdev),
            "persistent": next((c for c in result.ranked if c.plan.persistent), None),
            "128x256": next((c for c in result.ranked if (c.plan.tile["block_M"], c.plan.tile["block_N"],
                                                          c.plan.tile.get("block_K")) == (128, 256, 64)), None)}


def main(out_dir):
    compare_gemms("depth", CONFIGS, SWIGLU, variants, VARIANTS, out_dir, DEADLINE_S, SPACE)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
