"""GPU experiment (issue 15 item 3): the order in which FlashAttention's TMA producer loads ``K`` and ``V``.

The search's plans load both at stage 0: in loop step ``k`` the producer waits for a free ``K`` stage and loads
``K(k)``, then waits for a free ``V`` stage and loads ``V(k)``, though the consumers read ``V(k)`` a step after
``K(k)`` (``P V`` of the previous block runs beside ``Q K^T`` of this one) and free its stage a step later, so the
wait for a ``V`` stage holds back the next ``K``. FlashAttention 3's producer loads each at the step its readers
use it, ``K(k)`` then ``V(k - 1)``. This variant is the search's pick with every loop copy of the producer at its
pipeline readers' stage (the cost model prices the two alike); each kernel is checked on every output against the
float32 reference on fresh random inputs (NaN-prefilled), then timed beside cuDNN SDPA in alternating rounds.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.producer_order $OUT``.
"""
import dataclasses
import os
import sys

from benchmarks.experiments.attention_tiles import _cfg
from benchmarks.experiments.variants import compare, priced
from pt_tvm.graph import Placement
from pt_tvm.plan import Append, ExecutionPlan
from pt_tvm.search import Candidate

CONFIGS = [{**_cfg(dim, 4096, causal), "note": f"d{dim} s4096{' causal' if causal else ''}"}
           for dim in (64, 128, 256) for causal in (False, True)]
VARIANTS = ("pick", "loads as read")
DEADLINE_S = 420  # no config starts timing after this


def loads_as_read(plan: ExecutionPlan, graph) -> ExecutionPlan:
    """``plan`` with each loop pipeline's producer copy at the stage its consumers read the pipeline at."""
    read_at = {}
    for p in plan.pipelines:
        stages = plan.reader_stages(p, graph)
        if p.scope == "loop" and len(stages) == 1:
            read_at.update({b: stages.pop() for b in p.buffers})
    loop = {t.id for t in graph.placed(Placement.LOOP)}

    def moved(s):
        if not isinstance(s, Append) or s.stask not in loop:
            return s
        written = graph.stask(s.stask).write_buffers() & set(read_at)
        return dataclasses.replace(s, stage=read_at[min(written)]) if written else s
    return dataclasses.replace(plan, steps=tuple(moved(s) for s in plan.steps))


def variants(result, vdev) -> dict[str, Candidate]:
    best = result.best
    return {"pick": best, "loads as read": priced(best, loads_as_read(best.plan, best.graph), vdev,
                                                  "loads at their readers' stage")}


def main(out_dir):
    compare(CONFIGS, variants, VARIANTS, out_dir, "producer_order.json",
            "python -m benchmarks.experiments.producer_order $OUT", DEADLINE_S, template="flash_attention",
            peer="cudnn-sdpa")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
