#!/bin/bash
# The ragged experiment's attention pairs (FlashAttention at 1500 tokens, causal at 3000, a KV cache of GQA 4 packed
# and not, a packed batch of ragged lengths), each against its nearest tile multiple, on ONE H200 (nvidia-h200),
# from the project root, carrying .gpu-bundle, one call (ragged-7f7f0c7):
#   bash benchmarks/results/2026-11-28-h200-ragged-attention/run.sh 7f7f0c7
set -u
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1
timeout 230 python -m benchmarks.experiments.ragged $OUT flash_attention flash_attention_varlen 2>&1 | grep -v INFO \
  | tee $OUT/ragged.log
