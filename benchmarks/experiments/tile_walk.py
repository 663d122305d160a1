"""GPU experiment (issue 15): GEMM with its output tiles walked in panels (L2 reuse) and persistently, against
the same search's best plan in launch order and cuBLAS, in one process on one GPU.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.tile_walk $OUT``
(about 6 minutes on one H100). Per config, one search; from its ranking the best plan in launch order
(what the search offered before tile orders), the best walked in panels, the best walked persistently,
and the best plans of the other tile shape in launch order and in panels (the 128x256 / 256x128
question: does the order rescue the slower one?); each checked on
every output against the float32 reference on fresh random inputs (NaN-prefilled), then timed in
alternating rounds with inputs rotated past the L2. Prints a table, writes ``tile_walk.json``.
"""
import os
import sys

from benchmarks.configs import LLAMA3_SHAPES
from benchmarks.experiments.variants import compare

TOKENS = 8192
SHAPES = [(n, n, n, f"square {n}") for n in (4096, 8192, 16384)] + [
    (TOKENS, *LLAMA3_SHAPES[("llama3-70b", p)], f"llama3-70b {p}") for p in ("up", "down")]
CONFIGS = [dict(M=M, N=N, K=K, dtype=dt, note=note) for dt in ("float16", "bfloat16") for M, N, K, note in SHAPES]
VARIANTS = ("launch order", "panels", "persistent", "other tile", "other in panels")
DEADLINE_S = 420  # no config starts timing after this (the device call's limit is 8 minutes)


def variants(result, vdev):
    """Variant name -> the best-predicted candidate of that kind in the search's ranking."""
    ranked = result.ranked
    launch = next(c for c in ranked if c.plan.tile_order.is_launch_order and not c.plan.persistent)
    shape = lambda c: (c.plan.tile["block_M"], c.plan.tile["block_N"])  # noqa: E731
    other = [c for c in ranked if shape(c) == shape(launch)[::-1] != shape(launch) and not c.plan.persistent]
    return {
        "launch order": launch,
        "panels": next((c for c in ranked if not c.plan.tile_order.is_launch_order and not c.plan.persistent), None),
        "persistent": next((c for c in ranked if c.plan.persistent), None),
        "other tile": next((c for c in other if c.plan.tile_order.is_launch_order), None),
        "other in panels": next((c for c in other if not c.plan.tile_order.is_launch_order), None),
    }


def main(out_dir):
    compare(CONFIGS, variants, VARIANTS, out_dir, "tile_walk.json", "python -m benchmarks.experiments.tile_walk $OUT",
            DEADLINE_S)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
