#!/bin/bash
# Issue 15 item 3: FlashAttention's warp-specialized plan 2, 3 and 4 K/V stages deep (benchmarks/experiments/
# attention_depth.py), on ONE H200 (nvidia-h200), one call carrying .gpu-bundle, from the project root:
#   bash benchmarks/results/2026-11-29-h200-attention-depth/run.sh COMMIT
set -u
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1
timeout 330 python -m benchmarks.experiments.attention_depth $OUT 2>&1 | grep -v "INFO\|AutoWarpSpecialization" \
  > $OUT/attention_depth.log
echo "rc=$? (at $1)"; tail -16 $OUT/attention_depth.log | cut -c1-230
