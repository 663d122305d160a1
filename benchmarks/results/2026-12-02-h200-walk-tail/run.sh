#!/bin/bash
# A persistent walk of FlashAttention's key-tail tiles against the same tile launched and the launched 64 x 64 tile,
# at ViT-L/14's and ViT-B/16's token counts (benchmarks/experiments/walk_tail.py). One H200:
#   source .gpu-bundle/setup.sh && bash benchmarks/results/2026-12-02-h200-walk-tail/run.sh COMMIT
set -u
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | tee $OUT/gpu.txt
timeout 250 python -m benchmarks.experiments.walk_tail $OUT 2>&1 | grep -v INFO > $OUT/walk_tail.log
tail -14 $OUT/walk_tail.log
