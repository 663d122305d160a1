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

env_setup() {  # the bundles unpack into /tmp once per machine; later calls reuse them
  [ -f .gpu-bundle/setup.sh ] && cp .gpu-bundle/setup.sh /tmp/gpu-setup.sh
  source /tmp/gpu-setup.sh || exit 1
  for d in .gpu-peers/a .gpu-peers/b; do [ -f $d/peers.sh ] && cp $d/peers.sh /tmp/gpu-peers.sh; done
  [ -f /tmp/gpu-peers.sh ] && source /tmp/gpu-peers.sh
  [ -d .peers/mamba ] && { rm -rf /tmp/mamba-peer; cp -r .peers/mamba /tmp/mamba-peer; }
  export PYTHONPATH=$PYTHONPATH:/tmp/mamba-peer
}

suite() {  # NAME TOP_K LIMIT_S [SHARD]
  local tag=$1${4:+-${4%/*}}
  timeout $3 python -m benchmarks run --suite $1 ${4:+--shard $4} --tune-top-k $2 --rep-ms 200 \
    --out $OUT/$tag.json > $OUT/$tag.log 2>&1
  echo "$tag: rc=$? $(python -c "import json;h=json.load(open('$OUT/$tag.json'))['header'];print('wall_s',h['wall_s'],'partial',h.get('partial'))")"
  grep -h "geomean" $OUT/$tag.log | cut -c1-160
}

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
