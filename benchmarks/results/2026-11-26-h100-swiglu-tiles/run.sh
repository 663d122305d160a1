#!/bin/bash
# The fused SwiGLU kernel's 128x224 tiles on ONE H100 (nvidia-h100-x1) at ec71184, one call carrying .gpu-bundle:
#   source benchmarks/gpu-env.sh && env_setup && export PT_TVM_GIT_COMMIT=ec71184
#   OUT=$OUT/t bash benchmarks/gpu-tests.sh 4 300 -k gemm_swiglu        (gpu-tests.txt: 7 passed)
#   python -m benchmarks.experiments.swiglu_tiles $OUT                  (swiglu_tiles.json)
# and in a second call: bash benchmarks/layers-gpu.sh llama ec71184      (layers-llama-ec71184.json)
python -m benchmarks.experiments.swiglu_tiles "$1"
