#!/bin/bash
# Issue 16: batch 1, kv 16k, paged decoding's split kernel with its query rows loaded after the pipeline's first key
# block (and a diagnostic with the split's first page taken from the capacity), beside the kernel as emitted
# (benchmarks/experiments/decode_prologue.py); then its depth at 2, 3 and 4 stages (decode_stages.py).
# ONE H200 (nvidia-h200), one call carrying .gpu-bundle, from the project root:
#   bash benchmarks/results/2026-11-29-h200-decode-prologue/run.sh COMMIT
set -u
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
for x in decode_prologue decode_stages; do
  timeout 270 python -m benchmarks.experiments.$x $OUT 2>&1 | grep -v "INFO\|UserWarning\|_warn_once" > $OUT/$x.log
  echo "$x rc=$? (at $1)"; tail -9 $OUT/$x.log | cut -c1-200
done
