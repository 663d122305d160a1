#!/bin/bash
# Why the LLaMA layer's CUDA-graph time was 12-15% over its kernels' sum (profiled apart) on ONE H100
# (nvidia-h100-x1), at b19e98d: each system's graph replayed alone for 2 s with nvidia-smi sampling the clocks,
# its kernels profiled inside the graph and apart, then after a second idle (benchmarks/experiments/graph_gap.py).
# Carrying .gpu-bundle:
source benchmarks/gpu-env.sh && env_setup && unset TORCHINDUCTOR_COMPILE_THREADS
python -m benchmarks.experiments.graph_gap $OUT 4096 512
