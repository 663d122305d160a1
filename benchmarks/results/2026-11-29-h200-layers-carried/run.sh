#!/bin/bash
# The layers suite's LLaMA-3-8B rows (batch 1 at 512, 777, 2048, 2500, 4096 tokens; 4 x 2048 and 16 x 4096 with
# max-autotune) on ONE H200 at 9269cbb: the GEMMs carried into the next step (carry_gemms) and the cost model's
# stretch of an L2-bound iteration (cost._load_bound_stretch), first measured in whole layers here. One device call,
# carrying .gpu-bundle:
#   bash benchmarks/layers-gpu.sh llama 9269cbb; bash benchmarks/layers-gpu.sh llama-batched 9269cbb
# Then, on any machine:
#   python -m benchmarks merge layers-llama.json layers-llama-batched.json --out layers.json; gzip -9 layers.json
#   python -m benchmarks report layers.json.gz --out-dir layers/
bash benchmarks/layers-gpu.sh "$@"
