#!/bin/bash
# The gemm-core suite on one H100 (nvidia-h100-x1) at COMMIT: the cost model with the shared-memory port (eed0d50)
# and measured refinement keeping the model's pick within 1.5% (c413f0d), on measurements neither was made from.
# The H100 runs' harness (four interleaved shards; systems pt-tvm tuned, pt-tvm-model, cuBLAS), two shards a call
# on the one GPU, one after the other, from the project root, carrying .gpu-bundle:
#   bash benchmarks/results/2026-11-28-h100-gemm/run.sh COMMIT 0 1     (then 2 3)
# then `python -m benchmarks merge gemm-core-*.json --out gemm-core.json` (kept gzipped, the shards' JSONs not) and
# `python -m benchmarks model-check gemm-core.json.gz --target h100 > model-check.md` on any machine.
set -u
export PT_TVM_GIT_COMMIT=${1:-unknown}
shift
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for s in "$@"; do
  timeout 280 python -m benchmarks run --suite gemm-core --shard $s/4 --tune-top-k 4 --rep-ms 200 \
    --systems pt-tvm,pt-tvm-model,cublas --out $OUT/gemm-core-$s.json > $OUT/gemm-core-$s.log 2>&1
  grep -v "INFO\]\|AutoWarpSpecialization" $OUT/gemm-core-$s.log > $OUT/l && mv $OUT/l $OUT/gemm-core-$s.log
  echo "gemm-core-$s: $(python -c "import json;h=json.load(open('$OUT/gemm-core-$s.json'))['header'];print('wall_s',h.get('wall_s'),'partial',h.get('partial'))")"
  grep -h "geomean" $OUT/gemm-core-$s.log | cut -c1-160
done
