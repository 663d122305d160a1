#!/bin/bash
# The attention templates' random problems at seeds 1-40 (80 problems; the non-causal ones whose keys run past a
# whole key block take the key tail where the search prefers it) and the attention ops' GPU tests (a ragged KV
# cache and ragged views among them), after the key tail. One H200 (nvidia-h200), one call carrying .gpu-bundle:
#   bash benchmarks/results/2026-12-01-h200-key-tail-tests/run.sh COMMIT
set -u
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | tee $OUT/gpu.txt
PT_TVM_RANDOM_SEEDS=1:41 bash benchmarks/gpu-tests.sh 16 420 tests/test_random_problems.py tests/test_ops_gpu.py \
  -k "(flash_attention and not varlen) or test_attention"
