#!/bin/bash
# The full suites (attention, gemm, mamba) on one nvidia-h200-x2 machine (2 H200s), in four device calls
# made back to back on the same warm machine (what travels per call is capped at 64 MiB, so the TileLang
# bundle and the two halves of the flash-attn-4 bundle come in separate calls):
#   call1 COMMIT   carry .gpu-bundle .peers      gemm and mamba, two shards each, one per GPU
#   call2 COMMIT   carry .gpu-peers/a            first half of flash-attn-4
#   call3 COMMIT   carry .gpu-peers/b            second half; attention shards 0/6 and 1/6
#   call4 COMMIT   carry nothing                 attention shards 2/6 and 3/6
#   call5 COMMIT   carry nothing                 attention shards 4/6 and 5/6
# Every shard is one process on one GPU (all systems of a config timed there); `merge` joins them.
set -u
step=$1
export PT_TVM_GIT_COMMIT=$2 TORCHINDUCTOR_COMPILE_THREADS=1

env_setup() {  # the bundles unpack into /tmp once per machine; later calls reuse them
  [ -f .gpu-bundle/setup.sh ] && cp .gpu-bundle/setup.sh /tmp/gpu-setup.sh
  source /tmp/gpu-setup.sh || exit 1
  for d in .gpu-peers/a .gpu-peers/b; do [ -f $d/peers.sh ] && cp $d/peers.sh /tmp/gpu-peers.sh; done
  [ -f /tmp/gpu-peers.sh ] && source /tmp/gpu-peers.sh
  [ -d .peers/mamba ] && { rm -rf /tmp/mamba-peer; cp -r .peers/mamba /tmp/mamba-peer; }
  export PYTHONPATH=$PYTHONPATH:/tmp/mamba-peer
}

shards() {  # SUITE N FIRST TOP_K LIMIT_S: shards FIRST and FIRST+1 of N, on GPUs 0 and 1 at once
  for g in 0 1; do
    i=$(($3 + g))
    CUDA_VISIBLE_DEVICES=$g timeout $5 python -m benchmarks run --suite $1 --shard $i/$2 --tune-top-k $4 \
      --rep-ms 300 --workers 16 --out $OUT/$1-$i.json > $OUT/$1-$i.log 2>&1 &
  done
  wait
  grep -h "geomean\|wrote\|Error" $OUT/$1-*.log | cut -c1-200
}

case $step in
  call1) env_setup; nvidia-smi -L; shards gemm 2 0 4 290; shards mamba 2 0 8 230 ;;
  call2) env_setup ;;
  call3) env_setup; shards attention 6 0 4 440 ;;
  call4) env_setup; shards attention 6 2 4 520 ;;
  call5) env_setup; shards attention 6 4 4 520 ;;
esac
