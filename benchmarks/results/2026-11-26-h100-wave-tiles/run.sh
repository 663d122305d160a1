#!/bin/bash
# On ONE H100 (nvidia-h100-x1) at 8f91fc4 (GEMM tiles of 160 and 224 columns searched), carrying .gpu-bundle, one
# device call: benchmarks/experiments/depth.py (the LLaMA-3-8B layer's GEMMs at 512-4096 tokens, 2500 added, the
# fused SwiGLU and two square GEMMs: the model's pick at depths 2-6, the best 128x128x64 plan 6 deep, the best
# persistent plan and the best 128x256x64 plan, against cuBLAS; depth.json, depth-swiglu.json, depth.log), then the
# layers suite's LLaMA-3-8B batch-1 step (layers-llama.json, .log, layers-llama/):
source benchmarks/gpu-env.sh && env_setup
python -m benchmarks.experiments.depth $OUT > $OUT/depth.log 2>&1
bash benchmarks/layers-gpu.sh llama 8f91fc4
