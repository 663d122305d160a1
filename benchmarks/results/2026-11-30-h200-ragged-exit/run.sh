#!/bin/bash
# Issue 14's attention pairs at ragged lengths against their nearest tile multiples (dense FlashAttention causal
# and not, a KV cache of GQA 4 packed and not, a packed batch of ragged lengths) at COMMIT, where a varlen block
# past its sequence's queries leaves before its first op; then the GPU tests of ragged shapes and random problems
# (attention and varlen, 49) in the time left (LIMIT s). One H200 (nvidia-h200), one call carrying .gpu-bundle:
#   bash benchmarks/results/2026-11-30-h200-ragged-exit/run.sh COMMIT
set -u
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | tee $OUT/gpu.txt
timeout 200 python -m benchmarks.experiments.ragged $OUT flash_attention flash_attention_varlen 2>&1 | grep -v INFO \
  > $OUT/ragged.log
OUT=$OUT bash benchmarks/gpu-tests.sh 16 ${LIMIT:-170} tests/test_shapes_gpu.py tests/test_random_problems.py -k "attention or varlen" \
  > /dev/null 2>&1
gzip -f $OUT/gpu-tests.txt
tail -8 $OUT/ragged.log
zcat $OUT/gpu-tests.txt.gz | head -6
