#!/bin/bash
# On ONE H200 (nvidia-h200), carrying .gpu-bundle, after the conv's software pipelines take their threads (cf9d9fd):
# 1. twins.py: the pick before and after at the configs whose H200 pick moved (4 x 2048 of the Mamba2 layer, a tie;
#    4 x 4096 x 4353, rows TMA cannot address);
# 2. benchmarks.experiments.conv1d at the layer's four shapes (tests/test_conv1d.py's recorded plans);
# 3. the 4353-channel ragged pair, in the time left.
#   bash benchmarks/results/2026-12-06-conv-threads/run-h200.sh COMMIT 580
# What ran (2026-12-06, about 05:45 UTC): `bash .../run-h200.sh 2b42b5e 580` asked for an H200 and ran on ONE H100
# 80GB HBM3 (the kind takes either), wall 444 s, files in h100/: twins 138.3 -> 124.9 us at 4353 (the layer's 4 x 2048
# pick not moved on the H100: "same"), the conv1d experiment at the layer's four shapes, the pair 0.831 (queued
# 0.841). A second call with needs_h200 got no machine.
set -u
limit=$2
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
nvidia-smi -L
export PYTHONPATH=$PWD:${PYTHONPATH:-} PT_TVM_CACHE_DIR=$(mktemp -d)  # no plan of an earlier call
start=$(date +%s)
left() { echo $(( limit - ($(date +%s) - start) - 10 )); }
timeout 200 python benchmarks/results/2026-12-06-conv-threads/twins.py $OUT 2>&1 | grep -v "INFO" > $OUT/twins.log
echo "twins: rc=$?"
timeout 260 python -m benchmarks.experiments.conv1d $OUT 2>&1 | grep -v "INFO\|AutoWarpSpecialization" > $OUT/conv1d.log
echo "conv1d: rc=$?"
mkdir -p $OUT/pair
timeout $(left) python benchmarks/results/2026-12-05-h200-conv-weights/pair4353.py $OUT/pair > $OUT/pair/ragged.log 2>&1
echo "pair: rc=$?"
tail -6 $OUT/conv1d.log | cut -c1-400
grep -E "^  causal_conv1d" $OUT/pair/ragged.log | cut -c1-200
tail -7 $OUT/twins.log
