#!/bin/bash
# The decode grid's configs of the bandwidth bar (kv_len >= 16384) at q_len 1, the model's pick alone
# (pt-tvm-model: no tuning), with the device-to-device copy peak, on ONE H200 (nvidia-h200), one call carrying
# .gpu-bundle, from the project root. Cut by its 540 s limit after 13 of the 36 configs (the compiles; LLaMA-3-8B's
# heads, contiguous then paged, in grid order):
#   bash benchmarks/results/2026-11-29-h200-decode-bandwidth/run.sh 49fb814
set -u
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1
mkdir -p $OUT/bw
timeout 540 python -u -m benchmarks.decode --out $OUT/bw --all --kv-at-least 16384 --q-lens 1 --systems pt-tvm-model \
  --only suite --rep-ms 200 > $OUT/bw/suite.log 2>&1
