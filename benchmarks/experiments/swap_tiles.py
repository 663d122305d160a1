"""GPU experiment (issues 14, 15): swapped GEMM tiles (``swap_ab``: a layer's tokens on the tensor core's N side)
at token counts that are multiples of 64, which the gemm template offered plain tiles only until 2026-12-04. The
model (before cost.SWAPPED_TILE_FACTOR) priced them ahead where plain tiles fill the waves poorly (gemm_rope at 768
tokens: 120 swapped 160 x 256 tiles on 132 SMs against 144 plain 128 x 256 ones) and, 2-9% ahead, at the layers'
larger token counts.
Per config, from one search over the whole tile space: the best plain and the best swapped plan, each checked on
every output against float32 on fresh inputs (NaN-prefilled), then timed with cuBLAS (F.linear; for the fused
SwiGLU, F.linear then ``silu(gate) * up``; gemm_rope against the model's pick) from CUDA graphs, settled, in
alternating rounds, inputs rotated past the L2.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.swap_tiles $OUT PART``, PART one
of small (up to 4096 tokens), ragged (2500 tokens, where SWAPPED_TILE_FACTOR moved the picks) and large (16 x 4096
tokens). Writes ``swap_tiles-PART.json`` (and ``-swiglu``, ``-rope`` beside it).
"""
import os
import sys

from benchmarks.experiments.variants import compare

VARIANTS = ("plain", "swapped")
_LINEAR = {"dtype": "float16", "trans_B": True}
# (N, K, note): LLaMA-3-8B's o and down projections, Mamba2-1.3B's in- and out-projections
_GEMMS = [(4096, 4096, "llama o"), (4096, 14336, "llama down"), (8512, 2048, "mamba2 in"), (2048, 4096, "mamba2 out")]
PARTS = {
    "small": {"gemm": [dict(M=M, N=N, K=K, **_LINEAR, note=f"{note} M{M}") for M in (2048, 4096)
                       for N, K, note in _GEMMS[2:3]],
              "gemm_rope": [dict(M=M, seqlen=M, dtype="float16", note=f"llama qkv+rope M{M}")
                            for M in (512, 768, 2560)]},
    "ragged": {"gemm": [dict(M=2500, N=N, K=K, **_LINEAR, note=f"{note} M2500") for N, K, note in _GEMMS]},
    "large": {"gemm": [dict(M=65536, N=N, K=K, **_LINEAR, note=f"{note} M65536") for N, K, note in _GEMMS],
              "gemm_rope": [dict(M=65536, seqlen=4096, dtype="float16", note="llama qkv+rope M65536")],
              "gemm_swiglu": [dict(M=65536, N=14336, K=4096, dtype="float16", note="llama swiglu M65536")]},
}
PEER = {"gemm": "cublas", "gemm_swiglu": "cublas", "gemm_rope": "pt-tvm-model"}
DEADLINE_S = 240


def variants(result, vdev):
    """The best-priced plain and swapped plans of one search."""
    def best(swapped):
        return next((c for c in result.ranked if c.plan.tile.get("swap_ab", 0) == swapped), None)

    return {"plain": best(0), "swapped": best(1)}


def main(out_dir, part="small"):
    for template, configs in PARTS[part].items():
        suffix = "" if template == "gemm" else "-" + template.split("_")[1]
        compare(configs, variants, VARIANTS, out_dir, f"swap_tiles-{part}{suffix}.json",
                f"python -m benchmarks.experiments.swap_tiles $OUT {part}", DEADLINE_S, template=template,
                peer=PEER[template], settle_ms=500.0, rounds=7)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"], *sys.argv[2:3])
