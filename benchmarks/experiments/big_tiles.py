"""GPU experiment (issues 14, 15): output tiles of up to 160 accumulators a thread (256x160) against those of 128.

cuBLAS runs the LLaMA-3-8B layer's GEMMs at 2500 tokens in 256x160 tiles (`nvjet_sm90_hsh_256x160_64x4_1x2`,
benchmarks/results/2026-11-26-h100-layers-swapped): 10 x 26 = 260 tiles, two waves of 132 SMs almost full. The
gemm template now takes tiles of 40,960 accumulators (160 registers a thread over two consumer warpgroups; 32,768
before). Per config, from one default search: its pick and the best-priced plan of at most 32,768, each checked on
every output against float32 and timed against cuBLAS (``linear``'s layout).

With ``swiglu`` after ``$OUT``: the fused SwiGLU kernel, its gate and up tiles in buffers of their own (so a
block may take 112 output columns: 128 x 112 column tiles of 14336 fill 3.9 waves of 132 at 512 tokens, where
128-column ones fill 3.4), its pick against its best 256-row (128-column) plan and cuBLAS (``linear`` and
``silu``), in ``big_tiles-swiglu.json``.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.big_tiles $OUT [swiglu]``.
Writes ``big_tiles.json`` (or ``big_tiles-swiglu.json``).
"""
import sys

from benchmarks.configs import LLAMA3_SHAPES
from benchmarks.experiments.variants import compare

_LLAMA = [(p, *LLAMA3_SHAPES[("llama3-8b", p)]) for p in ("qkv", "o", "down")]
CONFIGS = [dict(M=M, N=N, K=K, dtype="float16", trans_B=True, note=f"llama {p} M{M}")
           for M in (2500, 2048, 4096, 777) for p, N, K in _LLAMA]
SWIGLU = [dict(M=M, N=LLAMA3_SHAPES[("llama3-8b", "up")][0], K=4096, dtype="float16", note=f"llama swiglu M{M}")
          for M in (512, 777, 2500, 4096)]
VARIANTS = ("pick", "<= 128 a thread")
SWIGLU_VARIANTS = ("pick", "block_N 256")
DEADLINE_S = 300


def variants(result, vdev):
    """The search's pick and the best-priced plan whose tile holds at most 32,768 accumulators."""
    return {"pick": result.best,
            "<= 128 a thread": next((c for c in result.ranked
                                     if c.plan.tile["block_M"] * c.plan.tile["block_N"] <= 128 * 256), None)}


def swiglu_variants(result, vdev):
    """The search's pick and its best-priced plan of 256 weight rows (128 output columns) a block."""
    return {"pick": result.best, "block_N 256": next((c for c in result.ranked if c.plan.tile["block_N"] == 256), None)}


def main(out_dir, which="gemm"):
    if which == "swiglu":
        compare(SWIGLU, swiglu_variants, SWIGLU_VARIANTS, out_dir, "big_tiles-swiglu.json",
                "python -m benchmarks.experiments.big_tiles $OUT swiglu", DEADLINE_S, template="gemm_swiglu")
    else:
        compare(CONFIGS, variants, VARIANTS, out_dir, "big_tiles.json",
                "python -m benchmarks.experiments.big_tiles $OUT", DEADLINE_S)


if __name__ == "__main__":
    main(*sys.argv[1:3])
