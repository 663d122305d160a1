#!/bin/bash
# The gemm-core suite on one H200 with the search's GEMM plans carried into the next step (issue 15: the carried
# gemms of 2026-11-29-h200-carry, first measured on the suite here), at 563d031. Four interleaved shards, two a
# device call, one after the other on the one GPU (every ratio compares systems of one config timed in one
# process); the four parts merged after (`python -m benchmarks merge`). Device calls, carrying .gpu-bundle:
#   bash benchmarks/results/2026-11-29-h200-gemm-carried/run.sh 0 1 COMMIT   (first: also the three GPU tests
#   bash benchmarks/results/2026-11-29-h200-gemm-carried/run.sh 2 3 COMMIT    fixed at 563d031)
set -u
a=$1 b=$2
export PT_TVM_GIT_COMMIT=$3
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
if [ $a = 0 ]; then
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
  CHUNK=1 bash benchmarks/gpu-tests.sh 16 150 tests/test_tile_walk.py -k test_walked_plans_compute_every_output
fi
for s in $a $b; do
  timeout 270 python -m benchmarks run --suite gemm-core --shard $s/4 --tune-top-k 4 --rep-ms 200 \
    --systems pt-tvm,pt-tvm-model,cublas,torch-compile --out $OUT/gemm-core-$s.json > $OUT/gemm-core-$s.log 2>&1
  echo "gemm-core-$s: rc=$? $(python -c "import json;h=json.load(open('$OUT/gemm-core-$s.json'))['header'];print('wall_s',h.get('wall_s'),'partial',h.get('partial'))")"
  grep -h "geomean" $OUT/gemm-core-$s.log | cut -c1-160
done
