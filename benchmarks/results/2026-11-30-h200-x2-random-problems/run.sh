#!/bin/bash
# A longer sweep of tests/test_random_problems.py on the GPU: seeds 1-30 of every template (1-6 the default) (300 problems: head dims
# 64-256, GQA/MQA, ragged and KV-cache lengths, paged caches, other softmax scales, odd GEMM sizes, dynamic sizes,
# Mamba2 groups and chunks), each the search's pick for the GPU compiled and checked on every output against the
# float32 reference, on a 2-GPU H200 machine (nvidia-h200-x2) for its 32 cores, one device call carrying .gpu-bundle.
# Ran 2026-11-30 with COMMIT 7890b02 (434 s): 300 passed (gpu-tests.txt.gz).
#   bash benchmarks/results/2026-11-30-h200-x2-random-problems/run.sh COMMIT
set -u
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_RANDOM_SEEDS=1:31
OUT=$OUT bash benchmarks/gpu-tests.sh 32 470 tests/test_random_problems.py
gzip -f $OUT/gpu-tests.txt
