"""GPU experiment (issue 15 item 3): the order of FlashAttention's two gemms in a consumer's loop step.

FlashAttention 3 issues block j's ``Q K^T`` and then block j-1's ``P V``, waits for the first only, and runs block
j's softmax while ``P V`` is still in flight (its intra-warpgroup overlap). The search also offers the other order
(``P V`` first, then ``Q K^T``), where waiting for ``Q K^T`` waits for both, since wgmma groups complete in
issue order, and the softmax overlaps nothing of its own warpgroup (the other warpgroup's turn fills the tensor
cores). The cost model prices that order 10% faster at head dim 256 (causal, 128 x 80 tiles) and picks it there;
at head dim 128 it picks FlashAttention 3's. Per config, the search's pick and the best plan of each order at the
pick's tile (both gemms in flight), each checked against the float32 reference on fresh random inputs, timed
beside cuDNN SDPA in alternating rounds.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.gemm_order $OUT``.
"""
import os
import sys

from benchmarks.configs import suite_configs
from benchmarks.experiments.variants import compare
from pt_tvm.graph import Placement

ORDERS = {"QK first": ("gemm_0", "gemm_1"), "PV first": ("gemm_1", "gemm_0")}
CONFIGS = [dict(c.problem, note=f"d{c.problem['dim']} s{c.problem['seq_len']} {c.note}".strip())
           for c in suite_configs("attention-core")
           if c.problem["dtype"] == "float16" and c.problem["seq_len"] == 4096
           and c.problem["heads"] == c.problem["kv_heads"]]
DEADLINE_S = 480  # no config starts timing after this


def _order(c):
    """The consumer's gemms in loop program order, where both stay in flight; else None."""
    if len(c.plan.in_flight()) < 2 or not any(r.name == "consumer" for r in c.plan.roles):
        return None
    loop = c.plan.program("consumer", c.graph, Placement.LOOP)
    return tuple(a.stask for a in loop if a.stask.startswith("gemm"))


def variants(result, vdev):
    """The search's pick, then the best-priced plan of each gemm order at the pick's tile."""
    tile = result.best.plan.tile
    out = {"search's pick": result.best}
    for name, order in ORDERS.items():
        out[name] = next((c for c in result.ranked if c.plan.tile == tile and _order(c) == order), None)
    return out


def main(out_dir):
    compare(CONFIGS, variants, ("search's pick", *ORDERS), out_dir, "gemm_order.json",
            "python -m benchmarks.experiments.gemm_order $OUT", DEADLINE_S, template="flash_attention",
            peer="cudnn-sdpa")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
