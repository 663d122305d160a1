#!/bin/bash
# Issue 15 item 3: FlashAttention's two gemms in either order in a consumer's loop step (Q K^T first, as
# FlashAttention 3, or P V first), at the attention-core configs of 4096 tokens (benchmarks/experiments/gemm_order.py),
# on ONE H200 (nvidia-h200), one call carrying .gpu-bundle, from the project root:
#   bash benchmarks/results/2026-11-29-h200-gemm-order/run.sh COMMIT
set -u
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1
timeout 540 python -m benchmarks.experiments.gemm_order $OUT 2>&1 | grep -v "INFO\|AutoWarpSpecialization" \
  > $OUT/gemm_order.log
echo "rc=$? (at $1)"; tail -24 $OUT/gemm_order.log | cut -c1-220
