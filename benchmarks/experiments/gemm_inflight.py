"""GPU experiment (issue 15, GEMM): the k-loop's gemms carried into the next step (``carry_gemms``, CUTLASS's
mainloop) against the same plans waiting for their wgmmas in each step.

A consumer warpgroup of a warp-specialized GEMM that waits for its step's wgmmas (``warpgroup_wait<0>``) before
it releases the step's stage leaves the tensor cores idle from its last wgmma's end to its next step's first
issue; a carried step waits for all but its own wgmmas and releases the stage of the step before
(:mod:`pt_tvm.passes.carry`). Its first run (ab25a9e, before the plan could say it) rewrote the emitted CUDA of
the search's picks. Now per config: the search's pick and the best carried plan of the other ``block_K``, each
also waiting (a pick the search does not carry, a launched one since f06ea26, is timed as it is), checked on every
output against the float32 reference on fresh random inputs, then timed beside cuBLAS in alternating rounds.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.gemm_inflight $OUT``.
"""
import os
import sys
from dataclasses import replace

from benchmarks.experiments.variants import compare, priced

CONFIGS = [dict(M=4096, N=4096, K=4096, dtype="float16", note="square 4096"),
           dict(M=8192, N=8192, K=8192, dtype="float16", note="square 8192"),
           dict(M=8192, N=4096, K=4096, dtype="float16", note="llama3-8b o"),
           dict(M=8192, N=14336, K=4096, dtype="float16", note="llama3-8b up"),
           dict(M=8192, N=4096, K=14336, dtype="float16", note="llama3-8b down"),
           dict(M=2048, N=6144, K=4096, dtype="float16", note="llama3-8b qkv M2048")]
VARIANTS = ("pick", "pick waiting", "other block_K", "other block_K waiting")
DEADLINE_S = 400


def variants(result, vdev):
    """The search's pick (carried) and the best carried plan of the other ``block_K``, each also waiting."""
    pick = result.best
    other = next((c for c in result.ranked if c.plan.carry_gemms
                  and c.plan.tile["block_K"] != pick.plan.tile["block_K"]), None)
    out = {}
    for name, c in (("pick", pick), ("other block_K", other)):
        if c is None:
            continue
        out[name] = c
        if c.plan.carry_gemms:
            out[f"{name} waiting"] = priced(c, replace(c.plan, carry_gemms=False), vdev, "waiting")
    return out


def main(out_dir):
    compare(CONFIGS, variants, VARIANTS, out_dir, "gemm_inflight.json",
            "python -m benchmarks.experiments.gemm_inflight $OUT", DEADLINE_S)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
