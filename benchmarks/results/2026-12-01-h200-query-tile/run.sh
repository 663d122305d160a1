#!/bin/bash
# ViT-L/14's attention (32 x 577 tokens, head dim 64) at each query tile beside cuDNN SDPA (query_tile.py). One H200
# (nvidia-h200), one call carrying .gpu-bundle:
#   bash benchmarks/results/2026-12-01-h200-query-tile/run.sh COMMIT
set -u
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | tee $OUT/gpu.txt
timeout 240 python benchmarks/results/2026-12-01-h200-query-tile/query_tile.py $OUT 2>&1 | grep -v INFO \
  > $OUT/query_tile.log
tail -6 $OUT/query_tile.log
