"""GPU experiment (issue 15 item 4): Mamba2's chunk_scan with ``block_H`` heads of one group a block.

Every head reads its group's float32 ``cb`` tile (chunk x chunk) again: 64 heads of Mamba2-1.3B's one group
read 64 times its bytes, where the compulsory traffic counts them once (docs/NOTES-parity.md, "Mamba2 against
the rooflines"). A block of ``block_H`` heads stages each ``cb`` tile once for all of them. Per shape and
``block_H`` of 1, 2 and 4 (4 is outside the template's tile space: its search takes a minute a tile), the
search's pick with the tile otherwise pinned to the suite's (64x64x32, 128 threads), checked on every output
against the float32 reference on fresh random inputs, then timed in alternating rounds against mamba-ssm's
Triton kernel (benchmarks/fetch_mamba_ssm.sh on PYTHONPATH).

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.head_pack $OUT``.
Writes ``head_pack.json``.
"""
import os
import sys

from benchmarks.experiments.variants import compare

TILE = dict(block_M=64, block_N=64, block_K=32, threads=128)
CONFIGS = [dict(batch=b, seqlen=s, dtype="float16", note=f"b{b} s{s} H{h}", block_H=h, **TILE)
           for b, s in ((64, 1024), (1, 16384)) for h in (1, 2, 4)]
DEADLINE_S = 480  # no config starts timing after this


def main(out_dir):
    compare(CONFIGS, lambda result, vdev: {"pt-tvm": result.best}, ("pt-tvm",), out_dir, "head_pack.json",
            "python -m benchmarks.experiments.head_pack $OUT", DEADLINE_S, template="chunk_scan", peer="mamba-triton")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
