#!/bin/bash
# The GEMM k-loop's gemms carried into the next step (ExecutionPlan.carry_gemms, passes/carry.py), on ONE H200
# (nvidia-h200), each call carrying .gpu-bundle, from the project root; every output of every kernel checked
# against float32 (relative error 2.1e-4) before timing, cuBLAS in the same rounds.
#   hook-ab25a9e/   before the plan could say it: the search's picks and best other-block_K plans, their emitted CUDA
#                   rewritten by a post-processing hook (git show ab25a9e:benchmarks/experiments/gemm_inflight.py)
#   plan-69f4ca1/   the plan option (all plans, the last step's group waited for after the loop), the experiment as
#                   committed since 69f4ca1; gpu-tests.txt.gz: every GPU test at 69f4ca1 (8 failed: six launched
#                   carried kernels wrong, two test bugs)
#   peeled-d49f4e0/ the last step peeled into the loop's tail (what fixed the launched kernels); gpu-tests.txt.gz:
#                   every GPU test at d49f4e0 (182 passed, 6 not reached), gpu-tests-rest.txt: those 6 (4 passed, 2
#                   hung: the lm-head row-group GEMMs)
#   peel-c6e6d24/   the persistent picks waiting, peeled and unpeeled in one process
# After it HEAD carries persistent plans only, unpeeled (69f4ca1's loop): see docs/NOTES-parity.md.
set -u
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1
case $2 in
  inflight) timeout 540 python -u -m benchmarks.experiments.gemm_inflight $OUT 2>&1 | grep -v INFO | tee $OUT/gemm_inflight.log | tail -32 ;;
  tests) OUT=$OUT bash benchmarks/gpu-tests.sh 16 470 2>&1 | tail -25 ;;
  peel) timeout 200 python -u -m benchmarks.experiments.carry_peel $OUT 2>&1 | grep -v INFO | tee $OUT/carry_peel.log | tail -5 ;;
esac
