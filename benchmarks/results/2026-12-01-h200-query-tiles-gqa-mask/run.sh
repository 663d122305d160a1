#!/bin/bash
# LLaMA-3.2-1B/3B's attention (GQA 32/8, head dim 64, causal) at each query tile (64, 128, 192 rows) beside cuDNN
# SDPA (benchmarks/experiments/query_tiles.py, its gqa set), SDPA over the KV cache with a boolean lower-right mask. One H200 (nvidia-h200), one call carrying .gpu-bundle:
#   bash benchmarks/results/2026-12-01-h200-query-tiles-gqa-mask/run.sh COMMIT
set -u
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | tee $OUT/gpu.txt
timeout 420 python -m benchmarks.experiments.query_tiles $OUT gqa 2>&1 | grep -v INFO > $OUT/query_tiles-gqa.log
tail -8 $OUT/query_tiles-gqa.log
