#!/bin/bash
# A hand-written 2-CTA cluster GEMM probe with and without TMA multicast of the shared A tile, against cuBLAS and
# pt-tvm's linear, on ONE H100 (nvidia-h100-x1), carrying .gpu-bundle
# (benchmarks/experiments/multicast_gemm.py):
#   268dc03: 128x256x64 tiles, two consumer warpgroups, one wgmma batch in flight  -> multicast_gemm.json
#   13ddd67: 128x128x64 tiles, one consumer warpgroup, wgmma waited every stage    -> 128x128-one-consumer/
source benchmarks/gpu-env.sh && env_setup
python -m benchmarks.experiments.multicast_gemm $OUT
