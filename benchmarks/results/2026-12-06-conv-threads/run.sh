#!/bin/bash
# The conv over rows TMA cannot address (4 x 4096 x 4353 fp16) after its software pipelines take their threads on
# chips that warp-specialize (Template.pipelines_take_threads): the ragged pair (4353 against 4352 channels, the
# search's picks, settled CUDA graphs in one process), then the conv's GPU tests and random problems. One call on one
# GPU (say which), carrying .gpu-bundle:
#   bash benchmarks/results/2026-12-06-conv-threads/run.sh COMMIT 560
# What ran (2026-12-06, about 06:05 UTC): `bash .../run.sh a919ffe 400` on ONE H100 80GB HBM3, wall 426 s (files in
# h100-a919ffe/): the pair 0.834 (queued 0.842, twin again -0.0%), pick 32 x 256 x 256 at 256 threads; the GPU tests
# cut off by the limit (rc 124) after 11 passed of the conv's 13 (the dots of gpu-tests.txt), none failed.
set -u
limit=$2
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
nvidia-smi -L
start=$(date +%s)
left() { echo $(( limit - ($(date +%s) - start) - 10 )); }
mkdir -p $OUT/pair
PYTHONPATH=.:${PYTHONPATH:-} timeout 300 python benchmarks/results/2026-12-05-h200-conv-weights/pair4353.py $OUT/pair \
  > $OUT/pair/ragged.log 2>&1
echo "pair: rc=$?"
timeout $(left) python -m pytest -q -rA -m gpu tests/test_ops_gpu.py tests/test_random_problems.py -k causal_conv1d \
  > $OUT/gpu-tests.txt 2>&1
echo "gpu tests: rc=$? $(tail -1 $OUT/gpu-tests.txt)"
grep -E "^  causal_conv1d|^causal_conv1d" $OUT/pair/ragged.log | cut -c1-200
