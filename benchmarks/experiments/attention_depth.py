"""GPU experiment (issue 15 item 3): how many K/V stages FlashAttention's warp-specialized plan should keep.

At head dim 128 the search picks three stages (229 KB of shared memory a block); flash-attn-4's Hopper kernel keeps
two (165 KB) at the same 128 x 128 tile (Nsight Compute, ``benchmarks/results/2026-11-29-h200-attention-profile``).
Per attention-core fp16 config of 4096 tokens, non-causal: the search's pick and the same plan 2, 3 and 4 stages
deep (where shared memory takes them; :func:`benchmarks.experiments.depth.at_depth`), each checked against the
float32 reference on fresh random inputs, timed beside cuDNN SDPA in alternating rounds.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.attention_depth $OUT``.
"""
import os
import sys

from benchmarks.configs import suite_configs
from benchmarks.experiments.depth import at_depth
from benchmarks.experiments.variants import compare
from pt_tvm.search import SearchSpace

DEPTHS = (2, 3, 4)
CONFIGS = [dict(c.problem, note=f"d{c.problem['dim']} s{c.problem['seq_len']}")
           for c in suite_configs("attention-core")
           if c.problem["dtype"] == "float16" and c.problem["seq_len"] == 4096 and not c.problem["causal"]
           and c.problem["heads"] == c.problem["kv_heads"]]
DEADLINE_S = 300


def variants(result, vdev):
    """The search's pick, then the same plan at each depth of :data:`DEPTHS`."""
    return {"search's pick": result.best, **{f"{d} stages": at_depth(result.best, d, vdev) for d in DEPTHS}}


def main(out_dir):
    compare(CONFIGS, variants, ("search's pick", *(f"{d} stages" for d in DEPTHS)), out_dir, "attention_depth.json",
            "python -m benchmarks.experiments.attention_depth $OUT", DEADLINE_S,
            space=SearchSpace(depths=(1, *DEPTHS)), template="flash_attention", peer="cudnn-sdpa")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
