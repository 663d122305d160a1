#!/bin/bash
# Issue #6: the attention suite (96 configs) on ONE H100 (nvidia-h100-x1) after the search learned turns
# between consumer warpgroups (Handoff) and every wgmma kept in flight; device calls back to back on one
# warm machine (64 MiB carried per call, 600 s per call):
#   STEP COMMIT    carry
#   tests          .gpu-bundle     unpack TileLang; pytest -m gpu
#   peers          .gpu-peers/a    first half of flash-attn-4
#   third 0/3      .gpu-peers/b    second half; attention configs 0, 3, 6, ...
#   third 1/3      (nothing)
#   third 2/3      (nothing)
set -u
step=$1
export PT_TVM_GIT_COMMIT=$2
source benchmarks/gpu-env.sh
env_setup || exit 1
case $step in
  tests) nvidia-smi -L
         timeout 300 python -m pytest -m gpu -q -s -n 8 tests > $OUT/gpu-tests.log 2>&1; tail -3 $OUT/gpu-tests.log
         grep -h "REL_ERR fa_turns" $OUT/gpu-tests.log ;;
  peers) ;;
  third) suite attention 4 580 $3 ;;
esac
