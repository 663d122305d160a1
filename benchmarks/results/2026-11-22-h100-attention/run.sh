#!/bin/bash
# Issue #6: the attention suite (96 configs) on ONE H100 (nvidia-h100-x1) after the search learned turns
# between consumer warpgroups (Handoff) and every wgmma kept in flight; device calls back to back on one
# warm machine (64 MiB carried per call, 600 s per call):
#   STEP COMMIT [SHARD]   carry
#   tests COMMIT          .gpu-bundle     unpack TileLang; pytest -m gpu
#   peers COMMIT          .gpu-peers/a    first half of flash-attn-4
#   third COMMIT 0/3      .gpu-peers/b    second half; attention configs 0, 3, 6, ...
#   third COMMIT 1/3      (nothing)
#   third COMMIT 2/3      (nothing)
#   rerun COMMIT          (nothing)
#   causal COMMIT         (after tests and peers on a fresh machine) the 48 causal configs again, once
#                         causal attention launched its heaviest query blocks first
# The thirds ran at 4faacff (the first was handed the mistyped commit 3a3f30f; its header was corrected).
# In them the float32 reference of S16384 D64 (32 query heads: 32 GiB of scores per batch entry) ran out
# of the H100's memory, which marked 6 pt-tvm rows invalid; with the reference chunked over heads, those
# 8 configs were run again, every system (`rerun`), and `merge --rerun` put their rows in place.
set -u
step=$1
export PT_TVM_GIT_COMMIT=$2
source benchmarks/gpu-env.sh
env_setup || exit 1
case $step in
  tests) nvidia-smi -L
         timeout 300 python -m pytest -m gpu -q -n 8 tests > $OUT/gpu-tests.log 2>&1; tail -3 $OUT/gpu-tests.log ;;
  peers) ;;
  third) suite attention 4 580 $3 ;;
  rerun) timeout 580 python -m benchmarks run --suite attention --where seq_len=16384,dim=64 --tune-top-k 4 \
           --rep-ms 200 --out $OUT/attention-rerun.json > $OUT/attention-rerun.log 2>&1
         echo "rerun: rc=$?"; grep -h "geomean" $OUT/attention-rerun.log ;;
  causal) timeout 580 python -m benchmarks run --suite attention --where causal=True --tune-top-k 4 \
           --rep-ms 200 --out $OUT/attention-causal.json > $OUT/attention-causal.log 2>&1
         echo "causal: rc=$?"; grep -h "geomean" $OUT/attention-causal.log ;;
esac
