#!/bin/bash
# The order of a causal FlashAttention's query blocks (benchmarks/experiments/causal_order.py), on ONE H200
# (nvidia-h200), from the project root; each step one device call:
#   1. carrying .gpu-bundle:       bash benchmarks/results/2026-11-28-h200-causal-order/run.sh setup
#   2. carrying .gpu-peers/a:      source .gpu-peers/a/peers.sh        (../shared/gpu/make-peers-bundle.sh)
#   3. carrying .gpu-peers/b:      bash benchmarks/results/2026-11-28-h200-causal-order/run.sh experiment COMMIT
#   GPU tests, carrying .gpu-bundle: bash benchmarks/results/2026-11-28-h200-causal-order/run.sh tests COMMIT
# Four experiment runs, each its own machine (steps 2-3 only for the last two: flash-attn-4 as a peer):
#   causal_order-547f02b: the search's best plan in launch order, panels of 2 and 4 block columns, persistent in
#     panels of 2 (JSON header git_commit "5": PT_TVM_GIT_COMMIT was mistyped in that call; the tree was 547f02b);
#   causal_order-cd3eed3: launch order, 2 block columns, panels of 2, 4, 8 heads walked forwards;
#   causal_order-962221d: the same plus the search's pick, with flash-attn-4 (header git_commit "3f43a63": the
#     device's git HEAD, the variable not set; the tree was 962221d, the cost model of 243a26a);
#   causal_order-c7acda1: the same at c7acda1 (the cost model and search space this change lands).
# gpu-tests-72f0548: test_ops_gpu.py::test_transposed_weights and the FlashAttention walks of test_tile_walk.py;
# gpu-tests-c7acda1: every GPU test of test_ops_gpu.py, test_shapes_gpu.py and test_tile_walk.py;
# persistent_attention-461f44b: python -m benchmarks.experiments.persistent_attention $OUT (carrying .gpu-bundle).
# gpu-tests-templates-7878e3a: OUT=$OUT bash benchmarks/gpu-tests.sh 10 230 tests/test_templates_gpu.py -k "flash or attention".
set -u
source benchmarks/gpu-env.sh && env_setup
case $1 in
  setup) ;;
  experiment)
    export PT_TVM_GIT_COMMIT=$2
    timeout 560 python -m benchmarks.experiments.causal_order $OUT 2>&1 | grep -v INFO > $OUT/causal_order.log
    sed -n '/TFLOP\/s over/,/^  /p' $OUT/causal_order.log ;;
  tests)
    export PT_TVM_GIT_COMMIT=$2
    OUT=$OUT bash benchmarks/gpu-tests.sh 12 300 tests/test_ops_gpu.py tests/test_shapes_gpu.py tests/test_tile_walk.py ;;
esac
