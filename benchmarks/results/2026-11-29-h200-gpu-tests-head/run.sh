#!/bin/bash
# The GPU tests of the plans whose emission changed this session (the schedule materialized by
# passes/materialize.py for carried gemms and 2-CTA clusters; the pair walk) and of the templates' and ops' picks,
# at HEAD on a 2-GPU H200 machine (its 32 cores compile; the tests run on one GPU). One device call (nvidia-h200-x2), carrying .gpu-bundle:
#   bash benchmarks/results/2026-11-29-h200-gpu-tests-head/run.sh COMMIT
set -u
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
OUT=$OUT bash benchmarks/gpu-tests.sh 24 280 tests/test_carry.py tests/test_multicast.py tests/test_tile_walk.py \
  tests/test_stream_k.py tests/test_templates_gpu.py tests/test_ops_gpu.py
