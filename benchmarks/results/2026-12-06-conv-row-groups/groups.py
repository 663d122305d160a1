"""Step 2 of run.sh: at 4 x 4096 x 4353 fp16, the conv's x read by TMA in groups of 8 tokens (row_groups=1, whose
run spans whole 16-byte units) against the chunks around each row (the pick of 2026-12-05, 0.753 of its twin on an
H100), each tile's best plan pinned, timed from CUDA graphs beside torch.compile (threads.py of 2026-12-05's folder).

    python benchmarks/results/2026-12-06-conv-row-groups/groups.py $OUT
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "2026-12-05-h200-conv-weights"))
from threads import PROBLEM, main  # noqa: E402

TILES = [  # (block_L, block_D, block_S, threads, row_groups)
    (32, 256, 256, 128, 1),  # the search's pick at 2026-12-06 (warp-specialized, two consumer warpgroups)
    (32, 128, 256, 128, 0),  # the pick of 2026-12-05: chunks around each row, a software pipeline
    (64, 256, 256, 128, 1),
    (32, 256, 512, 128, 1),
    (32, 256, 256, 256, 1),
    (64, 256, 512, 128, 1),
]

if __name__ == "__main__":
    main(sys.argv[1], TILES, PROBLEM, "python benchmarks/results/2026-12-06-conv-row-groups/groups.py $OUT", "groups")
