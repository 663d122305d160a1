#!/bin/bash
# The random problems of every template at seeds never run before (31-45: 150 problems), each the search's pick
# for the H200 checked on every output against float32 (tests/test_random_problems.py), on ONE H200 (nvidia-h200,
# 16 processes), one device call carrying .gpu-bundle:
#   bash benchmarks/results/2026-12-01-h200-random-problems/run.sh
set -u
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_RANDOM_SEEDS=31:46
OUT=$OUT bash benchmarks/gpu-tests.sh 16 420 tests/test_random_problems.py
gzip -f $OUT/gpu-tests.txt
