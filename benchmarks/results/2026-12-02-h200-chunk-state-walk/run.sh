#!/bin/bash
# Issue 15 item 4: Mamba2's chunk_state, its pick (a software pipeline) against the best warp-specialized plan
# without turns, launched and walked persistently (benchmarks/experiments/chunk_state_walk.py), with achieved
# bandwidth, on ONE H200 (nvidia-h200), one call carrying .gpu-bundle, from the project root:
#   bash benchmarks/results/2026-12-02-h200-chunk-state-walk/run.sh COMMIT
set -u
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 300 python -m benchmarks.experiments.chunk_state_walk $OUT 2>&1 | grep -v "INFO\|AutoWarpSpecialization" \
  > $OUT/chunk_state_walk.log
echo "rc=$? (at $1)"; tail -6 $OUT/chunk_state_walk.log | cut -c1-400
