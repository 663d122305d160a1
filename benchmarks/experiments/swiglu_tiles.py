"""GPU experiment (issue 14): the fused SwiGLU kernel in tiles of 112 output columns (128x224) against 128.

At 512 tokens the LLaMA-3-8B gate/up projection in 128x256 tiles is 448 blocks, 3.4 waves of 132 SMs, and the
fused kernel lost to cuBLAS's GEMM plus Inductor's SiLU (195 against 173 us inside the layer,
benchmarks/results/2026-11-26-h100-layers-big-tiles); 128x224 tiles are 512 blocks, 3.9 waves. Per config, from
one default search: its pick and the best-priced plan of each tile width, each checked on every output against
float32 and timed against cuBLAS's GEMM and ``F.silu(gate) * up``.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.swiglu_tiles $OUT``. Writes
``swiglu_tiles.json``.
"""
import sys

from benchmarks.configs import LLAMA3_SHAPES
from benchmarks.experiments.variants import compare

CONFIGS = [dict(M=M, N=LLAMA3_SHAPES[("llama3-8b", "up")][0], K=4096, dtype="float16", note=f"llama swiglu M{M}")
           for M in (512, 777, 2048, 2500)]
VARIANTS = ("pick", "128x224", "128x256")
DEADLINE_S = 240


def variants(result, vdev):
    """The search's pick and the best-priced plan of 224 and of 256 weight rows (112 and 128 output columns)."""
    def widest(n):
        return next((c for c in result.ranked if c.plan.tile["block_N"] == n), None)

    return {"pick": result.best, "128x224": widest(224), "128x256": widest(256)}


def main(out_dir):
    compare(CONFIGS, variants, VARIANTS, out_dir, "swiglu_tiles.json",
            "python -m benchmarks.experiments.swiglu_tiles $OUT", DEADLINE_S, template="gemm_swiglu")


if __name__ == "__main__":
    main(sys.argv[1])
