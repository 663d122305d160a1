#!/bin/bash
# The whole gemm suite (issue 15's GEMM bar: 24 GEMM and 8 GEMM + row sum configs, fp16 and bf16, 2048^3 to 16384^3
# and LLaMA-3-8B/70B projections) on a 2-GPU H200 machine (nvidia-h200-x2) at HEAD, the first run of the whole suite
# since 2026-11-22 (before issue 12's harness). Four interleaved shards, one a GPU, two side by side a call
# (CUDA_VISIBLE_DEVICES; every ratio compares systems of one config timed in one process on one GPU); the four parts
# merged after (`python -m benchmarks merge`). Two device calls, each carrying .gpu-bundle:
#   bash benchmarks/results/2026-11-29-h200-x2-gemm/run.sh 0 1 COMMIT
#   bash benchmarks/results/2026-11-29-h200-x2-gemm/run.sh 2 3 COMMIT
set -u
export PT_TVM_GIT_COMMIT=$3
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
i=0
for s in $1 $2; do
  CUDA_VISIBLE_DEVICES=$i timeout 540 python -m benchmarks run --suite gemm --shard $s/4 --tune-top-k 4 --rep-ms 200 \
    --systems pt-tvm,pt-tvm-model,cublas,torch-compile --out $OUT/gemm-$s.json > $OUT/gemm-$s.log 2>&1 &
  i=$((i + 1))
done
wait
for s in $1 $2; do
  echo "gemm-$s: $(python -c "import json;h=json.load(open('$OUT/gemm-$s.json'))['header'];print('wall_s',h.get('wall_s'),'partial',h.get('partial'))")"
  grep -E "^gemm" $OUT/gemm-$s.log | grep -E " pt-tvm | cublas " | cut -c1-120
  grep -h "geomean" $OUT/gemm-$s.log | cut -c1-160
done
