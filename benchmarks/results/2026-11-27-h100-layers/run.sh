#!/bin/bash
# The LLaMA-3-8B layer and the Mamba2-1.3B mixer at batch 1 (seqlen 512, 777, 2048, 2500, 4096) at 62b062a on
# ONE H100, two device calls asked as nvidia-h200 (H100s came; the second call's script ran the Mamba2 step
# where the GPU was no H200), each carrying .gpu-bundle and .peers/mamba:
#   bash benchmarks/layers-gpu.sh llama 62b062a
#   bash benchmarks/layers-gpu.sh mamba2 62b062a
# Then, on any machine (layers.json = the two merged):
#   python -m benchmarks merge layers-llama.json layers-mamba2.json --out layers.json; gzip -9 layers.json
#   python -m benchmarks report layers.json.gz --out-dir layers/
bash benchmarks/layers-gpu.sh "$@"
