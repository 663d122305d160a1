#!/bin/bash
# The LLaMA-3-8B layer at batch 1 (512, 777, 2048, 2500, 4096 tokens) on ONE H100 (nvidia-h100-x1) at f9315bf: the
# gemm template's swapped tiles (swap_ab: 777 tokens as 4 x 208 on the tensor core's N side) in the default search;
# one device call carrying .gpu-bundle; then the Mamba2-1.3B mixer at batch 1 at 57e7ce1 (the same kernels and
# search; results and docs committed between), a second call carrying .gpu-bundle and .peers/mamba:
#   bash benchmarks/layers-gpu.sh llama f9315bf; bash benchmarks/layers-gpu.sh mamba2 57e7ce1
# Then, on any machine: python -m benchmarks report layers-STEP.json --out-dir layers-STEP/
bash benchmarks/layers-gpu.sh "$@"
