#!/bin/bash
# Issue 15 item 3: the two loop-step rewrites of FlashAttention 3 / flash-attn-4 (the output's rescale before the
# next P V; the row sums reduced once after the loop), alone and together, on the three configs without the causal
# mask, 15 alternating rounds (benchmarks/experiments/cuda_variants.py), on ONE H200 (nvidia-h200), one call
# carrying .gpu-bundle, from the project root:
#   bash benchmarks/results/2026-12-03-h200-row-sum-rounds/run.sh COMMIT
set -u
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 540 python -m benchmarks.experiments.cuda_variants $OUT "rescale before pv" "row sum after loop" \
  "row sum after loop, rescale before pv" --non-causal --rounds 15 2>&1 \
  | grep -v "INFO\|AutoWarpSpecialization" > $OUT/cuda_variants.log
echo "rc=$? (at $1)"; tail -4 $OUT/cuda_variants.log | cut -c1-420
# What ran (2026-12-03, 846c97d, one call, 163 s): the three rewrites on the three configs without the mask, 15
# rounds (cuda_variants-846c97d.json.gz, cuda_variants.log).
