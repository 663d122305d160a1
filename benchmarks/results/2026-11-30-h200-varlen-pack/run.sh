#!/bin/bash
# GQA packed on the varlen kernel (pack_gqa, COMMIT), one H200 (nvidia-h200), one device call carrying .gpu-bundle,
# run at afd3b57 (packed stores an element at a time), 9c67068 (vectorized) and 140a15c (the search packs the
# bucket's kernel), each call's $OUT kept as COMMIT/:
#   dense LLaMA-3-8B attention on the bucket's varlen kernel, packed and not (benchmarks.experiments.dynamic_attention),
#   then the GPU tests of the varlen kernel and the attention ops.
#   bash benchmarks/results/2026-11-30-h200-varlen-pack/run.sh COMMIT
set -u
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | tee $OUT/gpu.txt
python -m benchmarks.experiments.dynamic_attention $OUT > $OUT/log.txt 2>&1
OUT=$OUT bash benchmarks/gpu-tests.sh 12 200 tests/test_shapes_gpu.py tests/test_random_problems.py \
  tests/test_ops_gpu.py -k "varlen or dynamic or attention" > /dev/null 2>&1
gzip -f $OUT/gpu-tests.txt
grep -v "^INFO\|^pt_tvm\|TileLang" $OUT/log.txt | tail -16
zcat $OUT/gpu-tests.txt.gz | head -12
