"""GPU experiment (issue 15, attention): FlashAttention without a causal mask walked persistently (one block per SM
takes tiles ``block, block + num_sms, ...``, the next tile's first loads under this one's epilogue), against the
same plan launched as a grid. The model prices the persistent walk 1-3% faster; causal grids measured it 0.65-0.96x
(benchmarks/results/2026-11-28-h200-causal-order, where the static share is unequal). Per config, one search; its
best plan in launch order, and the same plan persistent; each checked on every output against the float32
reference on fresh random inputs (NaN-prefilled), then timed beside cuDNN SDPA in alternating rounds.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.persistent_attention $OUT``.
"""
import os
import sys
from dataclasses import replace

from benchmarks.configs import suite_configs
from benchmarks.experiments.variants import compare, priced

CONFIGS = [dict(c.problem, note=f"d{c.problem['dim']} s{c.problem['seq_len']}")
           for c in suite_configs("attention-core") if not c.problem["causal"] and c.problem["dtype"] == "float16"
           and c.problem["seq_len"] in (1024, 4096) and c.problem["kv_heads"] == c.problem["heads"]]
VARIANTS = ("launch order", "persistent")
DEADLINE_S = 200  # no config starts timing after this


def variants(result, vdev):
    """The search's best plan launched as a grid, and walked persistently in the same order."""
    best = next(c for c in result.ranked if not c.plan.persistent)
    return {"launch order": best, "persistent": priced(best, replace(best.plan, persistent=True), vdev, "persistent")}


def main(out_dir):
    compare(CONFIGS, variants, VARIANTS, out_dir, "persistent_attention.json",
            "python -m benchmarks.experiments.persistent_attention $OUT", DEADLINE_S, template="flash_attention",
            peer="cudnn-sdpa")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
