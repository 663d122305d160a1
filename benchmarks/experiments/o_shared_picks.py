"""GPU experiment (issue 15, attention): the search's picks once FlashAttention's tile space holds ``o_shared``
(the output tile staged in a shared tile of its own) and its plans may walk persistently
(:func:`pt_tvm.space.walks_persistently`), against the best plan with the output staged in ``Q_shared`` (the
search's pick before), beside cuDNN SDPA and flash-attn-4, on attention-core's configs without a mask and three
ragged shapes (Whisper's encoder, ViT-L/14 at 336 px, head dim 128 at 1500 tokens). Each
kernel checked on every output against the float32 reference on fresh random inputs (NaN-prefilled), then timed
in alternating rounds.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.o_shared_picks $OUT [NOTE...]``
(NOTE: the configs whose label holds one of them; all without).
"""
import os
import sys

from benchmarks.configs import suite_configs
from benchmarks.experiments.variants import compare

CONFIGS = [dict(c.problem, note=f"d{c.problem['dim']} s{c.problem['seq_len']}"
                + ("" if c.problem["kv_heads"] == c.problem["heads"] else " gqa"))
           for c in suite_configs("attention-core") if not c.problem["causal"]] + [
    dict(batch=8, heads=20, kv_heads=20, seq_len=1500, dim=64, causal=False, dtype="float16", note="whisper 1500"),
    dict(batch=32, heads=16, kv_heads=16, seq_len=577, dim=64, causal=False, dtype="float16", note="vit-l 577"),
    dict(batch=8, heads=16, kv_heads=16, seq_len=1500, dim=128, causal=False, dtype="float16", note="d128 s1500")]
VARIANTS = ("pick", "Q-staged pick")
DEADLINE_S = 450  # no config starts timing after this


def variants(result, vdev):
    """The search's pick, and its best plan staging the output in ``Q_shared`` (its pick before)."""
    return {"pick": result.best, "Q-staged pick": next(c for c in result.ranked if not c.plan.tile.get("o_shared"))}


def main(out_dir, notes=()):
    configs = [c for c in CONFIGS if not notes or any(n in c["note"] for n in notes)]
    compare(configs, variants, VARIANTS, out_dir, "o_shared_picks.json",
            " ".join(["python -m benchmarks.experiments.o_shared_picks $OUT", *map(repr, notes)]), DEADLINE_S,
            template="flash_attention", peer="cudnn-sdpa", also=("fa3",))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"], sys.argv[2:])
