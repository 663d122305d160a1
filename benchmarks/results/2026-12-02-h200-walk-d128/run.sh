#!/bin/bash
# Head dim 128 without a mask: the search's pick (launched, three K/V stages) against its persistent walk with the
# output tile of its own (two stages), beside cuDNN SDPA and flash-attn-4 (benchmarks/experiments/walk_d128.py).
# flash-attn-4 travels in two halves (../shared/gpu/make-peers-bundle.sh): three calls back to back on one warm H200,
#   setup  carry .gpu-bundle     peers  carry .gpu-peers/a     run  carry .gpu-peers/b
# each as: bash benchmarks/results/2026-12-02-h200-walk-d128/run.sh STEP COMMIT
set -u
export PT_TVM_GIT_COMMIT=$2
[ $1 = peers ] && { source .gpu-peers/a/peers.sh; exit; }
source benchmarks/gpu-env.sh
env_setup || exit 1
[ $1 = setup ] && { nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt; exit; }
export PYTHONPATH=$PWD:$PYTHONPATH
timeout 380 python -m benchmarks.experiments.walk_d128 $OUT 2>&1 | grep -v INFO > $OUT/walk_d128.log
tail -14 $OUT/walk_d128.log
