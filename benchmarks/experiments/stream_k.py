"""GPU experiment (issues 14, 15): stream-K splits and swapped tiles against plain tiles where the grid leaves a
wave part empty.

The LLaMA-3-8B layer's GEMMs lose to cuBLAS where their output tiles fill the GPU's waves badly: at 777 tokens 112
tiles of 128x256 leave 20 of 132 SMs idle and their last row of tiles holds 9 tokens, at 512 tokens the fused
SwiGLU kernel's 448 tiles are 3.4 waves (benchmarks/results/2026-11-26-h100-layers-head). Two remedies: a
stream-K split (pt_tvm.stream_k: whole waves, then the rest's heads in step and their tails shared out) and a
swapped tile (the gemm template's ``swap_ab``: tokens on the tensor core's N side, 777 as 4 x 208). Per config, from
one search that offers all: its pick, the best-priced plain plan (neither), the best swapped tile and the best
split, each checked on every output against float32 and timed against cuBLAS (``linear``'s layout); the fused
SwiGLU kernel likewise (it has no swapped tiles).

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.stream_k $OUT``. Writes
``stream_k.json`` and ``stream_k-swiglu.json``; with ``l2`` after ``$OUT``, ``stream_k-l2.json``: two square
GEMMs whose operands fit in L2.
"""
import sys

from benchmarks.configs import LLAMA3_SHAPES
from benchmarks.experiments.variants import compare, compare_gemms
from pt_tvm.search import SearchSpace

_LLAMA = [("qkv", *LLAMA3_SHAPES[("llama3-8b", "qkv")]), ("o", *LLAMA3_SHAPES[("llama3-8b", "o")]),
          ("down", *LLAMA3_SHAPES[("llama3-8b", "down")])]
CONFIGS = ([dict(M=M, N=N, K=K, dtype="float16", trans_B=True, note=f"llama {p} M{M}")
            for M in (777, 2500) for p, N, K in _LLAMA]
           + [dict(M=512, N=N, K=K, dtype="float16", trans_B=True, note=f"llama {p} M512") for p, N, K in _LLAMA
              if p == "o"])
SWIGLU = [dict(M=M, N=LLAMA3_SHAPES[("llama3-8b", "up")][0], K=4096, dtype="float16", note=f"llama swiglu M{M}")
          for M in (512, 777)]
# ``l2``: operands that fit in L2 (no weight to reread from DRAM) over 1.5-2.2 waves of 128x256 tiles
L2 = [dict(M=2500, N=2500, K=4096, dtype="float16", note="2500x2500x4096"),
      dict(M=3000, N=3000, K=2048, dtype="float16", note="3000x3000x2048")]
VARIANTS = ("pick", "plain", "swapped", "stream-K")
SPACE = SearchSpace(stream_k=True)
DEADLINE_S = 260


def variants(result, vdev):
    """The search's pick, the best-priced plain plan, the best swapped tile and the best stream-K split."""
    def first(keep):
        return next((c for c in result.ranked if keep(c.plan)), None)

    return {"pick": result.best,
            "plain": first(lambda p: not p.stream_k and not p.tile.get("swap_ab")),
            "swapped": first(lambda p: not p.stream_k and p.tile.get("swap_ab")),
            "stream-K": first(lambda p: p.stream_k)}


def main(out_dir, which="llama"):
    if which == "l2":
        compare(L2, variants, VARIANTS, out_dir, "stream_k-l2.json",
                "python -m benchmarks.experiments.stream_k $OUT l2", DEADLINE_S, space=SPACE)
    else:
        compare_gemms("stream_k", CONFIGS, SWIGLU, variants, VARIANTS, out_dir, DEADLINE_S, SPACE)


if __name__ == "__main__":
    main(*sys.argv[1:3])
