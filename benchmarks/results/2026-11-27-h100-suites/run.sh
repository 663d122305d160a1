#!/bin/bash
# Issue 15's suites at ONE commit on ONE H100 (nvidia-h100-x1): gemm-core (two shards, merged after) and
# attention-core (two shards), the issue-12 harness (NaN-prefilled outputs, every output checked, CUDA-graph and
# queued timing, TileLang's default schedule and role-based warp specialization as peers), WITHOUT TileLang's
# autotuner as a peer: a first try at 858faf1 with it timed out after 3 of gemm-core shard 0's 6 configs (the
# autotuner compiled and timed 60 tile configurations a GEMM config, about 2 minutes each). Device calls back
# to back on one warm machine (64 MiB carried per call, 600 s per call), in this order:
#   gemm0 COMMIT       carry .gpu-bundle         gemm-core, shard 0/2
#   gemm1 COMMIT       carry .gpu-peers/a        gemm-core, shard 1/2 (and the first half of flash-attn-4)
#   attention0 COMMIT  carry .gpu-peers/b        attention-core, shard 0/2
#   attention1 COMMIT  (nothing)                 attention-core, shard 1/2
# each as: source .gpu-bundle/setup.sh; bash benchmarks/results/2026-11-27-h100-suites/run.sh STEP COMMIT
# (the first call's setup.sh unpacks the bundle; later calls find it in /tmp). Then, here:
# python -m benchmarks merge --out gemm-core.json gemm-core-0.json gemm-core-1.json (attention-core likewise).
set -u
step=$1
export PT_TVM_GIT_COMMIT=${2:-unknown}
source benchmarks/gpu-env.sh
env_setup || exit 1
run_suite() {  # NAME TOP_K LIMIT_S SHARD SYSTEMS
  local tag=$1-${4%/*}
  timeout $3 python -m benchmarks run --suite $1 --shard $4 --tune-top-k $2 --rep-ms 200 \
    --systems $5 --out $OUT/$tag.json > $OUT/$tag.log 2>&1
  echo "$tag: rc=$? $(python -c "import json;h=json.load(open('$OUT/$tag.json'))['header'];print('wall_s',h.get('wall_s'),'partial',h.get('partial'))")"
  grep -h "geomean" $OUT/$tag.log | cut -c1-200
}
GEMM=pt-tvm,pt-tvm-model,tilelang-auto,tilelang-ws,cublas,torch-compile
ATTENTION=pt-tvm,pt-tvm-model,tilelang-auto,tilelang-ws,cudnn-sdpa,fa2-sdpa,fa3,torch-compile
case $step in
  gemm0) nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
      run_suite gemm-core 4 560 0/2 $GEMM ;;
  gemm1) run_suite gemm-core 4 560 1/2 $GEMM ;;
  attention0) run_suite attention-core 4 560 0/2 $ATTENTION ;;
  attention1) run_suite attention-core 4 560 1/2 $ATTENTION ;;
esac
# What ran: gemm0 and gemm1 whole (one machine). The machine went back at its 30-minute hold; on a second one
# every GPU test (gpu-tests-all-76fd01b.txt: OUT=$OUT/t bash benchmarks/gpu-tests.sh 15 470), then .gpu-peers/a,
# then .gpu-peers/b and attention-core unsharded in one call with the device time left:
#   timeout 420 python -m benchmarks run --suite attention-core --tune-top-k 4 --rep-ms 200 \
#     --systems $ATTENTION --out $OUT/attention-core.json
# PARTIAL: 7 of 26 configs (about 55 s a config: eight systems, each settled 500 ms before each of 5 rounds,
# torch-compile compiled afresh per config, pt-tvm's search, build and tuning); attention1 never ran.
