#!/bin/bash
# One device call on ONE H100 (nvidia-h100-x1), carrying .gpu-bundle and .peers/mamba:
#   bash benchmarks/results/2026-11-23-h100-layers/run.sh COMMIT
# 1. the GPU tests of what changed since the last GPU run (ops on any shape and over a KV cache, the shapes
#    tests, the layers suite's tests, the walked chunk_scan plans, TileLang's peers on a 192 GEMM), in
#    parallel processes (compile-bound; nothing is timed while they run);
# 2. the ragged-shape experiment (each template at ragged shapes against the nearest tile multiple);
# 3. the layers suite on a subset of its grid (batch 1 and 4 at seqlen 2048, and the ragged 2500), every system
#    but max-autotune (its autotuning alone takes minutes per shape), fewest tokens first, cut off at its limit.
set -u
export PT_TVM_GIT_COMMIT=${1:-unknown}
source benchmarks/gpu-env.sh
env_setup || exit 1
unset TORCHINDUCTOR_COMPILE_THREADS
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
t0=$SECONDS
run_tests() {  # NAME PYTEST-ARGS...
  local name=$1; shift
  timeout 230 python -m pytest -q -p no:cacheprovider -m gpu -rfEsx -s "$@" > $OUT/tests-$name.log 2>&1
  echo "tests-$name rc=$? $(tail -1 $OUT/tests-$name.log | cut -c1-150)"
}
run_tests ops tests/test_ops_gpu.py &
run_tests shapes tests/test_shapes.py &
run_tests layers tests/test_layers_suite.py &
run_tests walk tests/test_tile_walk.py -k chunk_scan &
run_tests peers tests/test_templates_gpu.py -k peers &
wait
echo "tests took $((SECONDS - t0)) s"
t1=$SECONDS
timeout 90 python -m benchmarks.experiments.ragged $OUT/ragged > $OUT/ragged.log 2>&1
echo "ragged rc=$? in $((SECONDS - t1)) s"; tail -15 $OUT/ragged.log | cut -c1-200
half=$(((560 - (SECONDS - t0)) / 2))
for layer in llama3-8b mamba2-1.3b; do
  timeout $half python -m benchmarks run --suite layers --where "kernel=$layer,seqlen=2048|2500,batch=1|4" \
    --systems eager,torch-compile,mamba-ssm,pt-tvm,pt-tvm+compile --rep-ms 300 \
    --out $OUT/layers-$layer.json > $OUT/layers-$layer.log 2>&1
  echo "$layer rc=$? (124: cut off, finished configs kept) at $((SECONDS - t0)) s"
  grep -E "^$layer " $OUT/layers-$layer.log | cut -c1-200
done
python -m benchmarks merge $OUT/layers-llama3-8b.json $OUT/layers-mamba2-1.3b.json --out $OUT/layers.json
python -m benchmarks report $OUT/layers.json --out-dir $OUT/layers > /dev/null 2>&1
sed -n '/^## Against the paper/,/^## llama3-8b/p' $OUT/layers/table.md | head -14
