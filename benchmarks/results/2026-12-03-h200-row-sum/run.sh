#!/bin/bash
# Issue 15 item 3: FlashAttention's row sums kept per thread through the loop and all-reduced once after it, as
# flash-attn-4 does, alone and with the output's rescale moved before the next P V
# (benchmarks/experiments/cuda_variants.py, variants "row sum after loop" and "row sum after loop, rescale before pv"),
# on ONE H200 (nvidia-h200), one call carrying .gpu-bundle, from the project root:
#   bash benchmarks/results/2026-12-03-h200-row-sum/run.sh COMMIT
set -u
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 540 python -m benchmarks.experiments.cuda_variants $OUT "row sum after loop" \
  "row sum after loop, rescale before pv" 2>&1 | grep -v "INFO\|AutoWarpSpecialization" > $OUT/cuda_variants.log
echo "rc=$? (at $1)"; tail -8 $OUT/cuda_variants.log | cut -c1-330
# What ran (2026-12-03, f018a45, one call, 242 s): "row sum after loop" and "row sum after loop, rescale before pv"
# on the six configs, 7 rounds (cuda_variants-f018a45.json.gz, cuda_variants.log).
