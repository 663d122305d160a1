#!/bin/bash
# The attention GPU tests on the search's picks with o_shared and persistent walks in FlashAttention's space: the
# templates' random problems at seeds 1-20, the attention ops, the ragged attention shapes and the tile walks. One H200
# (nvidia-h200), one call carrying .gpu-bundle:
#   bash benchmarks/results/2026-12-01-h200-o-shared-tests/run.sh COMMIT
set -u
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | tee $OUT/gpu.txt
PT_TVM_RANDOM_SEEDS=1:21 bash benchmarks/gpu-tests.sh 16 430 tests/test_random_problems.py tests/test_ops_gpu.py \
  tests/test_shapes_gpu.py tests/test_tile_walk.py \
  -k "(flash_attention and not varlen and not decode) or (test_attention and not varlen) or (ragged and attention) or walked_plans"
