"""GPU experiment (issue 15, attention): does a persistent walk pay where FlashAttention's key tail reads Q after the
loop? At ViT-L/14's 577 tokens the search's pick, 128 x 128 tiles with the key tail walked persistently, ran 0.90x
the launched 64 x 64 tile (one H200, benchmarks/results/2026-12-02-h200-o-shared-confirm). Per config, from one
search: the best walk of a key-tail tile, the same tile launched (output staged in ``Q_shared``), the same block
sizes walked without the tail, and the best launched 64 x 64 plan; each checked on every output against the float32
reference on fresh random inputs (NaN-prefilled), then timed beside cuDNN SDPA in alternating rounds.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.walk_tail $OUT``.
"""
import os
import sys

from benchmarks.experiments.variants import compare

CONFIGS = [
    dict(batch=32, heads=16, kv_heads=16, seq_len=577, dim=64, causal=False, dtype="float16", note="vit-l 577"),
    dict(batch=64, heads=12, kv_heads=12, seq_len=197, dim=64, causal=False, dtype="float16", note="vit-b 197")]
VARIANTS = ("walk, tail", "launched, tail", "walk, no tail", "64 x 64")
DEADLINE_S = 200  # no config starts timing after this


def variants(result, vdev):
    """The best walk of a key-tail tile and its launched twin, the same block sizes walked without the tail, and the
    best launched 64 x 64 plan (None where the search ranked none)."""
    def blocks(c):
        return c.plan.tile["block_M"], c.plan.tile["block_N"]

    ranked = result.ranked
    walk = next((c for c in ranked if c.plan.persistent and c.plan.tile["key_tail"]), None)
    return {
        "walk, tail": walk,
        "launched, tail": walk and next((c for c in ranked if not c.plan.persistent and c.plan.tile["key_tail"]
                                         and blocks(c) == blocks(walk)), None),
        "walk, no tail": walk and next((c for c in ranked if c.plan.persistent and not c.plan.tile["key_tail"]
                                        and blocks(c) == blocks(walk)), None),
        "64 x 64": next((c for c in ranked if not c.plan.persistent and c.plan.tile["block_M"] == 64
                         and c.plan.tile["block_N"] == 64), None)}


def main(out_dir):
    compare(CONFIGS, variants, VARIANTS, out_dir, "walk_tail.json", "python -m benchmarks.experiments.walk_tail $OUT",
            DEADLINE_S, template="flash_attention", peer="cudnn-sdpa")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
