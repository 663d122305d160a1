#!/bin/bash
# FlashAttention's ragged key tail as a step of its own after the loop (tile key_tail=1) against the whole masked
# key block (key_tail=0), the search's best plan of each on eight non-causal shapes, predicted and measured
# (benchmarks/experiments/key_tail.py), beside cuDNN and FlashAttention-2 SDPA. One H200 (nvidia-h200), one call carrying .gpu-bundle:
#   bash benchmarks/results/2026-12-01-h200-key-tail-peers/run.sh COMMIT
set -u
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | tee $OUT/gpu.txt
timeout 540 python -m benchmarks.experiments.key_tail $OUT 2>&1 | grep -v INFO > $OUT/key_tail.log
tail -13 $OUT/key_tail.log
