#!/bin/bash
# The layers suite at f01c7c1 (gemm_swiglu's swapped tiles) on ONE H200 (nvidia-h200), four device calls on one warm
# machine, each carrying .gpu-bundle (and .peers/mamba for the Mamba2 steps); the first call ran the ten GPU tests
# of gemm_swiglu before its step (gpu-tests.txt: 10 passed):
#   OUT=$OUT bash benchmarks/gpu-tests.sh 10 240 <the ten test ids in gpu-tests.txt>
#   bash benchmarks/layers-gpu.sh llama f01c7c1;  bash benchmarks/layers-gpu.sh llama-batched f01c7c1
#   bash benchmarks/layers-gpu.sh mamba2 f01c7c1; bash benchmarks/layers-gpu.sh mamba2-batched f01c7c1
# Then, on any machine (layers.json = the four merged):
#   python -m benchmarks merge layers-llama.json layers-llama-batched.json layers-mamba2.json \
#       layers-mamba2-batched.json --out layers.json; gzip -9 layers.json
#   python -m benchmarks report layers.json.gz --out-dir layers/
bash benchmarks/layers-gpu.sh "$@"
