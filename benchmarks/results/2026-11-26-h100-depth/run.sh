#!/bin/bash
# The model's GEMM and SwiGLU plans for the LLaMA-3-8B layer at pipeline depths 2-6, and the best 128x128x64 plan
# 6 deep, against cuBLAS, on ONE H100 (nvidia-h100-x1) at 6eac469, carrying .gpu-bundle
# (benchmarks/experiments/depth.py; depth.json, depth-swiglu.json, depth.log)
source benchmarks/gpu-env.sh && env_setup
python -m benchmarks.experiments.depth $OUT/depth
