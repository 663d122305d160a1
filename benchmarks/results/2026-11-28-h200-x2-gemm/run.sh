#!/bin/bash
# The gemm-core suite on a 2-GPU machine asked as nvidia-h100-x2 and served by two H200s, at COMMIT (a87f470): the
# cost model with the shared-memory port (eed0d50) ranks the plans the tuner measures (its top 4 of distinct tile,
# roles and row split), so this run is the model's check on measurements it was not fitted to (2026-11-27-x4-suites
# and 2026-11-28-h200-x2-suites were).
# The H100 run's harness: four interleaved shards, one a GPU, two side by side (every ratio compares systems of one
# config timed on one GPU); systems pt-tvm (tuned), pt-tvm-model (the model's first pick) and cuBLAS. One call,
# from the project root, carrying .gpu-bundle:
#   bash benchmarks/results/2026-11-28-h100-x2-gemm/run.sh COMMIT   (this folder's name before the cards were known)
# then `python -m benchmarks merge gemm-core-*.json --out gemm-core.json` (kept gzipped, the shards' JSONs not) and
# `python -m benchmarks model-check gemm-core.json.gz --target h200 > model-check.md` on any machine.
set -u
export PT_TVM_GIT_COMMIT=${1:-unknown}
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
gpus=$(nvidia-smi -L | wc -l)
i=0
for s in 0 1 2 3; do
  CUDA_VISIBLE_DEVICES=$i timeout 280 python -m benchmarks run --suite gemm-core --shard $s/4 --tune-top-k 4 \
    --rep-ms 200 --systems pt-tvm,pt-tvm-model,cublas --out $OUT/gemm-core-$s.json > $OUT/gemm-core-$s.log 2>&1 &
  i=$(( (i + 1) % gpus ))
  [ $i = 0 ] && wait
done
wait
for s in 0 1 2 3; do
  grep -v "INFO\]\|AutoWarpSpecialization" $OUT/gemm-core-$s.log > $OUT/l && mv $OUT/l $OUT/gemm-core-$s.log
  echo "gemm-core-$s: $(python -c "import json;h=json.load(open('$OUT/gemm-core-$s.json'))['header'];print('wall_s',h.get('wall_s'),'partial',h.get('partial'))")"
  grep -h "geomean" $OUT/gemm-core-$s.log | cut -c1-160
done
