"""GPU experiment (issue 15 item 2): persistent GEMM plans in 2-CTA clusters sharing a load by TMA multicast
(``ExecutionPlan.multicast``, ``passes/multicast.py``) against the same plans without clusters, and cuBLAS.

Per config one search with ``SearchSpace(multicast=True)``; timed: the model's best plan without clusters
(``plain``), the best persistent one (``pers.``: what a cluster plan is a variant of) and its twins in clusters
paired along the output's block rows (``by``: the pair shares B's tile) and block columns (``bx``: shares A's),
the best persistent plan of 128 rows or more and its ``by`` twin, each checked on every output against the
float32 reference on fresh inputs, then timed beside cuBLAS in alternating rounds. The shapes are LLaMA-3-8B's
projections at 512 tokens (where cuBLAS runs 2-CTA clusters, NOTES-parity) and 2048, and 4096^3.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.multicast $OUT [I/N]`` (the
I-th of N interleaved parts of the configs, one a GPU). Writes ``multicast-I.json``.
"""
import os
import sys

from benchmarks.configs import LLAMA3_SHAPES
from benchmarks.experiments.variants import compare, priced
from pt_tvm.hw import VDevice
from pt_tvm.search import Candidate, SearchSpace
from pt_tvm.space import multicast_variants

_LLAMA = [("qkv", *LLAMA3_SHAPES[("llama3-8b", "qkv")]), ("o", *LLAMA3_SHAPES[("llama3-8b", "o")]),
          ("gate_up", 2 * LLAMA3_SHAPES[("llama3-8b", "up")][0], 4096),
          ("down", *LLAMA3_SHAPES[("llama3-8b", "down")])]
CONFIGS = ([dict(M=512, N=N, K=K, dtype="float16", note=f"llama3-8b {p} M512") for p, N, K in _LLAMA]
           + [dict(M=2048, N=N, K=K, dtype="float16", note=f"llama3-8b {p} M2048") for p, N, K in _LLAMA[2:]]
           + [dict(M=4096, N=4096, K=4096, dtype="float16", note="square 4096")])
VARIANTS = ("plain", "pers.", "pers. by", "pers. bx", "pers. 128", "pers. 128 by")
DEADLINE_S = 480


def _twin(c: Candidate | None, axis: str, vdev: VDevice) -> Candidate | None:
    """``c`` in 2-CTA clusters paired along ``axis``, where that verifies."""
    found = [v for v in (multicast_variants(c.plan, c.graph, vdev) if c else []) if v.multicast == axis]
    return priced(c, found[0], vdev, f"2-CTA clusters along {axis}") if found else None


def variants(result, vdev):
    plain = [c for c in result.ranked if not c.plan.multicast]
    pers = next((c for c in plain if c.plan.persistent), None)
    wide = next((c for c in plain if c.plan.persistent and c.plan.tile["block_M"] >= 128), None)
    return {"plain": plain[0], "pers.": pers, "pers. by": _twin(pers, "by", vdev), "pers. bx": _twin(pers, "bx", vdev),
            "pers. 128": wide, "pers. 128 by": _twin(wide, "by", vdev)}


def main(out_dir, shard="0/1"):
    i, n = map(int, shard.split("/"))
    compare(CONFIGS[i::n], variants, VARIANTS, out_dir, f"multicast-{i}.json",
            f"python -m benchmarks.experiments.multicast $OUT {shard}", DEADLINE_S, space=SearchSpace(multicast=True))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"], *sys.argv[2:3])
