#!/bin/bash
# The walked-plan GPU tests of FlashAttention with the output tile of its own, after run.sh's run found the test
# walking a plan at a depth the search does not (its fix: the walk one stage shallower, as space.tile_walks). One
# H200:  source .gpu-bundle/setup.sh && bash benchmarks/results/2026-12-02-h200-o-shared-confirm/run-tests.sh COMMIT
set -u
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | tee $OUT/gpu.txt
OUT=$OUT/tests bash benchmarks/gpu-tests.sh 8 200 tests/test_tile_walk.py -k "walked_plans and flash_attention" \
  > /dev/null
head -8 $OUT/tests/gpu-tests.txt
