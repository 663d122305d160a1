"""GPU experiment (issues 14, 15): the GEMMs of the layers suite as the layers call them (``linear``: the weight
``[N, K]``, ``trans_B``), at small and ragged token counts (512, 777) and at 2048 and 4096 tokens, where pt-tvm's
picks lost to cuBLAS in the 2026-11-24 H100 layers run: the plans tuning would measure (``tune.diverse_top``:
the best of each tile and role split, then of each configuration), against cuBLAS, to see which plans win there
and where the cost model's ranking goes wrong.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.layer_gemms $OUT`` (about 5
minutes on one H100). Writes ``layer_gemms.json``; ``top1`` is the model's pick.
"""
import os
import sys

from benchmarks.configs import LLAMA3_SHAPES
from benchmarks.experiments.variants import compare
from pt_tvm.tune import diverse_top

_LLAMA = [("qkv", *LLAMA3_SHAPES[("llama3-8b", "qkv")]), ("o", *LLAMA3_SHAPES[("llama3-8b", "o")]),
          ("gate_up", 2 * LLAMA3_SHAPES[("llama3-8b", "up")][0], 4096),
          ("down", *LLAMA3_SHAPES[("llama3-8b", "down")])]
_MAMBA = [("in", 8512, 2048), ("out", 2048, 4096)]
CONFIGS = ([dict(M=M, N=N, K=K, dtype="float16", trans_B=True, note=f"llama {p} M{M}")
            for M in (512, 777, 2048, 4096) for p, N, K in _LLAMA]
           + [dict(M=M, N=N, K=K, dtype="float16", trans_B=True, note=f"mamba2 {p} M{M}")
              for M in (512, 2500) for p, N, K in _MAMBA])
TOP = 6
VARIANTS = tuple(f"top{i + 1}" for i in range(TOP))
DEADLINE_S = 330


def variants(result, vdev):
    """The candidates tuning measures, in its order (the model's pick first)."""
    return dict(zip(VARIANTS, diverse_top(result, TOP)))


def main(out_dir):
    compare(CONFIGS, variants, VARIANTS, out_dir, "layer_gemms.json",
            "python -m benchmarks.experiments.layer_gemms $OUT", DEADLINE_S)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
