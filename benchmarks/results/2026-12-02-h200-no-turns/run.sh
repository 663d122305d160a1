#!/bin/bash
# Issue 15 item 3: FlashAttention's consumer warpgroups without turns at head dim 256, as flash-attn-4's Hopper kernel
# runs them, against the search's pick (with turns; head dim 128 beside it, benchmarks/experiments/no_turns.py), beside
# cuDNN SDPA, on ONE H200 (nvidia-h200), one call carrying .gpu-bundle, from the project root:
#   bash benchmarks/results/2026-12-02-h200-no-turns/run.sh COMMIT
set -u
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 540 python -m benchmarks.experiments.no_turns $OUT 2>&1 | grep -v "INFO\|AutoWarpSpecialization" \
  > $OUT/no_turns.log
echo "rc=$? (at $1)"; tail -24 $OUT/no_turns.log | cut -c1-220
