"""GPU experiment (issues 14, 15): output tiles of up to 160 accumulators a thread (256x160) against those of 128.

cuBLAS runs the LLaMA-3-8B layer's GEMMs at 2500 tokens in 256x160 tiles (`nvjet_sm90_hsh_256x160_64x4_1x2`,
benchmarks/results/2026-11-26-h100-layers-swapped): 10 x 26 = 260 tiles, two waves of 132 SMs almost full. The
gemm template now takes tiles of 40,960 accumulators (160 registers a thread over two consumer warpgroups; 32,768
before). Per config, from one default search: its pick and the best-priced plan of at most 32,768, each checked on
every output against float32 and timed against cuBLAS (``linear``'s layout).

With ``square`` after ``$OUT``: the gemm suite's square 8192 and 16384 (``A @ B``), in ``big_tiles-square.json``.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.big_tiles $OUT [square]``. Writes
``big_tiles.json`` (or ``big_tiles-square.json``).
"""
import sys

from benchmarks.configs import LLAMA3_SHAPES
from benchmarks.experiments.variants import compare

_LLAMA = [(p, *LLAMA3_SHAPES[("llama3-8b", p)]) for p in ("qkv", "o", "down")]
CONFIGS = [dict(M=M, N=N, K=K, dtype="float16", trans_B=True, note=f"llama {p} M{M}")
           for M in (2500, 2048, 4096, 777) for p, N, K in _LLAMA]
SQUARE = [dict(M=n, N=n, K=n, dtype="float16", trans_B=False, note=f"square {n}") for n in (8192, 16384)]
VARIANTS = ("pick", "<= 128 a thread")
DEADLINE_S = 300


def variants(result, vdev):
    """The search's pick and the best-priced plan whose tile holds at most 32,768 accumulators."""
    return {"pick": result.best,
            "<= 128 a thread": next((c for c in result.ranked
                                     if c.plan.tile["block_M"] * c.plan.tile["block_N"] <= 128 * 256), None)}


def main(out_dir, which="layers"):
    square = which == "square"
    compare(SQUARE if square else CONFIGS, variants, VARIANTS, out_dir,
            "big_tiles-square.json" if square else "big_tiles.json",
            "python -m benchmarks.experiments.big_tiles $OUT" + (" square" if square else ""), DEADLINE_S)


if __name__ == "__main__":
    main(*sys.argv[1:3])
