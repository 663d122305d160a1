"""GPU experiment (issue 15, attention): a persistent FlashAttention block with the output tile staged in a shared
tile of its own (``o_shared=1``).

Walked persistently, the search's best non-causal plan ran 0.89-0.98x its launched speed (2026-11-28,
``persistent_attention.py``). Its output tile is staged in ``Q_shared``, so the producer may load the next tile's
queries only after this tile's epilogue has stored it: every tile starts on a query load. With ``o_shared=1`` the
consumers release ``Q_shared`` after their last ``Q K^T`` and the next queries load under the epilogue, as
FlashAttention 3's persistent kernel does; two K/V stages then fit at head dim 128 (FlashAttention 3 keeps two).
Per config and ``o_shared``, one search; its best plan launched as a grid, and the same plan two stages deep walked
persistently; each checked on every output against the float32 reference on fresh random inputs (NaN-prefilled),
then timed beside cuDNN SDPA in alternating rounds.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.o_shared $OUT``.
"""
import os
import sys
from dataclasses import replace

from benchmarks.configs import suite_configs
from benchmarks.experiments.depth import at_depth
from benchmarks.experiments.variants import compare, priced
from pt_tvm.search import SearchSpace
from pt_tvm.verify import violations

SHAPES = [dict(c.problem, note=f"d{c.problem['dim']} s{c.problem['seq_len']}")
          for c in suite_configs("attention-core") if not c.problem["causal"] and c.problem["dtype"] == "float16"
          and c.problem["kv_heads"] == c.problem["heads"] and (c.problem["dim"], c.problem["seq_len"]) in
          ((128, 1024), (128, 4096), (128, 16384), (64, 4096), (256, 4096))]
CONFIGS = [dict(s, o_shared=o, note=f"{s['note']} o{o}") for s in SHAPES for o in (0, 1)]
VARIANTS = ("launched", "persistent 2")
DEADLINE_S = 420  # no config starts timing after this


def variants(result, vdev):
    """The search's best plan launched as a grid; the same plan two stages deep, walked persistently (where it
    fits the chip's limits)."""
    best = next(c for c in result.ranked if not c.plan.persistent)
    shallow = at_depth(best, 2, vdev)
    walked = None
    if shallow is not None:
        plan = replace(shallow.plan, persistent=True)
        walked = None if violations(plan, shallow.graph, vdev) else priced(shallow, plan, vdev, "persistent")
    return {"launched": best, "persistent 2": walked}


def main(out_dir):
    compare(CONFIGS, variants, VARIANTS, out_dir, "o_shared.json", "python -m benchmarks.experiments.o_shared $OUT",
            DEADLINE_S, space=SearchSpace(depths=(1, 2, 3, 4)), template="flash_attention", peer="cudnn-sdpa")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
