"""GPU experiment (issue 15 item 4): Mamba2's chunk_scan with its pipelined loop over heads (``head_loop``).

The key loop (``head_loop=0``) reads its group's float32 ``cb`` rows and ``C`` rows again for every head, and L2
binds it (docs/NOTES-parity.md). A block of ``head_loop`` heads keeps the ``cb`` and ``C`` rows of its row block in
shared memory and walks the heads, staging one head's state, decays and ``x`` a step. Per shape: the search's pick
of the key loop over its whole tile space, then the heads loop at 64x64x64 tiles for 8 to 64 heads a block (the
model's pick and its best-priced deeper pipeline), each checked on every output against the float32 reference on
fresh random inputs, timed in alternating rounds against mamba-ssm's Triton (benchmarks/fetch_mamba_ssm.sh); the share
of the chip's HBM bandwidth each reached (every kernel parameter read or written once) is printed last.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.head_loop $OUT``.
Writes ``head_loop.json``.
"""
import os
import sys

from benchmarks.experiments.variants import compare
from benchmarks.roofline import chip_of_device, compulsory_bytes

SHAPES = ((64, 1024), (1, 16384), (8, 4096))
TILE = dict(block_M=64, block_N=64, block_K=64, threads=128)
CONFIGS = [dict(batch=b, seqlen=s, dtype="float16", note=f"b{b} s{s} keys", head_loop=0) for b, s in SHAPES] + [
    dict(batch=b, seqlen=s, dtype="float16", note=f"b{b} s{s} heads {h}", head_loop=h, **TILE)
    for b, s in SHAPES for h in (8, 16, 32, 64)] + [
    dict(batch=2, seqlen=1000, dtype="float16", note="b2 s1000 heads 16", head_loop=16, **TILE)]  # a partial chunk
DEADLINE_S = 420  # no config starts timing after this


def _picks(result, vdev):
    """The model's pick, and the best-priced plan whose pipelines are deeper than the pick's (if any)."""
    depth = max((p.depth for p in result.best.plan.pipelines), default=0)
    deeper = next((c for c in result.ranked if max((p.depth for p in c.plan.pipelines), default=0) > depth), None)
    return {"pt-tvm": result.best, "deeper": deeper}


def main(out_dir):
    import torch
    rows = compare(CONFIGS, _picks, ("pt-tvm", "deeper"), out_dir, "head_loop.json",
                   "python -m benchmarks.experiments.head_loop $OUT", DEADLINE_S, template="chunk_scan",
                   peer="mamba-triton")
    hbm = chip_of_device(torch.cuda.get_device_name()).dram_bandwidth
    print(f"\nshare of the HBM roofline ({hbm / 1e12:.2f} TB/s)")
    for r in rows:
        cfg = {k: v for k, v in r["config"].items() if k not in ("note", *TILE)}
        cfg.pop("head_loop")
        nbytes = compulsory_bytes("chunk_scan", {**cfg, "has_d": True})
        cells = "  ".join(f"{name} {nbytes / (s['ms'] * 1e-3) / hbm:.0%}" for name, s in r["systems"].items()
                          if "ms" in s)
        print(f"  {r['config']['note']:<20} {cells}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
