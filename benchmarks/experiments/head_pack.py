"""GPU experiment (issue 15 item 4): Mamba2's chunk_scan and chunk_state with ``block_H`` heads of one group a block.

Every head reads its group's tiles again: chunk_scan's float32 ``cb`` (chunk x chunk) and chunk_state's ``B``
(chunk x dstate, twice the bytes of a head's ``x``); 64 heads of Mamba2-1.3B's one group read 64 times their
bytes from L2, where the compulsory traffic counts them once (docs/NOTES-parity.md, "Mamba2 against the
rooflines"). A block of ``block_H`` heads stages each such tile once for all of them. Per shape and ``block_H``
of 1, 2 and 4, the search's pick (chunk_scan: the tile otherwise pinned to the suite's, 64x64x32, 128 threads;
chunk_state: searched for 1 and 2 heads; four heads' tile pinned and its space one consumer warpgroup without
random orders, which take its search from seconds to minutes on this 2-core CPU), checked on
every output against the float32 reference on fresh random inputs, then timed in alternating rounds against
mamba-ssm's Triton kernel (benchmarks/fetch_mamba_ssm.sh on PYTHONPATH).

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.head_pack $OUT [TEMPLATE]``
(chunk_scan by default). Writes ``head_pack.json`` (chunk_scan) or ``head_pack_chunk_state.json``.
"""
import sys

from benchmarks.experiments.variants import compare
from pt_tvm.space import SearchSpace

_SCAN_TILE = dict(block_M=64, block_N=64, block_K=32, threads=128)
_STATE_TILE_4 = dict(block_M=64, block_N=128, block_K=32, threads=256)
CONFIGS = {
    "chunk_scan": [dict(batch=b, seqlen=s, dtype="float16", note=f"b{b} s{s} H{h}", block_H=h, **_SCAN_TILE)
                   for b, s in ((64, 1024), (1, 16384)) for h in (1, 2, 4)],
    "chunk_state": [dict(batch=b, seqlen=s, dtype="float16", note=f"b{b} s{s} H{h}", block_H=h,
                         **(_STATE_TILE_4 if h == 4 else {}))
                    for b, s in ((64, 1024), (64, 4096), (1, 16384)) for h in (1, 2, 4)],
}
DEADLINE_S = 480  # no config starts timing after this
_NARROW = SearchSpace(consumer_wgs=(1,), random_orders=0, row_split=False, carry_gemms=False)


def _state_space(cfg: dict) -> SearchSpace:
    """chunk_state's four-head tile (pinned) searched in the narrow space."""
    return _NARROW if cfg["block_H"] == 4 else SearchSpace()


def main(out_dir: str, template: str = "chunk_scan") -> None:
    out_name = "head_pack.json" if template == "chunk_scan" else f"head_pack_{template}.json"
    compare(CONFIGS[template], lambda result, vdev: {"pt-tvm": result.best}, ("pt-tvm",), out_dir, out_name,
            f"python -m benchmarks.experiments.head_pack $OUT {template}", DEADLINE_S,
            space=_state_space if template == "chunk_state" else SearchSpace(), template=template, peer="mamba-triton")


if __name__ == "__main__":
    main(sys.argv[1], *sys.argv[2:])
