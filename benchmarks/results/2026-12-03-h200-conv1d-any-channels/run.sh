#!/bin/bash
# The causal_conv1d op's GPU tests after the template takes any channel count and row stride (cb6354a: rows TMA
# cannot address read and written by the LSU): six shapes against float32, 61 channels in packed rows and 100
# columns of a 4260-column tensor among them, on ONE H200 (nvidia-h200), one call carrying .gpu-bundle:
#   bash benchmarks/results/2026-12-03-h200-conv1d-any-channels/run.sh COMMIT
set -u
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1 PT_TVM_CACHE_DIR=$(mktemp -d)
bash benchmarks/gpu-tests.sh 8 200 tests/test_ops_gpu.py -k "conv1d" | tail -4
grep -E "PASSED|FAILED|rel" $OUT/gpu-tests.txt | head -12
# What ran (2026-12-03, twenty-first session, 02d0929, one call, 90 s): 6 passed (gpu-tests-02d0929.txt.gz).
