#!/bin/bash
# GEMM tiles of up to 160 accumulators a thread (256x160 and swapped 160x256) on ONE H100 (nvidia-h100-x1), one
# device call each carrying .gpu-bundle:
#   at f5762c6 with the tile limit raised and this experiment added (f0c5ccb committed both with the cost factor
#   WIDE_ACCUMULATOR_FACTOR this run measured):
#     python -m benchmarks.experiments.big_tiles $OUT            -> big_tiles.json, big_tiles.log
#   at 85173fb (the fused SwiGLU with gate and up tiles in buffers of their own, reverted by 10226be):
#     python -m benchmarks.experiments.big_tiles $OUT swiglu     -> big_tiles-swiglu.json, big_tiles-swiglu.log
# (the swiglu mode lives in 85173fb's benchmarks/experiments/big_tiles.py only.)
source benchmarks/gpu-env.sh && env_setup
python -m benchmarks.experiments.big_tiles $OUT "$@"
