#!/bin/bash
# One device call on ONE H100 (nvidia-h100-x1), carrying .gpu-bundle, at 5307363:
#   source benchmarks/gpu-env.sh && env_setup && python -m benchmarks.experiments.layer_gemms $OUT
# The GEMMs of the layers suite at 512 and 777 tokens (LLaMA-3-8B's four projections) and 512 and 2500 tokens
# (Mamba2-1.3B's two), the six plans tuning would measure (tune.diverse_top, top1 = the model's pick) against
# cuBLAS. Found: the model's pick was a software pipeline of one stage on 4 of 12 configs, measured 1.8-2.6x its
# prediction and 1.6-2.7x the fastest plan (fixed after: pt_tvm.space._SYNC_COPIES_LOSE, cost.CP_ASYNC_CYCLES).
source benchmarks/gpu-env.sh && env_setup && nvidia-smi -L
python -m benchmarks.experiments.layer_gemms $OUT 2>&1 | grep -v "TileLang:tilelang.jit.kernel:INFO" > $OUT/layer_gemms.log
