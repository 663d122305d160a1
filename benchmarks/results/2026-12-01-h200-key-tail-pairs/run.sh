#!/bin/bash
# Issue 14's attention pairs (the ragged experiment's flash_attention pairs: 8 x 1500 now takes its key tail as a
# step after the loop), then the GPU tests of the ragged shapes (the key tail's among them) and the attention
# templates. One H200 (nvidia-h200), one call carrying .gpu-bundle:
#   bash benchmarks/results/2026-12-01-h200-key-tail-pairs/run.sh COMMIT
set -u
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | tee $OUT/gpu.txt
timeout 300 python -m benchmarks.experiments.ragged $OUT flash_attention 2>&1 | grep -v INFO > $OUT/ragged.log
tail -6 $OUT/ragged.log
bash benchmarks/gpu-tests.sh 16 230 tests/test_shapes_gpu.py tests/test_key_tail.py -k "attention or key_tail"
