#!/bin/bash
# Issue 15 item 3: FlashAttention's output rescale moved from the end of a loop step to just before the next step's
# P V issue, after its Q K^T, as FlashAttention 3 places it (benchmarks/experiments/cuda_variants.py, variant
# "rescale before pv"), on ONE H200 (nvidia-h200), one call carrying .gpu-bundle, from the project root:
#   bash benchmarks/results/2026-12-02-h200-rescale-before-pv/run.sh COMMIT
set -u
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 520 python -m benchmarks.experiments.cuda_variants $OUT "rescale before pv" 2>&1 \
  | grep -v "INFO\|AutoWarpSpecialization" > $OUT/cuda_variants.log
echo "rc=$? (at $1)"; tail -8 $OUT/cuda_variants.log | cut -c1-260
