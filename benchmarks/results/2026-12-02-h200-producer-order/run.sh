#!/bin/bash
# Issue 15 item 3: FlashAttention's TMA producer loading V one step behind K, at the stage its readers use it, as
# FlashAttention 3's producer does (benchmarks/experiments/producer_order.py), against the search's pick, beside
# cuDNN SDPA, on ONE H200 (nvidia-h200), one call carrying .gpu-bundle, from the project root:
#   bash benchmarks/results/2026-12-02-h200-producer-order/run.sh COMMIT
set -u
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 540 python -m benchmarks.experiments.producer_order $OUT 2>&1 | grep -v "INFO\|AutoWarpSpecialization" \
  > $OUT/producer_order.log
echo "rc=$? (at $1)"; tail -24 $OUT/producer_order.log | cut -c1-220
