#!/bin/bash
# The layers suite's whole grid on ONE H100 (nvidia-h100-x1) at 6abffd8 (L2-bound GEMM loops priced with L2's queueing: warp-specialized pipelines 4-6 deep), each system settling for
# 500 ms of its own calls before its share of every round (the order rotating): one device call per step, the
# first carrying .gpu-bundle, the Mamba2 ones .peers/mamba (benchmarks/layers-gpu.sh; configs and limits there):
#   bash benchmarks/layers-gpu.sh llama 6abffd8; bash benchmarks/layers-gpu.sh mamba2 6abffd8
#   bash benchmarks/layers-gpu.sh llama-batched 6abffd8; bash benchmarks/layers-gpu.sh mamba2-batched 6abffd8
# Every config finished. Then, on any machine:
#   python -m benchmarks merge layers-llama.json layers-mamba2.json layers-llama-batched.json \
#       layers-mamba2-batched.json --out layers.json
#   python -m benchmarks report layers.json --out-dir layers/
bash benchmarks/layers-gpu.sh "$@"
