#!/bin/bash
# The layers suite's LLaMA-3-8B configs on ONE H100 (nvidia-h100-x1) at 1fe2367 (gemm_rope + flash_attention_qkv,
# 128x224 SwiGLU tiles), each call carrying .gpu-bundle and .peers/mamba, after the GPU tests of the new kernels:
#   OUT=$OUT/t bash benchmarks/gpu-tests.sh 6 150 -k "rope or qkv"      (gpu-tests-1fe2367.txt)
#   bash benchmarks/layers-gpu.sh llama 1fe2367; bash benchmarks/layers-gpu.sh llama-batched 1fe2367
# At 9dde9e9 (gemm_rope's first epilogue): OUT=$OUT/t bash benchmarks/gpu-tests.sh 8 210 -k "gemm or rope or qkv or
#   swiglu or linear" (gpu-tests-9dde9e9.txt); bash benchmarks/layers-gpu.sh llama 9dde9e9 (layers-llama-9dde9e9.json)
# Then, on any machine (the Mamba2 rows from the previous grid, at 10226be):
#   python -m benchmarks merge ../2026-11-26-h100-layers-big-tiles/layers.json.gz --rerun layers-llama.json \
#       --rerun layers-llama-batched.json --out layers.json
#   python -m benchmarks report layers.json --out-dir layers/
bash benchmarks/layers-gpu.sh "$@"
