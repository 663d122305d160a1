#!/bin/bash
# The layers suite on ONE H100 (nvidia-h100-x1), one device call per step, each carrying .gpu-bundle and
# .peers/mamba (benchmarks/layers-gpu.sh; its steps' configs and limits are there):
#   at 2f56600 (first/): bash benchmarks/layers-gpu.sh mamba2 2f56600; bash benchmarks/layers-gpu.sh llama 2f56600
#     (batch 1: the GEMMs of 512-777 tokens lost 1.3-2.7x to cuBLAS: see ../2026-11-24-h100-layer-gemms)
#   at 2f56600: bash benchmarks/layers-gpu.sh llama-batched 2f56600; bash benchmarks/layers-gpu.sh mamba2-batched 2f56600
#     (16 x 4096 did not finish within the call: max-autotune's compile)
#   at 19bd2c9 (19bd2c9/), after the fixes, and at a31c519 (here; GEMM main loops warp-specialized only):
#     bash benchmarks/layers-gpu.sh mamba2 COMMIT; bash benchmarks/layers-gpu.sh llama COMMIT
#   at b6c4304 (Mamba2's state passing chunk by chunk): bash benchmarks/layers-gpu.sh mamba2 b6c4304
#     (renamed layers-mamba2-rerun.json/.log)
# Then, on any machine:
#   python -m benchmarks merge layers-llama.json layers-mamba2.json --rerun layers-mamba2-rerun.json --out layers.json
#   python -m benchmarks report layers.json --out-dir layers/
bash benchmarks/layers-gpu.sh "$@"
