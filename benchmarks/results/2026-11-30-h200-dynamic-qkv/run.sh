#!/bin/bash
# An attention layer's two ops under dynamic_tokens (COMMIT): ops.qkv_rope at a symbolic row count and sequence
# length, ops.attention_qkv over its heads as views on the varlen kernel of the length's bucket. One H200
# (nvidia-h200), one device call carrying .gpu-bundle:
#   the GPU tests of the two ops and of the dynamic-token ops (LIMIT s);
#   LLaMA-3-8B's attention (projection with RoPE and causal GQA attention) at 777, 1500 and 2500 tokens, the
#   exact lengths' kernels against the buckets' and the eager layer (benchmarks.experiments.dynamic_qkv).
#   bash benchmarks/results/2026-11-30-h200-dynamic-qkv/run.sh COMMIT
set -u
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | tee $OUT/gpu.txt
OUT=$OUT bash benchmarks/gpu-tests.sh 16 ${LIMIT:-150} tests/test_ops_gpu.py tests/test_templates_gpu.py \
  -k "qkv_rope or dynamic or rope" > /dev/null 2>&1
gzip -f $OUT/gpu-tests.txt
timeout 380 python -m benchmarks.experiments.dynamic_qkv $OUT > $OUT/log.txt 2>&1
gzip -f $OUT/log.txt
zcat $OUT/gpu-tests.txt.gz | head -8
zcat $OUT/log.txt.gz | grep -v "INFO\|TileLang" | grep "L=\|total\|Error"
