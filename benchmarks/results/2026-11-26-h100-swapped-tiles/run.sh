#!/bin/bash
# Swapped GEMM tiles and the reworked stream-K split on ONE H100 (nvidia-h100-x1) at 659c4d0 (the JSON's git_commit_note
# says why its header was corrected), one device call carrying .gpu-bundle: the GPU tests of tests/test_stream_k.py (every
# output of the best-priced split of five GEMM, GEMM + row sum and SwiGLU problems, three launches each) and the
# gemm rows of tests/test_shapes_gpu.py (two swapped tiles among them), then the experiment (the search with
# SearchSpace(stream_k=True): its pick, the best plain plan, the best swapped tile and the best split, each
# checked and timed against cuBLAS).
source benchmarks/gpu-env.sh && env_setup
timeout 200 python -m pytest -m gpu -q -rA -p no:cacheprovider tests/test_stream_k.py tests/test_shapes_gpu.py \
  -k "stream_k or gemm" > $OUT/gpu-tests.log 2>&1
echo tests rc=$?
timeout 340 python -m benchmarks.experiments.stream_k $OUT > $OUT/stream_k.log 2>&1
echo exp rc=$?
# Then every GPU test at 57e7ce1's tree (one call; gpu-tests-all.txt: 135 tests over 8 processes, 430 s each; 121
# passed, 4 failed, 9 not reached before the limit):
#   source benchmarks/gpu-env.sh && env_setup && bash benchmarks/gpu-tests.sh 8 430
# and, at 5280e8e (test_epilogue_tile_over_the_stages searching with the L2-bound in-flight limit lifted: the 4
# failures were that test finding no plan, as at 12ffe7e), the failed and unreached tests' groups (gpu-tests-rerun.txt:
# 34 passed):
#   bash benchmarks/gpu-tests.sh 8 330 -k "epilogue_tile_over_the_stages or nan_prefill or walked_plans_compute or \
#     row_split_plans_compute or measure_one_on_the_gpu or searched_plan"
