#!/bin/bash
# One device call on ONE H100 (nvidia-h100-x1), carrying .gpu-bundle, at 5307363:
#   source benchmarks/gpu-env.sh && env_setup && python -m benchmarks.experiments.layer_gemms $OUT
# The GEMMs of the layers suite at 512 and 777 tokens (LLaMA-3-8B's four projections) and 512 and 2500 tokens
# (Mamba2-1.3B's two), the six plans tuning would measure (tune.diverse_top, top1 = the model's pick) against
# cuBLAS. Found: the model's pick was a software pipeline of one stage on 4 of 12 configs, measured 1.8-2.6x its
# prediction and 1.6-2.7x the fastest plan (fixed after: pt_tvm.space.base_plans, cost.CP_ASYNC_CYCLES).
source benchmarks/gpu-env.sh && env_setup && nvidia-smi -L
python -m benchmarks.experiments.layer_gemms $OUT 2>&1 | grep -v "TileLang:tilelang.jit.kernel:INFO" > $OUT/layer_gemms.log
# layer_gemms-block_N192.json and block_N192-layers/: the same experiment and the layers' batch-1 steps
# (bash benchmarks/layers-gpu.sh llama|mamba2 ...) at 9d5b3ab with block_N 192 added to the GEMM template's tile
# space (templates/gemm.py _TILE_SPACE, with block_M 64 or 128; templates/base.py's power-of-two check letting a
# value the tile space lists through). The best 128x192 plans ran 3-13% faster than the best plans without them
# (LLaMA qkv at 512 tokens 0.042 against 0.048 ms), but the model's picks among them (block_K 32 where 64 was
# faster, software pipelines where warp specialization was) left the layers no better: LLaMA-3-8B pt-tvm+compile
# 0.88x torch-compile (as at 19bd2c9), Mamba2 0.93x mamba-ssm (0.98x at 19bd2c9). Not merged.
