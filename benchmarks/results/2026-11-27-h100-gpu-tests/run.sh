#!/bin/bash
# Every GPU test at 9717ae5 on ONE H100 (asked as nvidia-h200; an H100 came), 32 processes side by side for 450 s,
# one device call carrying .gpu-bundle and .peers/mamba:
#   source benchmarks/gpu-env.sh && env_setup && OUT=$OUT bash benchmarks/gpu-tests.sh 32 450
# then the two tests queued behind the slow paged software-pipelined decode test, by id (gpu-tests-rest-*.txt):
#   OUT=$OUT bash benchmarks/gpu-tests.sh 2 300 \
#     "tests/test_stream_k.py::test_stream_k_matches_the_reference_launch_after_launch[gemm_swiglu-4]" \
#     "tests/test_templates_gpu.py::test_epilogue_tile_over_the_stages[gemm_swiglu-3]"
source benchmarks/gpu-env.sh && env_setup && OUT=$OUT bash benchmarks/gpu-tests.sh "$@"
