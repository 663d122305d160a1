#!/bin/bash
# One device call on ONE H200 (nvidia-h200), carrying .gpu-bundle, at d07f1fb (the JSON headers read ebc4033 and
# dirty: the experiment does not take PT_TVM_GIT_COMMIT and the device's copy reported the base commit):
#   source benchmarks/gpu-env.sh && env_setup && python -m benchmarks.experiments.layer_gemms $OUT
# The layers suite's GEMMs as pt_tvm.ops.linear calls them (weight [N, K], trans_B) at 512, 777, 2048 and 4096
# tokens (LLaMA-3-8B's qkv, o, gate_up, down) and 512 and 2500 (Mamba2-1.3B's in and out), the six plans tuning
# would measure (tune.diverse_top, top1 = the model's pick) against cuBLAS (F.linear), inputs standard normal.
# Found: the cost model's first pick 3.9% behind the fastest measured plan in geometric mean (18.9% worst; 5.1%
# with the TMA at 128 B/clk and no request cost); pt-tvm's picks 0.70-0.95x cuBLAS at 512-777 tokens and
# 0.84-0.95x at 2048-4096 (the layers' own profiles, with the layers' data, show the 2048-4096 GEMMs within 3% of
# cuBLAS: ../2026-11-26-h200-layers).
# layer_gemms-256x192.json.gz and its .log: the same call on the tree of 26faefb before two of its changes (the template's limit
# of 128x256 accumulators, the cuBLAS peer's F.linear), with SwiGLU's first kernel (two accumulators): the model's pick was a 256x192 tile on 9 of 20 configs, measured 1.2-1.4x slower than
# predicted and than 128x256; its cuBLAS column failed (the peer multiplied B untransposed; F.linear since).
source benchmarks/gpu-env.sh && env_setup && nvidia-smi -L
python -m benchmarks.experiments.layer_gemms $OUT 2>&1 | grep -v "TileLang:tilelang.jit.kernel:INFO" > $OUT/layer_gemms.log
