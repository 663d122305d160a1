#!/bin/bash
# Issue 14's attention pairs at ragged lengths against their nearest tile multiples, each twin timed a second time on
# input sets of its own (the ragged experiment's control since 4cd9040: how far apart the timing puts identical
# kernels in the pair's own rounds). One H200 (nvidia-h200), one call carrying .gpu-bundle:
#   bash benchmarks/results/2026-12-01-h200-ragged-spread/run.sh COMMIT
set -u
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | tee $OUT/gpu.txt
timeout 540 python -m benchmarks.experiments.ragged $OUT flash_attention flash_attention_varlen 2>&1 \
  | grep -v INFO > $OUT/ragged.log
tail -8 $OUT/ragged.log
