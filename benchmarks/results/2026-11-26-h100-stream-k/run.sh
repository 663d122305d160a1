#!/bin/bash
# Stream-K splits on ONE H100 (nvidia-h100-x1) at f16763a, one device call carrying .gpu-bundle: the GPU tests of
# tests/test_stream_k.py (every output of the best-priced split of five GEMM, GEMM + row sum and SwiGLU problems,
# ragged ones included, three launches each), then the experiment (the search with SearchSpace(stream_k=True): its
# pick, the best plan of whole tiles and the best split, checked and timed against cuBLAS).
source benchmarks/gpu-env.sh && env_setup
timeout 170 python -m pytest -m gpu -q -rA -p no:cacheprovider tests/test_stream_k.py > $OUT/gpu-tests.log 2>&1
echo tests rc=$?
timeout 220 python -m benchmarks.experiments.stream_k $OUT > $OUT/stream_k.log 2>&1
echo exp rc=$?
