#!/bin/bash
# The GPU tests of issue 15's plan kinds (carried gemms, turns, TMA multicast, stream-K, persistent walks) and the
# random problems on ONE H100 (nvidia-h100-x1), with what was left of the sixteenth session's device time (285 s,
# machine start included) after 2026-12-02-h100-attention-core, whose call ran the other half (templates, ops,
# shapes, Mamba2: 153 passed). One call carrying .gpu-bundle; tests not reached before the limit are listed in the
# summary (gpu-tests.txt.gz):
#   bash benchmarks/results/2026-12-02-h100-gpu-tests/run.sh COMMIT
set -u
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
OUT=$OUT bash benchmarks/gpu-tests.sh 16 170 tests/test_carry.py tests/test_handoff.py tests/test_multicast.py \
  tests/test_stream_k.py tests/test_tile_walk.py tests/test_random_problems.py
gzip -f $OUT/gpu-tests.txt
# What ran (2026-12-02, one nvidia-h100-x1 machine, 87df894, 181 s): 103 tests, 103 passed, none left unreached
# (carry 5, handoff 5, multicast 4, stream-K 5, tile walk 24, random problems 60). With the 153 of
# 2026-12-02-h100-attention-core/gpu-tests-1.txt.gz at 3dbfdde (no library or test file differs), 256 of the 282
# GPU tests on an H100; not run there: test_decode.py (21), test_tune.py, test_worker.py, test_layers_suite.py.
