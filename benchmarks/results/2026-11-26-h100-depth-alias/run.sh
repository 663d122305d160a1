#!/bin/bash
# On ONE H100 (nvidia-h100-x1), carrying .gpu-bundle:
# 1. at fcb2b69 (non-persistent warp-specialized plans lay the epilogue tile over the loop's stages, TileLang's
#    aggressive shared-memory merge, so 128x256 tiles take a 4th stage): the GPU tests of the reused plans and the
#    searched plans (gpu-tests-reused.txt), then benchmarks/experiments/depth.py: the model's GEMM and SwiGLU plans
#    for the LLaMA-3-8B layer and two square GEMMs at depths 2-6, the best 128x128x64 plan 6 deep and the best
#    persistent plan, against cuBLAS (depth.json, depth-swiglu.json, depth.log; the first call wrote to a missing
#    folder and was re-run):
#      source benchmarks/gpu-env.sh && env_setup && bash benchmarks/gpu-tests.sh 8 200 -k "epilogue_tile or searched_plan"
#      python -m benchmarks.experiments.depth $OUT
# 2. at 00e5767: every GPU test (gpu-tests-all.txt):
#      source benchmarks/gpu-env.sh && env_setup && bash benchmarks/gpu-tests.sh 8 420
source benchmarks/gpu-env.sh && env_setup
python -m benchmarks.experiments.depth $OUT
