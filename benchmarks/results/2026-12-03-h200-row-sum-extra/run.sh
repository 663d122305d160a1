#!/bin/bash
# Issue 15 item 3: FlashAttention 3's loop step (the row sums reduced once after the loop and the output's rescale
# before the next P V, together) as a CUDA rewrite of the search's pick, on attention-core's other configs without
# the causal mask (cuda_variants.EXTRA: bf16 head dim 128 at 4 x 4096, head dims 128 and 256 at 1 x 16384), the
# rewrites apart and together, 10 alternating rounds beside cuDNN SDPA, on ONE H200 (nvidia-h200), one call
# carrying .gpu-bundle, from the project root:
#   bash benchmarks/results/2026-12-03-h200-row-sum-extra/run.sh COMMIT
set -u
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 560 python -m benchmarks.experiments.cuda_variants $OUT "row sum after loop" \
  "row sum after loop, rescale before pv" --extra --rounds 10 2>&1 \
  | grep -v "INFO\|AutoWarpSpecialization" > $OUT/cuda_variants.log
echo "rc=$? (at $1)"; tail -5 $OUT/cuda_variants.log | cut -c1-420
# What ran (2026-12-03, eighteenth session, dea72ed, one call, 140 s): both rewrites on the three configs, 10 rounds
# (cuda_variants-dea72ed.json.gz, cuda_variants.log).
