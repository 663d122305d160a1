#!/bin/bash
# After cost.THIRD_WARPGROUP_STRETCH: the key-tail experiment again (its kernels searched with the stretched model;
# ViT-L/14's 577 tokens now on 64 rows) beside cuDNN and FlashAttention-2 SDPA, then the attention templates'
# random problems at seeds 61-80 (never run before) and the attention ops' GPU tests. One H200 (nvidia-h200), one
# call carrying .gpu-bundle:
#   bash benchmarks/results/2026-12-01-h200-stretch-check/run.sh COMMIT
set -u
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | tee $OUT/gpu.txt
timeout 300 python -m benchmarks.experiments.key_tail $OUT 2>&1 | grep -v INFO > $OUT/key_tail.log
PT_TVM_RANDOM_SEEDS=61:81 bash benchmarks/gpu-tests.sh 16 200 tests/test_random_problems.py tests/test_ops_gpu.py \
  -k "(flash_attention and not varlen) or test_attention" | tail -5
tail -12 $OUT/key_tail.log
