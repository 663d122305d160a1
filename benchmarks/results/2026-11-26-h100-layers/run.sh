#!/bin/bash
# The layers suite's whole grid on ONE H100 (nvidia-h100-x1) at 72b7c69, one device call per step, each carrying
# .gpu-bundle and .peers/mamba (benchmarks/layers-gpu.sh; its steps' configs and limits are there):
#   bash benchmarks/layers-gpu.sh llama 72b7c69; bash benchmarks/layers-gpu.sh mamba2 72b7c69
#   bash benchmarks/layers-gpu.sh llama-batched 72b7c69; bash benchmarks/layers-gpu.sh mamba2-batched 72b7c69
# Every config finished (Mamba2's 16 x 4096 with max-autotune included). Then, on any machine:
#   python -m benchmarks merge layers-llama.json layers-mamba2.json layers-llama-batched.json \
#       layers-mamba2-batched.json --out layers.json
#   python -m benchmarks report layers.json --out-dir layers/
bash benchmarks/layers-gpu.sh "$@"
