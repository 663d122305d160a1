"""GPU experiment (issue 14): packed GQA against unpacked where the model's price of packing moved.

A packed block loads its query heads' Q as one box per head into disjoint parts of one shared tile; the
dependence analysis chained those copies, and the cost model priced packing 11% slower than it measured
(docs/NOTES-shapes.md, "The model's price of packing"). Without the chain, the search packs LLaMA-3-8B's
attention (GQA 32/8, head dim 128, causal) at 777 tokens, where it did not. Per config, the search's pick and
the best-priced plans with and without packing, each checked against the float32 reference on fresh random
inputs, timed beside cuDNN SDPA in alternating rounds.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.pack_price $OUT``.
"""
import os
import sys

from benchmarks.experiments.variants import compare

LLAMA = dict(heads=32, kv_heads=8, dim=128, causal=True, dtype="bfloat16")
CONFIGS = [dict(batch=b, seq_len=s, note=f"{b} x {s}", **LLAMA) for b, s in ((1, 777), (4, 777), (1, 768), (1, 2500))]
DEADLINE_S = 420  # no config starts timing after this


def variants(result, vdev):
    """The search's pick, then the best-priced plan with each packing."""
    out = {"search's pick": result.best}
    for name, pack in (("packed", 1), ("not packed", 0)):
        out[name] = next((c for c in result.ranked if c.plan.tile.get("pack_gqa") == pack), None)
    return out


def main(out_dir):
    compare(CONFIGS, variants, ("search's pick", "packed", "not packed"), out_dir, "pack_price.json",
            "python -m benchmarks.experiments.pack_price $OUT", DEADLINE_S, template="flash_attention",
            peer="cudnn-sdpa")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
