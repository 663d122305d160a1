#!/bin/bash
# Issue 16: batch 1, kv 16k, paged decoding's split kernel 2, 3 and 4 stages deep (benchmarks/experiments/
# decode_stages.py), on ONE H200 (nvidia-h200), one call carrying .gpu-bundle, from the project root:
#   bash benchmarks/results/2026-11-29-h200-decode-stages/run.sh COMMIT
# Not measured yet: the first call (c19a8cd, 2026-11-29) ran out of the session's device time at its 200 s limit
# while compiling (decode_stages-c19a8cd-cut.log): the search and three split kernels with their combine kernels,
# compiled one after another, needed more; they now compile side by side in worker processes first (pt_tvm.tune.warm).
set -u
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1
timeout 480 python -m benchmarks.experiments.decode_stages $OUT 2>&1 | grep -v "INFO\|UserWarning\|_warn_once" \
  > $OUT/decode_stages.log
echo "rc=$? (at $1)"; tail -9 $OUT/decode_stages.log | cut -c1-230
