#!/bin/bash
# The GEMM and attention suites again at ONE commit on ONE H100 (nvidia-h100-x1), after the changes of 2026-11-24 to
# 2026-11-26 (the TMA's measured rate and request cost in the model, deeper L2-bound pipelines, the epilogue tile over
# the stages, 160- and 224-column GEMM tiles), with the harness of issue 12 (outputs NaN-prefilled and every output
# checked, CUDA-graph and queued timing, TileLang's autotuner and role-based warp specialization as peers). Device
# calls back to back on one warm machine (64 MiB carried per call, 600 s per call), in this order:
#   gemm0 COMMIT       carry .gpu-bundle       gemm-core, shard 0/2
#   gemm1 COMMIT       carry .gpu-bundle       gemm-core, shard 1/2
#   peers COMMIT       carry .gpu-peers/a      first half of flash-attn-4 (the bundle stays from the calls before)
#   attention COMMIT   carry .gpu-peers/b      attention-core
# then, here: python -m benchmarks merge --out gemm-core.json gemm-core-0.json gemm-core-1.json.
# TileLang's autotuner tries one pipeline depth, 3, over the template's whole tile space (as in
# 2026-11-23-h100-suites, which this run supersedes for these two suites; the mamba suite was not re-run).
set -u
step=$1
export PT_TVM_GIT_COMMIT=${2:-unknown}
source benchmarks/gpu-env.sh
env_setup || exit 1
run_suite() {  # NAME TOP_K LIMIT_S [SHARD]
  local tag=$1${4:+-${4%/*}}
  timeout $3 python -m benchmarks run --suite $1 ${4:+--shard $4} --tune-top-k $2 --rep-ms 200 \
    --autotune-stages 3 --out $OUT/$tag.json > $OUT/$tag.log 2>&1
  echo "$tag: rc=$? $(python -c "import json;h=json.load(open('$OUT/$tag.json'))['header'];print('wall_s',h.get('wall_s'),'partial',h.get('partial'))")"
  grep -h "geomean" $OUT/$tag.log | cut -c1-200
  grep -c "recompile_limit" $OUT/$tag.log | sed 's/^/dynamo recompile-limit warnings: /'
}
case $step in
  gemm0) nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
         run_suite gemm-core 4 575 0/2 ;;
  gemm1) run_suite gemm-core 4 575 1/2 ;;
  peers) ls .gpu-peers/a | head -3 ;;
  attention) run_suite attention-core 4 575 ;;
esac
