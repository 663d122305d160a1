#!/bin/bash
# Issue 15 item 3: FlashAttention's wgmma descriptors from a warp-uniform warpgroup index
# (ecf8f7b's benchmarks/experiments/uniform_warpgroup.py, since cuda_variants.py's "uniform warpgroup"), on ONE H200 (nvidia-h200), one call carrying .gpu-bundle, from the
# project root:
#   bash benchmarks/results/2026-11-29-h200-uniform-warpgroup/run.sh COMMIT
set -u
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1
timeout 560 python -m benchmarks.experiments.uniform_warpgroup $OUT 2>&1 | grep -v "INFO\|AutoWarpSpecialization" \
  > $OUT/uniform_warpgroup.log
echo "rc=$? (at $1)"; tail -8 $OUT/uniform_warpgroup.log | cut -c1-260
