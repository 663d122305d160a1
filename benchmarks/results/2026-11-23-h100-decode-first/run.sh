#!/bin/bash
# Issue 16's decode benchmark, its first run on a GPU: one H100 80GB HBM3 (nvidia-h100-x1), 0dae39b, the last
# device call of the session (three calls on one warm machine: .gpu-bundle, then .gpu-peers/a, then this with
# .gpu-peers/b). What ran, with the limits the session's remaining device time allowed:
#   source benchmarks/gpu-env.sh && env_setup
#   python -m pytest -q tests/test_decode.py -m gpu                     (150 s: 5 passed, then the limit)
#   python -m benchmarks.decode --out $OUT/decode --only suite --tune-top-k 2 --rep-ms 300   (200 s, whole)
#   python -m benchmarks.decode --out $OUT/decode --only sweep          (90 s: the first sweep of six, then the limit)
# Faults it found (fixed after the run, not re-measured): pt-tvm's tuned system failed wherever its candidates
# included a split-KV plan ('SplitKV' object has no attribute 'prim_func'); the SDPA peers failed on the
# ragged config; flash-attn-4 refuses split-KV on SM 9.0 for the small-batch configs.
set -u
source benchmarks/gpu-env.sh
env_setup || exit 1
export PT_TVM_GIT_COMMIT=${1:-unknown}
o=$OUT/decode && mkdir -p $o
timeout 150 python -m pytest -q tests/test_decode.py -m gpu -p no:cacheprovider -rfEx > $o/gpu-tests.txt 2>&1
timeout 220 python -m benchmarks.decode --out $o --only suite --tune-top-k 2 --rep-ms 300 > $o/suite.log 2>&1
timeout 90 python -m benchmarks.decode --out $o --only sweep > $o/sweep.log 2>&1
