#!/bin/bash
# chunk_scan's pipelined loop over heads (benchmarks/experiments/head_loop.py) on ONE H200 (nvidia-h200), one
# device call carrying .gpu-bundle and .peers/mamba, from the project root:
#   bash benchmarks/results/2026-11-28-h200-head-loop/run.sh experiment COMMIT
#   bash benchmarks/results/2026-11-28-h200-head-loop/run.sh tests COMMIT
set -u
source benchmarks/gpu-env.sh && env_setup
git_commit=$2
case $1 in
  experiment)
    timeout 560 python -m benchmarks.experiments.head_loop $OUT > $OUT/head_loop.log 2>&1
    echo "rc=$? (at $git_commit)"; grep -v "INFO\|AutoWarpSpecialization" $OUT/head_loop.log | tail -45 ;;
  tests)
    OUT=$OUT bash benchmarks/gpu-tests.sh 16 420 tests/test_mamba2.py::test_gpu_pt_tvm_plan
    grep -h "REL_ERR" $OUT/gpu-tests.txt | sort | uniq ;;
esac
