#!/bin/bash
# The cost model's split count and combine form against the measured best (issue 16: "where the split choice of
# the cost model and the measured best differ"), at COMMIT on one H200, with the decode kernels of dynamic sizes:
# `python -m benchmarks.decode --only sweep` over its four configs (batch 1 x 64k and 32 x 16k and 128 x 4k
# contiguous, batch 1 x 16k paged; LLaMA-3-8B's heads, q_len 1): for each split count and combine form the
# best-priced plan, compiled, checked against float32 and timed from CUDA graphs in interleaved rounds.
# One device call (the session's last 348 s): bash benchmarks/results/2026-11-30-h200-decode-splits/run.sh COMMIT
set -u
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 240 python -u -m benchmarks.decode --out $OUT --only sweep --workers 14 2>&1 | grep -v " INFO \|:INFO\]" \
  | tee $OUT/sweep.log | grep "splits\|copy\|done\|Error"
# Ran 2026-11-30 with COMMIT 0d9a185 (the kernels are 8147786's: 0d9a185 changed charts alone): one config of four
# finished inside the 240 s (batch 1 x 64k, contiguous; splits.json): per split count 1-32, the best-priced
# warp-specialized plan with the combine kernel and the software pipeline with the fused one, every output 2.2e-3 to
# 2.3e-3 from float32. Fastest: 32 splits fused (68.8 us), then 16 with the kernel (70.3) and 16 fused (71.1); the
# model ranks 16 with the kernel first among these (59.8 us) and 32 fused second (60.7); its overall pick, 32 splits
# of a software pipeline with the combine kernel, is not among the sweep's plans.
