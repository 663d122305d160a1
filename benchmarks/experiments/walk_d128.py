"""GPU experiment (issue 15, attention): at head dim 128 without a mask the search picks the launched 128 x 128
tile three K/V stages deep and prices its persistent walk (the output tile in ``O_shared``, two stages) 3-6%
slower; flash-attn-4, 1.06x faster on this config in attention-core, walks persistently two stages deep. The two
plans beside cuDNN SDPA and flash-attn-4, each kernel checked on every output against the float32 reference on
fresh random inputs (NaN-prefilled), then timed in alternating rounds.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.walk_d128 $OUT``.
"""
import os
import sys

from benchmarks.experiments.variants import compare

CONFIGS = [dict(batch=batch, heads=16, kv_heads=16, seq_len=seq_len, dim=128, causal=False, dtype="float16",
                note=f"d128 s{seq_len}") for batch, seq_len in ((4, 4096), (1, 16384))]
VARIANTS = ("pick", "walk")
DEADLINE_S = 300  # no config starts timing after this


def variants(result, vdev):
    """The search's pick, and its best persistent plan with the output tile in ``O_shared``."""
    return {"pick": result.best,
            "walk": next(c for c in result.ranked if c.plan.tile.get("o_shared") and c.plan.persistent)}


def main(out_dir):
    compare(CONFIGS, variants, VARIANTS, out_dir, "walk_d128.json", "python -m benchmarks.experiments.walk_d128 $OUT",
            DEADLINE_S, template="flash_attention", peer="cudnn-sdpa", also=("fa3",))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
