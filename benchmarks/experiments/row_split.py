"""GPU experiment (issue 15, GEMM): the search's plans with their gemm tiles split over the consumer warpgroups
by rows (``ExecutionPlan.row_split``: one m64n256k16 wgmma per warpgroup and k16, CUTLASS's and cuBLAS's
split) against the same plans split by columns (TileLang's ``Square`` policy: 2 x m64n128k16), and cuBLAS, on
the GEMMs of the layers suite's LLaMA-3-8B layer (batch x seqlen 1 x 2048 and 4 x 2048) and Mamba2-1.3B mixer.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.row_split $OUT`` (about 6
minutes on one H100). Per config one search with ``SearchSpace(row_split=True)``; timed: the model's pick, the
best persistent plans of the wide tile (128x256: where the split matters) at the model's block_K and at 64 (the
tuner's pick on four GEMMs of the last suite run), each split by columns and by rows, and the best plan of the
tall tile (256x128: 2 x m64n128k16 per warpgroup either way). Writes ``row_split.json``.
"""
import os
import sys
from dataclasses import replace

from benchmarks.configs import LLAMA3_SHAPES
from benchmarks.experiments.variants import compare
from pt_tvm.hw import VDevice
from pt_tvm.search import Candidate, SearchSpace
from pt_tvm.space import row_split_variant
from pt_tvm.verify import violations

_LLAMA = [("qkv", *LLAMA3_SHAPES[("llama3-8b", "qkv")]), ("o", *LLAMA3_SHAPES[("llama3-8b", "o")]),
          ("gate_up", 2 * LLAMA3_SHAPES[("llama3-8b", "up")][0], 4096),
          ("down", *LLAMA3_SHAPES[("llama3-8b", "down")])]
CONFIGS = ([dict(M=2048, N=N, K=K, dtype="float16", note=f"llama3-8b {p} M2048") for p, N, K in _LLAMA]
           + [dict(M=8192, N=N, K=K, dtype="float16", note=f"llama3-8b {p} M8192") for p, N, K in _LLAMA[2:]]
           + [dict(M=2048, N=8512, K=2048, dtype="float16", note="mamba2 in M2048"),
              dict(M=2048, N=2048, K=4096, dtype="float16", note="mamba2 out M2048"),
              dict(M=4096, N=4096, K=4096, dtype="float16", note="square 4096")])
VARIANTS = ("pick", "wide pers.", "wide pers. rows", "k64 pers.", "k64 pers. rows", "tall")
DEADLINE_S = 430


def _twin(c: Candidate | None, vdev: VDevice) -> Candidate | None:
    """``c`` with its gemm tiles split by rows, where that changes the split and verifies."""
    plan = c and row_split_variant(c.plan, c.graph, vdev)
    if plan is None or violations(plan, c.graph, vdev):
        return None
    return replace(c, plan=plan, note=c.note + ", gemm rows split over warpgroups")


def variants(result, vdev):
    """The model's pick (``pick``); the best plans of the wide tile (more columns than rows: where the split matters) in
    persistent walk at the model's block_K and at 64, each also with its rows split; the best of the tall tile."""
    plain = [c for c in result.ranked if not c.plan.row_split]
    wide = [c for c in plain if c.plan.tile["block_N"] > c.plan.tile["block_M"]]
    tall = [c for c in plain if c.plan.tile["block_N"] < c.plan.tile["block_M"]]
    walked = next((c for c in wide if c.plan.persistent), None)
    k64 = next((c for c in wide if c.plan.persistent and c.plan.tile["block_K"] == 64), None)
    return {"pick": result.best, "wide pers.": walked,
            "wide pers. rows": _twin(walked, vdev), "k64 pers.": k64, "k64 pers. rows": _twin(k64, vdev),
            "tall": tall[0] if tall else None}


def main(out_dir):
    compare(CONFIGS, variants, VARIANTS, out_dir, "row_split.json", "python -m benchmarks.experiments.row_split $OUT",
            DEADLINE_S, space=SearchSpace(row_split=True))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
