#!/bin/bash
# Decode kernels of dynamic sizes (8af2b21: the batch size and the cache's sizes as kernel arguments) against the
# kernels of the exact sizes, and the op in a loop whose batch changes (benchmarks/experiments/decode_dynamic.py,
# plans searched on the CPU: benchmarks/experiments/decode_dynamic_plans.json), on GPU 0 of a 2-GPU H200 machine
# (nvidia-h200-x2); the decode GPU tests (tests/test_decode.py, the dynamic ones among them) on GPU 1. One device
# call carrying .gpu-bundle:
#   bash benchmarks/results/2026-11-29-h200-x2-decode-dynamic/run.sh COMMIT
set -u
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
CUDA_VISIBLE_DEVICES=1 OUT=$OUT bash benchmarks/gpu-tests.sh 12 230 tests/test_decode.py > /dev/null 2>&1 &
CUDA_VISIBLE_DEVICES=0 timeout 235 python -u -m benchmarks.experiments.decode_dynamic run \
  benchmarks/experiments/decode_dynamic_plans.json $OUT 2>&1 | grep -v " INFO \|:INFO\]" > $OUT/decode_dynamic.log
wait
head -6 $OUT/gpu-tests.txt
grep -v "Warning\|warn" $OUT/decode_dynamic.log | tail -14
# Ran at 06d26bb (2026-11-29, one call, 264 s): decode_dynamic.log (the kernels' rows; the script then ran out of its
# 235 s in the op's calls, before it wrote decode_dynamic.json, which it now writes after the rows too) and
# gpu-tests.txt.gz (13 of 16 decode GPU tests passed, the four dynamic ones among them; 3 not reached in 230 s, the
# op's test_op_reuses_the_bucket_plan among them).
