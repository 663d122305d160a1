#!/bin/bash
# The bucket's varlen kernel 3 stages deep against the search's pick (2: the search prices the two depths alike
# and takes the shallower on the tie, where the exact kernel's search picks 3), beside the exact kernel, at 777 and
# 2500 tokens (benchmarks.experiments.dynamic_attention with its lengths named). One H200 (nvidia-h200), one call
# carrying .gpu-bundle:
#   bash benchmarks/results/2026-11-30-h200-varlen-depth/run.sh COMMIT
# Ran 2026-11-30 at 444bd76: 777 tokens timed; at 2500 the 200 s ran out after the kernels were built and checked.
set -u
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | tee $OUT/gpu.txt
timeout 200 python -m benchmarks.experiments.dynamic_attention $OUT 777 2500 > $OUT/log.txt 2>&1
gzip -f $OUT/log.txt
zcat $OUT/log.txt.gz | grep -v "INFO\|^pt_tvm\|TileLang" | grep "L=\|of exact\|total"
