#!/bin/bash
# FlashAttention without a mask: the search's picks with o_shared and persistent walks in its space, against its
# best plan staging the output in Q_shared (its pick before), beside cuDNN SDPA and flash-attn-4
# (benchmarks/experiments/o_shared_picks.py). One H200 (nvidia-h200), three calls on one warm machine:
# .gpu-bundle (source .gpu-bundle/setup.sh), .gpu-peers/a (source .gpu-peers/a/peers.sh), then .gpu-peers/b:
#   source .gpu-bundle/setup.sh && source .gpu-peers/b/peers.sh && bash benchmarks/results/2026-12-01-h200-o-shared-picks/run.sh COMMIT
set -u
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | tee $OUT/gpu.txt
timeout 540 python -m benchmarks.experiments.o_shared_picks $OUT 2>&1 | grep -v INFO > $OUT/o_shared_picks.log
tail -20 $OUT/o_shared_picks.log
