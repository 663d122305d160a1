#!/bin/bash
# Issue 16: batch 1, kv 16k, paged decoding's split kernel with its query rows loaded after the pipeline's first key
# block (and a diagnostic with the split's first page taken from the capacity), beside the kernel as emitted
# (benchmarks/experiments/decode_prologue.py). ONE H200 (nvidia-h200), one call carrying .gpu-bundle, from the
# project root:
#   bash benchmarks/results/2026-11-29-h200-decode-prologue/run.sh COMMIT
# The first call (1c6af7b, 2026-11-29) compiled the three variants one after another and ran past its 270 s limit
# without a line of output (TileLang lowers this paged kernel in about 45 s on the CPU machine); they now compile
# side by side in threads, and the log says how far it got.
set -u
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
timeout 480 python -u -m benchmarks.experiments.decode_prologue $OUT > $OUT/decode_prologue.log 2>&1
echo "rc=$? (at $1)"; grep -v "INFO\|UserWarning\|_warn_once" $OUT/decode_prologue.log | tail -12 | cut -c1-200
