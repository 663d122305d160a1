#!/bin/bash
# The decoding kernel with its sequence's length (and split's first key block) bound once a block (COMMIT) against
# the kernel as before (the template of the commit before, carried untracked in ab-before/ and copied over the
# tree for the second half), then every GPU test at COMMIT, on a 2-GPU H200 machine (nvidia-h200-x2), one device
# call carrying .gpu-bundle:
#   batch 1, kv 16k, paged (issue 16's config below the bandwidth bar): three plans of plans.json (`python -m
#   benchmarks.experiments.decode_split plan plans.json "sp32 b64 st2" "sp32 b64 st2 fused" "ws16 b64 d2"`, on a
#   CPU at COMMIT), each compiled, checked against float32 and timed from CUDA graphs, after/ then before/;
#   then every GPU test (gpu-tests.txt.gz).
#   bash benchmarks/results/2026-11-30-h200-decode-bind/run.sh COMMIT
# Ran twice: at a9fc57c the plans' path was lost (gpu-env.sh sets its own $d) and one GPU test failed (a persistent
# warp-specialized decode plan, its length bound under the last step's guard: TileLang refused it; fixed after);
# then at the fix's commit (the files here).
set -u
export PT_TVM_GIT_COMMIT=$1
plans=benchmarks/results/2026-11-30-h200-decode-bind/plans.json  # (gpu-env.sh uses $d)
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | tee $OUT/gpu.txt
mkdir -p $OUT/after $OUT/before
CUDA_VISIBLE_DEVICES=0 python -m benchmarks.experiments.decode_split run $plans $OUT/after > $OUT/after/log.txt 2>&1
cp templates/decode_attention.py /tmp/decode_after.py && cp ab-before/decode_attention.py templates/decode_attention.py
PT_TVM_GIT_COMMIT="$1 with ab-before" CUDA_VISIBLE_DEVICES=0 \
  python -m benchmarks.experiments.decode_split run $plans $OUT/before > $OUT/before/log.txt 2>&1
cp /tmp/decode_after.py templates/decode_attention.py
for f in after before; do echo "== $f"; tail -6 $OUT/$f/log.txt; done
OUT=$OUT bash benchmarks/gpu-tests.sh 32 ${LIMIT:-380}
gzip -f $OUT/gpu-tests.txt
