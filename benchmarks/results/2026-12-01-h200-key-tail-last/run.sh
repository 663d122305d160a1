#!/bin/bash
# Issue 14's 8 x 1500 attention pair with the ragged key block taken last at 96 keys (tail_last.py), beside the
# template's picks at 1500 (twice) and 1536. One H200 (nvidia-h200), one call carrying .gpu-bundle:
#   bash benchmarks/results/2026-12-01-h200-key-tail-last/run.sh COMMIT
set -u
export PT_TVM_GIT_COMMIT=$1
here=benchmarks/results/2026-12-01-h200-key-tail-last
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | tee $OUT/gpu.txt
timeout 400 python $here/tail_last.py $OUT 2>&1 | grep -v INFO > $OUT/tail_last.log
tail -6 $OUT/tail_last.log
