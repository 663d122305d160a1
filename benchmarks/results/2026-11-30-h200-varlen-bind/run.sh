#!/bin/bash
# The varlen attention kernel with its sequence's offsets and lengths bound once a block (each warp-specialized
# role binds its own; COMMIT) against the kernel as before (the template and passes/apply.py of the commit before,
# carried untracked in ab-before/ and copied over the tree for the second half), on one H200 of a 2-GPU machine
# (nvidia-h200-x2, for its 32 cores), one device call carrying .gpu-bundle:
#   dense attention on the bucket's varlen kernel (benchmarks.experiments.dynamic_attention) after, then before;
#   the ragged varlen pair (benchmarks.experiments.ragged flash_attention_varlen) after.
#   bash benchmarks/results/2026-11-30-h200-varlen-bind/run.sh COMMIT
set -u
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH CUDA_VISIBLE_DEVICES=0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | tee $OUT/gpu.txt
mkdir -p $OUT/after $OUT/before $OUT/ragged
python -m benchmarks.experiments.dynamic_attention $OUT/after > $OUT/after/log.txt 2>&1
python -m benchmarks.experiments.ragged $OUT/ragged flash_attention_varlen > $OUT/ragged/log.txt 2>&1
cp ab-before/flash_attention.py templates/flash_attention.py && cp ab-before/apply.py passes/apply.py
export PT_TVM_GIT_COMMIT="$1 with ab-before"
python -m benchmarks.experiments.dynamic_attention $OUT/before > $OUT/before/log.txt 2>&1
for f in after before ragged; do echo "== $f"; grep -v "^INFO\|^pt_tvm" $OUT/$f/log.txt | tail -8; done
