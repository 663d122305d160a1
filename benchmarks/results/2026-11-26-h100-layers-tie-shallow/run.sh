#!/bin/bash
# The layers suite on ONE H100 (nvidia-h100-x1) at 00e5767, the first version of the price-tie rule (ties toward the
# shallower pipeline everywhere; TMA_LOADED_CYCLES 1850, no in-flight cap), not kept: its Mamba2 projections ran
# 5-11% slower (3158e15 changed the rule). Kept for the figures docs/NOTES-parity quotes from it. Three steps, each
# carrying .gpu-bundle (the Mamba2 one .peers/mamba); Mamba2's batched configs were not run:
#   bash benchmarks/layers-gpu.sh llama 00e5767
#   bash benchmarks/layers-gpu.sh llama-batched 00e5767; bash benchmarks/layers-gpu.sh mamba2 00e5767
# Then, on any machine:
#   python -m benchmarks merge layers-llama.json layers-mamba2.json layers-llama-batched.json --out layers.json
#   python -m benchmarks report layers.json --out-dir layers/
bash benchmarks/layers-gpu.sh "$@"
