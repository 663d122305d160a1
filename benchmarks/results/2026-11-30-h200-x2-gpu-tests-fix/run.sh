#!/bin/bash
# The carried-gemm and cluster GPU tests at COMMIT (every configuration searched, 779c365: five of them found no plan
# to check in 2026-11-30-h200-gpu-tests-c6d152c), on GPU 0 of a 2-GPU H200 machine (nvidia-h200-x2), in the call that
# sets up 2026-11-30-h200-x2-decode-rest2, carrying .gpu-bundle:
#   bash benchmarks/results/2026-11-30-h200-x2-gpu-tests-fix/run.sh COMMIT
# Ran at 20160e9 (2026-11-30): the 9 tests passed (gpu-tests.txt).
set -u
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
CUDA_VISIBLE_DEVICES=0 OUT=$OUT bash benchmarks/gpu-tests.sh 16 200 tests/test_carry.py tests/test_multicast.py
