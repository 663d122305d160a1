#!/bin/bash
# The random problems of every template at seeds never run before (FIRST:END, 15 seeds = 150 problems a call), each the search's pick
# for the H200 checked on every output against float32 (tests/test_random_problems.py), on ONE H200 (nvidia-h200,
# 16 processes), a device call carrying .gpu-bundle each; at 046b860 seeds 31:46, then 46:61 (gpu-tests-FIRST-END.txt.gz):
#   bash benchmarks/results/2026-12-01-h200-random-problems/run.sh FIRST:END
set -u
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_RANDOM_SEEDS=$1
OUT=$OUT bash benchmarks/gpu-tests.sh 16 420 tests/test_random_problems.py
mv $OUT/gpu-tests.txt $OUT/gpu-tests-${1/:/-}.txt && gzip -f $OUT/gpu-tests-${1/:/-}.txt
