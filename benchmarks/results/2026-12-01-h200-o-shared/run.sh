#!/bin/bash
# FlashAttention without a mask, the output tile staged in Q_shared (o_shared=0) or a tile of its own (1), each
# search's best plan launched and two stages deep walked persistently, beside cuDNN SDPA
# (benchmarks/experiments/o_shared.py). One H200 (nvidia-h200), one call carrying .gpu-bundle:
#   bash benchmarks/results/2026-12-01-h200-o-shared/run.sh COMMIT
set -u
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | tee $OUT/gpu.txt
timeout 560 python -m benchmarks.experiments.o_shared $OUT 2>&1 | grep -v INFO > $OUT/o_shared.log
tail -24 $OUT/o_shared.log
