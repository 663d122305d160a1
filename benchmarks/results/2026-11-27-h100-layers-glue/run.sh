#!/bin/bash
# The LLaMA-3-8B layer and the Mamba2-1.3B mixer at batch 1 (seqlen 512, 777, 2048, 2500, 4096) at adf662d (after
# gemm_swiglu's swapped tiles and the eager SSD forward's compiled glue) on ONE H100 (asked as nvidia-h200; H100s
# came), two device calls on one warm machine, each carrying .gpu-bundle and .peers/mamba:
#   bash benchmarks/layers-gpu.sh llama adf662d
#   bash benchmarks/layers-gpu.sh mamba2 adf662d
# Then, on any machine (layers.json = the two merged):
#   python -m benchmarks merge layers-llama.json layers-mamba2.json --out layers.json; gzip -9 layers.json
#   python -m benchmarks report layers.json.gz --out-dir layers/
bash benchmarks/layers-gpu.sh "$@"
