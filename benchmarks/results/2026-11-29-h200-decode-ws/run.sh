#!/bin/bash
# Issue 16, batch 1, kv 16k, paged: the split kernel warp-specialized (a producer warp keeps its 2 or 3 stages
# loading, two blocks an SM) against the software pipeline (2 and 3 stages) at the pick's 32 splits and 64-key tiles,
# after 32-key tiles at four blocks an SM ran slower (2026-11-29-h200-decode-tiles). plans.json written here by
#   python -m benchmarks.experiments.decode_split plan plans.json "sp32 b64 st2" "sp32 b64 st3" "ws32 b64 d2" "ws32 b64 d3"
# ONE H200 (nvidia-h200), one call carrying .gpu-bundle, from the project root:
#   bash benchmarks/results/2026-11-29-h200-decode-ws/run.sh COMMIT
set -u
here=benchmarks/results/2026-11-29-h200-decode-ws
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1
timeout 400 python -u -m benchmarks.experiments.decode_split run $here/plans.json $OUT > $OUT/decode_split.log 2>&1
echo "rc=$? (at $1)"; grep -v "INFO\|UserWarning\|_warn_once\|resource_tracker" $OUT/decode_split.log | tail -8 | cut -c1-200
