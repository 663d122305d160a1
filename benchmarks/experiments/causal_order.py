"""GPU experiment (issue 15, attention): the order in which a causal FlashAttention's query blocks are launched.

A causal query block's work grows with its index. The template launches each head's blocks heaviest first, but the
hardware dispatches heads one after another, so the launch order is a sawtooth of weights and the last wave mixes
heavy blocks with light ones; panels of two or four query blocks walked across every head (``TileOrder(p,
"column")``) launch all heads' heaviest blocks first, longest processing time first over the whole grid. Per
config, one search; the search's pick, and its best plan in launch order walked: in launch order, in panels of
2 block columns, and in panels of 2, 4 and 8 heads walked forwards (``TileOrder(p, "row", snake=False)``); each
checked on every output against the float32 reference on fresh random inputs (NaN-prefilled), then timed beside
cuDNN SDPA and flash-attn-4 (where its peers bundle is set up) in alternating rounds, inputs rotated past the L2.
(The run at 547f02b timed panels of 4 block columns and a persistent walk in panels of 2 instead of the heads'
panels, without flash-attn-4.)

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.causal_order $OUT``.
"""
import os
import sys
from dataclasses import replace

from benchmarks.configs import suite_configs
from benchmarks.experiments.variants import compare, priced
from pt_tvm.plan import TileOrder

VARIANTS = {"launch order": TileOrder(), "2 columns": TileOrder(2, "column"),
            **{f"{p} heads": TileOrder(p, "row", snake=False) for p in (2, 4, 8)}}
CONFIGS = [dict(c.problem, note=f"d{c.problem['dim']} s{c.problem['seq_len']} {c.note}".strip())
           for c in suite_configs("attention-core") if c.problem["causal"] and c.problem["dtype"] == "float16"]
DEADLINE_S = 480  # no config starts timing after this


def variants(result, vdev):
    """The search's best plan in launch order, walked in each of :data:`VARIANTS`, priced by the current model."""
    best = next(c for c in result.ranked if c.plan.tile_order.is_launch_order and not c.plan.persistent)
    return {"search's pick": result.best,
            **{name: priced(best, replace(best.plan, tile_order=order), vdev, name)
               for name, order in VARIANTS.items()
               if order.panel < best.graph.grid["by" if order.axis == "row" else "bx"]}}


def main(out_dir):
    compare(CONFIGS, variants, ("search's pick", *VARIANTS), out_dir, "causal_order.json",
            "python -m benchmarks.experiments.causal_order $OUT", DEADLINE_S, template="flash_attention",
            peer="cudnn-sdpa", also=("fa3",))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
