"""GPU experiment (issue 14, ragged shapes): a GEMM whose output rows TMA cannot address (GPT-2's lm_head, N =
50257; a LLaMA-2 vocabulary with one added token, N = 32001) stores its tiles from shared memory an element a
thread, and its consumers wait on those stores before the next tile's gemms; the tile-multiple twin's TMA store
lets them go on. The storer variant (:func:`pt_tvm.space.storer_variant`) hands the staged tile to two warps of
the producer's warpgroup instead. Per config, one search; the search's pick, its best persistent plan and the
best persistent plan of the other tile shape, each with and without a storer; each checked on every output
against the float32 reference on fresh random inputs (NaN-prefilled), then timed beside cuBLAS in alternating
rounds, inputs rotated past the L2. The twins (N a multiple of 128) are timed in the same run.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.storer $OUT``.
"""
import os
import sys

from benchmarks.experiments.variants import compare, priced
from pt_tvm.space import storer_variant

CONFIGS = [
    dict(M=2048, N=50257, K=768, trans_B=True, dtype="float16", note="lm_head 50257"),
    dict(M=2048, N=50304, K=768, trans_B=True, dtype="float16", note="twin 50304"),
    dict(M=8192, N=32001, K=4096, trans_B=True, dtype="float16", note="vocab 32001"),
    dict(M=8192, N=32128, K=4096, trans_B=True, dtype="float16", note="twin 32128"),
]
VARIANTS = ("search's pick", "persistent", "persistent, storer", "other tile", "other tile, storer")
DEADLINE_S = 420  # no config starts timing after this


def variants(result, vdev):
    """The search's pick; its best persistent plan, and the best persistent plan of another tile shape, each
    alone and with a storer (where the plan has element-wise stores)."""
    persistent = [c for c in result.ranked if c.plan.persistent and not c.plan.stream_k
                  and not any(r.name == "storer" for r in c.plan.roles)]
    best = persistent[0] if persistent else None
    other = next((c for c in persistent if c.plan.tile != best.plan.tile), None) if best else None
    out = {"search's pick": result.best, "persistent": best, "other tile": other}
    for name, c in (("persistent", best), ("other tile", other)):
        v = storer_variant(c.plan, c.graph, vdev) if c is not None else None
        out[f"{name}, storer"] = priced(c, v, vdev, "storer") if v is not None else None
    return out


def main(out_dir):
    compare(CONFIGS, variants, VARIANTS, out_dir, "storer.json", "python -m benchmarks.experiments.storer $OUT",
            DEADLINE_S, peer="cublas")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
