#!/bin/bash
# FlashAttention at head dim 64, each query tile (64, 128, 192 rows) beside cuDNN SDPA on nine shapes
# (benchmarks/experiments/query_tiles.py). One H200 (nvidia-h200), one call carrying .gpu-bundle:
#   bash benchmarks/results/2026-12-01-h200-query-tiles/run.sh COMMIT
set -u
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | tee $OUT/gpu.txt
timeout 570 python -m benchmarks.experiments.query_tiles $OUT 2>&1 | grep -v INFO > $OUT/query_tiles.log
tail -14 $OUT/query_tiles.log
