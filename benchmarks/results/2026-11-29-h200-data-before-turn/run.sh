#!/bin/bash
# Issue 15 item 3: FlashAttention's consumers waiting for their K stage before their turn (benchmarks/experiments/cuda_variants.py,
# variant "data before turn"), on ONE H200 (nvidia-h200), one call carrying .gpu-bundle, from the project root:
#   bash benchmarks/results/2026-11-29-h200-data-before-turn/run.sh COMMIT
set -u
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1
timeout 560 python -m benchmarks.experiments.cuda_variants $OUT "data before turn" 2>&1 \
  | grep -v "INFO\|AutoWarpSpecialization" > $OUT/cuda_variants.log
echo "rc=$? (at $1)"; tail -8 $OUT/cuda_variants.log | cut -c1-260
