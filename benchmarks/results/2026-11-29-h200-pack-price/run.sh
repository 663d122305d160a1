#!/bin/bash
# The search's pick of LLaMA-3-8B's attention (GQA 32/8, head dim 128, causal, bf16) against its best-priced packed
# and unpacked plans, after the dependence analysis stopped chaining a packed block's Q boxes (b3bb8ea), on ONE
# H200 (nvidia-h200), one call carrying .gpu-bundle, from the project root:
#   bash benchmarks/results/2026-11-29-h200-pack-price/run.sh 54964fa
set -u
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1
timeout 440 python -u -m benchmarks.experiments.pack_price $OUT 2>&1 | grep -v INFO | tee $OUT/pack_price.log | tail -25
