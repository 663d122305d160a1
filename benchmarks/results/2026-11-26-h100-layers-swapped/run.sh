#!/bin/bash
# The LLaMA-3-8B layer at batch 1 (512, 777, 2048, 2500, 4096 tokens) on ONE H100 (nvidia-h100-x1) at f9315bf: the
# gemm template's swapped tiles (swap_ab: 777 tokens as 4 x 208 on the tensor core's N side) in the default search;
# one device call carrying .gpu-bundle:
#   bash benchmarks/layers-gpu.sh llama f9315bf
# Then, on any machine: python -m benchmarks report layers-llama.json --out-dir layers-llama/
bash benchmarks/layers-gpu.sh llama "$@"
