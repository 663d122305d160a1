#!/bin/bash
# The layers at batch 1, 512 and 2500 tokens (LLaMA-3-8B and Mamba2-1.3B, every system) again at COMMIT: the run of
# 2026-12-04-h200-layers-swap-tiles (swapped GEMM tiles at multiples of 64), whose files were lost with that
# session's machine before they were copied, now with the conv's weights in per-tap buffers (ab7e115). One call on
# ONE H200 (nvidia-h200) carrying .gpu-bundle and .peers:
#   bash benchmarks/results/2026-12-05-h200-layers-b1/run.sh COMMIT 420
# then the four configs merged over the current grid as that run.sh says.
bash benchmarks/results/2026-12-04-h200-layers-swap-tiles/run.sh "$@"
