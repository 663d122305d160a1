#!/bin/bash
# Issue 14's attention pairs at ragged lengths against their nearest tile multiples, timed both ways the ragged
# experiment now times a pair (CUDA graphs settled at each kernel's own clock, the suites' way and the bar's; queued
# unsettled, its way before), then key_tail.py here: 8 x 1500 attention with its ragged key block taken first at
# 96 keys, against the template's pick at 1500 (twice) and 1536. One H200 (nvidia-h200), one call carrying
# .gpu-bundle:
#   bash benchmarks/results/2026-11-30-h200-ragged-settled/run.sh COMMIT
# then the other templates' pairs alone in a second call (the probe not rerun), their output in other/:
#   bash benchmarks/results/2026-11-30-h200-ragged-settled/run.sh COMMIT gemm gemm_rowsum chunk_state chunk_scan
# and in a third the vocabulary-32001 pair's picks beside their 256 x 160 plans (vocab_tiles.py), its output in vocab_*:
#   bash benchmarks/results/2026-11-30-h200-ragged-settled/run.sh COMMIT vocab
# Calls: c96e790 (first), bb78f7c (second), 3429cc1 (third).
set -u
export PT_TVM_GIT_COMMIT=$1
shift
here=benchmarks/results/2026-11-30-h200-ragged-settled
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | tee $OUT/gpu.txt
if [ "${1:-}" = vocab ]; then
  timeout 400 python $here/vocab_tiles.py $OUT 2>&1 | grep -v INFO > $OUT/vocab_tiles.log; tail -5 $OUT/vocab_tiles.log; exit
fi
timeout $([ $# -eq 0 ] && echo 330 || echo 540) python -m benchmarks.experiments.ragged $OUT ${@:-flash_attention flash_attention_varlen} 2>&1 \
  | grep -v INFO > $OUT/ragged.log
[ $# -eq 0 ] && timeout 200 python $here/key_tail.py $OUT 2>&1 | grep -v INFO > $OUT/key_tail.log
tail -9 $OUT/ragged.log
[ $# -eq 0 ] && tail -5 $OUT/key_tail.log
