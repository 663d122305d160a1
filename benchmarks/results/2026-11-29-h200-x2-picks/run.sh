#!/bin/bash
# The search's picks that changed with the TMA request cost of 25 cycles (1258092; LLaMA-3-70B up and qkv, LLaMA-3-8B
# up: launched 256x160 -> persistent carried 128x256), measured beside cuBLAS (one GPU of a 2-GPU H200 machine),
# while the other GPU runs every GPU test at the same commit. One device call (nvidia-h200-x2), carrying .gpu-bundle:
#   bash benchmarks/results/2026-11-29-h200-x2-picks/run.sh COMMIT
set -u
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
CUDA_VISIBLE_DEVICES=1 timeout 480 python -m benchmarks run --suite gemm --where "kernel=gemm,N=28672|10240|14336" \
  --tune-top-k 4 --rep-ms 200 --workers 8 --systems pt-tvm,pt-tvm-model,cublas --out $OUT/picks.json > $OUT/picks.log 2>&1 &
CUDA_VISIBLE_DEVICES=0 OUT=$OUT bash benchmarks/gpu-tests.sh 20 450
wait
echo "picks: $(python -c "import json;h=json.load(open('$OUT/picks.json'))['header'];print('wall_s',h.get('wall_s'),'partial',h.get('partial'))")"
grep -E "^gemm" $OUT/picks.log | cut -c1-140
grep -h "geomean" $OUT/picks.log | cut -c1-160
