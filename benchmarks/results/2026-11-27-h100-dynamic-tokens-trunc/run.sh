#!/bin/bash
# The dynamic-tokens experiment again with the panel walk over a symbolic grid in truncating division, with the GPU tests of
# symbolic sizes, on ONE H100 (nvidia-h100-x1), one device call carrying .gpu-bundle, from the project root:
#   bash benchmarks/results/2026-11-27-h100-dynamic-tokens-trunc/run.sh COMMIT
set -u
source benchmarks/gpu-env.sh && env_setup
timeout 400 python -m benchmarks.experiments.dynamic_tokens $OUT > $OUT/dynamic_tokens.log 2>&1
echo "experiment rc=$? (at $1)"
grep -v "INFO\|AutoWarpSpecialization\|WARNING" $OUT/dynamic_tokens.log | tail -12
timeout 150 python -m pytest -q -m gpu -rfE -s tests/test_ops_gpu.py tests/test_shapes_gpu.py -k "dynamic or symbolic" \
  > $OUT/gpu-tests.txt 2>&1
echo "tests rc=$?"; grep -E "REL_ERR|passed|failed|Error" $OUT/gpu-tests.txt | tail -14
