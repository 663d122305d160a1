#!/bin/bash
# GEMM at K whose A rows TMA cannot address (fp16 rows of 8002 and 8008 bytes: TMA wants 16-byte strides), each
# against its nearest tile multiple (K = 3968, 4032), the search's pick at COMMIT (such loads priced on the LSU, software
# pipelines only) and, in the same call on the same GPU, at the commit before (old/: the extraction and the search
# space of HEAD~1, the loads priced as TMA, a producer warp issuing them). One call, from the project root:
#   source .gpu-bundle/setup.sh && bash benchmarks/results/2026-11-28-h100-tma-rows/run.sh COMMIT
# (old/ is deleted after the run; `git show COMMIT~1:passes/extract.py` and `:pt_tvm/space.py` give it back)
set -u
R=benchmarks/results/2026-11-28-h100-tma-rows
export PYTHONPATH=$PWD:${PYTHONPATH:-} PT_TVM_GIT_COMMIT=$1
pairs() {  # OUT_DIR: the two pairs of the ragged experiment whose rows TMA cannot address
  mkdir -p $1
  python -c "
import sys
from benchmarks.experiments import ragged
ragged.main(sys.argv[1], [], pairs=[p for p in ragged.PAIRS if p[3].startswith('K rows of')])" $1 2>&1 \
    | grep -v "INFO\]\|AutoWarpSpecialization" > $1/ragged.log
  tail -4 $1/ragged.log
}
echo "== after ($1)"; pairs $OUT/after
cp $R/old/extract.py passes/extract.py && cp $R/old/space.py pt_tvm/space.py
echo "== before ($1~1)"; pairs $OUT/before
# A second call (same session, another H100), at 39a56c4: the same two K with the tile's threads pinned to 256 (the
# search keeps one thread count per tile on a chip that warp-specializes, 128 here), into threads256/:
#   source .gpu-bundle/setup.sh && PYTHONPATH=$PWD PT_TVM_GIT_COMMIT=39a56c4 python -c "
#   import sys; from benchmarks.experiments import ragged
#   ragged.main(sys.argv[1], [], pairs=[('gemm', {'M': 4096, 'N': 4096, 'K': k, 'threads': 256}, {'K': 128},
#               f'K={k}, 256 threads') for k in (4001, 4004)])" $OUT/threads256
