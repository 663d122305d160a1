#!/bin/bash
# Issue 12's re-run at ONE commit on ONE H100 (nvidia-h100-x1): the routine suites (mamba, gemm-core,
# attention-core) with the harness of issue 12 (outputs NaN-prefilled and every output checked, CUDA-graph and
# queued timing, TileLang's autotuner and role-based warp specialization as peers), then the GPU tests of the
# templates, ops, shapes, decode kernels and Mamba2 ops. Device calls back to back on one warm machine (64 MiB
# carried per call, 600 s per call), in this order:
#   mamba COMMIT       carry .gpu-bundle .peers/mamba   the mamba suite, then the GPU tests (five processes)
#   gemm COMMIT        (nothing)                        gemm-core
#   peers COMMIT       carry .gpu-peers/a               first half of flash-attn-4
#   attention COMMIT   carry .gpu-peers/b               attention-core
# TileLang's autotuner tries one pipeline depth, 3, over the template's whole tile space (the grids with every
# depth do not fit one session's 30 device minutes). Supersedes 2026-11-23-h100-core (the same suites at
# d9542d7, two of them cut off by the call's limit).
# What ran, at 428cb8d on one H100 80GB HBM3 (2026-11-23): `mamba` (the suite stopped by its 310 s limit in
# chunk_scan's last config, batch 64 seqlen 4096: 9 of 10 configs; then the GPU tests, 220 s each: templates 21
# passed, Mamba2 ops 6 passed and 6 xfailed, decode 5, ops 9 and shapes 14 passed with no failure before the
# limit), `gemm` (stopped by its 560 s limit in GEMM + row sum's second config: 10 of 12; the LLaMA-70B
# projections took about 2 minutes each with TileLang's autotuner), `peers`, `attention` (26 of 26, 367 s).
# 1,598 of the session's 1,800 device seconds; too little was left to start a machine for the last three configs.
set -u
step=$1
export PT_TVM_GIT_COMMIT=${2:-unknown}
source benchmarks/gpu-env.sh
env_setup || exit 1
run_suite() {  # NAME TOP_K LIMIT_S
  timeout $3 python -m benchmarks run --suite $1 --tune-top-k $2 --rep-ms 200 --autotune-stages 3 \
    --out $OUT/$1.json > $OUT/$1.log 2>&1
  echo "$1: rc=$? $(python -c "import json;h=json.load(open('$OUT/$1.json'))['header'];print('wall_s',h.get('wall_s'),'partial',h.get('partial'))")"
  grep -h "geomean" $OUT/$1.log | cut -c1-200
}
gpu_tests() {  # LIMIT_S: one pytest process per file, side by side (compiles dominate; 16 cores)
  mkdir -p $OUT/gpu-tests
  for f in test_templates_gpu test_ops_gpu test_shapes_gpu test_decode test_mamba2; do
    timeout $1 python -m pytest -q -m gpu -p no:cacheprovider tests/$f.py > $OUT/gpu-tests/$f.txt 2>&1 &
  done
  wait
  for f in $OUT/gpu-tests/*.txt; do echo "$(basename $f .txt): $(tail -1 $f)"; done
}
case $step in
  mamba) nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
      run_suite mamba 8 310
      gpu_tests 220 ;;
  gemm) run_suite gemm-core 4 560 ;;
  peers) ;;
  attention) run_suite attention-core 4 560 ;;
esac
