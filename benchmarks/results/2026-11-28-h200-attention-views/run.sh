#!/bin/bash
# ops.attention on views (benchmarks/experiments/attention_views.py) and the GPU tests of the ops and ragged shapes,
# on ONE H200 (nvidia-h200), each step one device call carrying .gpu-bundle, from the project root:
#   bash benchmarks/results/2026-11-28-h200-attention-views/run.sh tests COMMIT
#   bash benchmarks/results/2026-11-28-h200-attention-views/run.sh experiment COMMIT
set -u
source benchmarks/gpu-env.sh && env_setup
git_commit=$2
case $1 in
  tests)
    OUT=$OUT bash benchmarks/gpu-tests.sh 12 400 tests/test_ops_gpu.py tests/test_shapes_gpu.py
    echo "(at $git_commit)"; grep -h "REL_ERR" $OUT/gpu-tests.txt | sort | uniq | tail -30 ;;
  experiment)
    timeout 500 python -m benchmarks.experiments.attention_views $OUT > $OUT/attention_views.log 2>&1
    echo "rc=$? (at $git_commit)"; grep -v "INFO\|AutoWarpSpecialization" $OUT/attention_views.log | tail -20 ;;
esac
