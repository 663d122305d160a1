#!/bin/bash
# The layers suite on ONE H200 (nvidia-h200), one device call per step, each carrying .gpu-bundle and
# .peers/mamba (benchmarks/layers-gpu.sh; its steps' configs and limits are there):
#   at b910fed (batch 1; layers.json = merge of layers-llama.json and layers-mamba2.json):
#     bash benchmarks/layers-gpu.sh llama b910fed; bash benchmarks/layers-gpu.sh mamba2 b910fed
#     (run as the same benchmarks commands from a scratch script, with the GPU tests of the new op before them)
#   at 3b8f47b (same kernels; only tests changed since b910fed; layers-batched.json):
#     bash benchmarks/layers-gpu.sh llama-batched 3b8f47b; bash benchmarks/layers-gpu.sh mamba2-batched 3b8f47b
#     (Mamba2's 16 x 4096 finished this time, max-autotune included)
#   at 3b8f47b, gpu-tests/: source benchmarks/gpu-env.sh && env_setup && bash benchmarks/gpu-tests.sh 8 420
#     (all 120 GPU tests: 119 passed, 1 skipped)
# Then, on any machine:
#   python -m benchmarks merge layers-llama.json layers-mamba2.json --out layers.json
#   python -m benchmarks merge layers-llama-batched.json layers-mamba2-batched.json --out layers-batched.json
#   python -m benchmarks report layers.json --out-dir layers/; python -m benchmarks report layers-batched.json --out-dir layers-batched/
bash benchmarks/layers-gpu.sh "$@"
