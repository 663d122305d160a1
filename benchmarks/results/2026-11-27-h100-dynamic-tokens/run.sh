#!/bin/bash
# One GEMM kernel per token bucket against one per exact token count (benchmarks/experiments/dynamic_tokens.py),
# then the GPU test of the ops' dynamic tokens, on ONE H100 (nvidia-h100-x1), one device call carrying
# .gpu-bundle, from the project root:
#   bash benchmarks/results/2026-11-27-h100-dynamic-tokens/run.sh COMMIT
set -u
source benchmarks/gpu-env.sh && env_setup
timeout 420 python -m benchmarks.experiments.dynamic_tokens $OUT > $OUT/dynamic_tokens.log 2>&1
echo "experiment rc=$? (at $1)"
grep -v "INFO\|AutoWarpSpecialization\|WARNING" $OUT/dynamic_tokens.log | tail -12
timeout 150 python -m pytest -q -m gpu -rfE -s tests/test_ops_gpu.py -k dynamic_tokens > $OUT/gpu-test.txt 2>&1
echo "test rc=$?"; grep -E "REL_ERR|passed|failed|Error" $OUT/gpu-test.txt | tail -12
