#!/bin/bash
# The full suites (gemm, mamba, attention) on ONE H200 (nvidia-h200), in device calls made back to back on
# the same warm machine (what travels per call is capped at 64 MiB, so the TileLang bundle and the two
# halves of the flash-attn-4 bundle come in separate calls; a call lasts at most 600 s):
#   call1 COMMIT   carry .gpu-bundle .peers     smoke (harness check), gemm
#   call2 COMMIT   carry .gpu-peers/a           mamba; pytest -m gpu
#   call3 COMMIT   carry .gpu-peers/b           attention, first half
#   call4 COMMIT   carry nothing                attention, second half
# At fcf0a67 call3 made no progress in 580 s (fa3's on-disk cache on, its warm-ups in the workers); the
# attention was run again at the next commit on a fresh machine, in thirds: bundle, call2 (peers only), call3..5.
# The mamba rows of call2 had a racy chunk_scan plan (relative error 7e-3, under the tolerance of then); after
# the fix, mamba COMMIT replaced them.
# One process per suite (or half) on the one GPU: compiles overlap the timing (benchmarks/precompile.py),
# 15 compile workers on the machine's 16 cores. `merge` joins the attention halves.
set -u
step=$1
export PT_TVM_GIT_COMMIT=$2 TORCHINDUCTOR_COMPILE_THREADS=1

source benchmarks/gpu-env.sh  # env_setup and suite (they were spelled out here when this run was made)

case $step in
  call1) env_setup; nvidia-smi -L; suite smoke 4 120; suite gemm 4 420 ;;
  call2) env_setup; [ -n "${3:-}" ] && exit 0  # call2 COMMIT peers: the flash-attn-4 half alone
         suite mamba 8 420
         timeout 150 python -m pytest -m gpu -q -n 8 tests > $OUT/gpu-tests.log 2>&1; tail -2 $OUT/gpu-tests.log ;;
  bundle) env_setup ;;
  mamba) env_setup; suite mamba 8 420  # at the commit after the chunk_scan race fix, carry .gpu-bundle .peers
         timeout 150 python -m pytest -m gpu -q -n 8 tests > $OUT/gpu-tests.log 2>&1; tail -2 $OUT/gpu-tests.log ;;
  call3) env_setup; suite attention 4 580 ${3:-0/2} ;;  # at bfbab3a: call3 COMMIT 0/3, call4 COMMIT 1/3, call5 COMMIT 2/3
  call4) env_setup; suite attention 4 580 ${3:-1/2} ;;
  call5) env_setup; suite attention 4 580 ${3:-2/3} ;;
esac
