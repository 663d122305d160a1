#!/bin/bash
# Two device calls on ONE H100 (nvidia-h100-x1), each carrying .gpu-bundle and .peers/mamba:
#   bash benchmarks/results/2026-11-23-h100-layers/run.sh main COMMIT
#     1. the GPU tests of what changed since the last GPU run (ops and templates on any shape and over a KV
#        cache, the layers suite's tests, the walked chunk_scan plans, TileLang's peers on a 192 GEMM), in
#        parallel processes (compile-bound; nothing is timed while they run);
#     2. the layers suite on a subset of its grid (batch 1 at seqlen 2048 and the ragged 2500, batch 4 at 2048),
#        every system but max-autotune (its autotuning alone takes minutes per shape), fewest tokens first, each
#        layer cut off at its share of the call (finished configs kept).
#   bash benchmarks/results/2026-11-23-h100-layers/run.sh mamba2 COMMIT
#     the Mamba2 configs at seqlen 2048 again (after torch.compile failed on Inductor's scan), then the ragged
#     experiment on GEMM and chunk_scan, cut off at the call's end;
#   bash benchmarks/results/2026-11-23-h100-layers/run.sh ragged COMMIT
#     the ragged-shape experiment on GEMM, FlashAttention and chunk_scan, cut off at its limit.
set -u
step=$1
export PT_TVM_GIT_COMMIT=${2:-unknown}
source benchmarks/gpu-env.sh
env_setup || exit 1
unset TORCHINDUCTOR_COMPILE_THREADS
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
t0=$SECONDS
run_tests() {  # NAME PYTEST-ARGS...
  local name=$1; shift
  timeout 200 python -m pytest -q -p no:cacheprovider -m gpu -rfEsx -s "$@" > $OUT/tests-$name.log 2>&1
  echo "tests-$name rc=$? $(tail -1 $OUT/tests-$name.log | cut -c1-150)"
}
case $step in
main)
  run_tests ops tests/test_ops_gpu.py &
  run_tests shapes tests/test_shapes_gpu.py &
  run_tests layers tests/test_layers_suite.py &
  run_tests walk tests/test_tile_walk.py -k chunk_scan &
  run_tests templates tests/test_templates_gpu.py &
  wait
  echo "tests took $((SECONDS - t0)) s"
  half=$(((575 - (SECONDS - t0)) / 2))
  for layer in llama3-8b mamba2-1.3b; do
    timeout $half python -m benchmarks run --suite layers --where "kernel=$layer,seqlen=2048|2500,batch=1|4" \
      --systems eager,torch-compile,mamba-ssm,pt-tvm,pt-tvm+compile --rep-ms 300 \
      --out $OUT/layers-$layer.json > $OUT/layers-$layer.log 2>&1
    echo "$layer rc=$? (124: cut off, finished configs kept) at $((SECONDS - t0)) s"
    grep -E "^$layer " $OUT/layers-$layer.log | cut -c1-200
  done ;;
mamba2)  # the Mamba2 configs again after the fix for Inductor's scan (prefix_sum), then the ragged experiment
  timeout 150 python -m benchmarks run --suite layers --where "kernel=mamba2-1.3b,seqlen=2048,batch=1|4" \
    --systems eager,torch-compile,mamba-ssm,pt-tvm,pt-tvm+compile --rep-ms 300 \
    --out $OUT/layers-mamba2-1.3b.json > $OUT/layers-mamba2-1.3b.log 2>&1
  echo "mamba2 rc=$? at $((SECONDS - t0)) s"
  grep -E "^mamba2-1.3b " $OUT/layers-mamba2-1.3b.log | cut -c1-200
  timeout $((225 - (SECONDS - t0))) python -m benchmarks.experiments.ragged $OUT gemm chunk_scan > $OUT/ragged.log 2>&1
  echo "ragged rc=$? in $((SECONDS - t0)) s"; tail -12 $OUT/ragged.log | cut -c1-200 ;;
ragged)
  timeout 110 python -m benchmarks.experiments.ragged $OUT gemm flash_attention chunk_scan > $OUT/ragged.log 2>&1
  echo "ragged rc=$? in $((SECONDS - t0)) s"; tail -20 $OUT/ragged.log | cut -c1-200 ;;
esac
