"""GPU experiment (issue 15 item 3): FlashAttention's consumer warpgroups without turns at head dim 256.

flash-attn-4's Hopper kernel has its two consumer warpgroups take turns issuing their gemms (a scheduler barrier)
only up to head dim 128; at 256 each issues as it goes (every gemm still in flight), and there it runs 1.04-1.06x
pt-tvm's pick without a mask (attention-core, 2026-12-02, one H200), whose warpgroups take turns: the cost model
prices the pick without its turns 1.3x slower. This experiment times the search's pick against the same plan
without its Handoff (head dim 128 beside it, where both kernels take turns); each kernel is checked on every
output against the float32 reference on fresh random inputs (NaN-prefilled), then timed beside cuDNN SDPA in
alternating rounds.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.no_turns $OUT``.
"""
import dataclasses
import os
import sys

from benchmarks.experiments.attention_tiles import _cfg
from benchmarks.experiments.variants import compare, priced
from pt_tvm.plan import Handoff
from pt_tvm.search import Candidate

CONFIGS = [{**_cfg(dim, seq_len, causal), "note": f"d{dim} s{seq_len}{' causal' if causal else ''}"}
           for dim, seq_len, causal in ((256, 4096, False), (256, 16384, False), (256, 4096, True),
                                        (128, 4096, False))]
VARIANTS = ("pick", "no turns")
DEADLINE_S = 420  # no config starts timing after this


def variants(result, vdev) -> dict[str, Candidate]:
    best = result.best
    plan = dataclasses.replace(best.plan, steps=tuple(s for s in best.plan.steps if not isinstance(s, Handoff)))
    return {"pick": best, "no turns": priced(best, plan, vdev, "no turns")}


def main(out_dir):
    compare(CONFIGS, variants, VARIANTS, out_dir, "no_turns.json", "python -m benchmarks.experiments.no_turns $OUT",
            DEADLINE_S, template="flash_attention", peer="cudnn-sdpa")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
