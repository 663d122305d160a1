#!/bin/bash
# 2-CTA clusters sharing a GEMM load by TMA multicast (ExecutionPlan.multicast, passes/multicast.py), on a 2-GPU H200
# machine (nvidia-h200-x2): the experiment's configs in two interleaved parts, one a GPU (each part's ratios compare
# kernels timed in one process on one GPU), then the multicast GPU tests. One device call, carrying .gpu-bundle:
#   bash benchmarks/results/2026-11-29-h200-x2-multicast/run.sh COMMIT
set -u
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
for i in 0 1; do
  CUDA_VISIBLE_DEVICES=$i timeout 500 python -u -m benchmarks.experiments.multicast $OUT $i/2 2>&1 \
    | grep -v " INFO \|:INFO\]" > $OUT/multicast-$i.log &
done
wait
CUDA_VISIBLE_DEVICES=0 timeout 60 python -m pytest -q -m gpu -p no:cacheprovider tests/test_multicast.py 2>&1 | tail -5 \
  | tee $OUT/gpu-tests.txt
for i in 0 1; do sed -n '/^TFLOP\/s over/,$p' $OUT/multicast-$i.log; tail -3 $OUT/multicast-$i.log; done
