#!/bin/bash
# The causal conv1d over rows TMA cannot address with its weights and bias held in registers where its outputs
# are staged in shared memory (nvcc reloaded them from shared memory for every output: 9.5 shared loads an output
# in the PTX of 4 x 4096 x 4353, 2.4 with them in registers), against the template before (877314f: the loads
# and stores by aligned chunks, weights in shared memory), in one call on ONE H200 (nvidia-h200), carrying
# .gpu-bundle and conv1d_877314f.py (`git show 877314f:templates/conv1d.py`, made before the call, carried
# uncommitted):
#   bash benchmarks/results/2026-12-05-h200-conv-weights/run.sh COMMIT 560
# 1. the ragged experiment's three conv pairs (4353 channels against 4352), settled CUDA-graph timing (after/);
# 2. the same with 877314f's template copied over the tree (before/; its stores by chunks never timed before);
# 3. at 4 x 4096 x 4353: the search's pick, the next four tiles it ranks and two named tiles (plans.py);
# 4. the op's GPU tests of the conv, every output against float32, in the time left.
# What ran (2026-12-05, 16:21-16:31 UTC): `bash .../run.sh 5de5574 540`, asked of nvidia-h200 but run on ONE H100
# 80GB HBM3 (the folder says h200; the files are in h100/). Steps 1 and 2 each reached their 150 s limit before the
# 4353 pair (a cold compile of the six kernels took 58 s): 2500 tokens 1.023 after, 1.020 before; 4 x 4000 1.001
# after, 1.002 before (bar 0.95). Step 3's peer column failed (benchmarks/systems.py had no eager form of the conv,
# so torch-compile had nothing to compile: ERR in the table) but every kernel ran and was checked (2.1e-4 from
# float32); its measured times are in plans.log. Step 4 ran out of time after six passed tests (rc 124).
# The 4353 pair itself: run2.sh.
set -u
limit=$2
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
nvidia-smi -L
start=$(date +%s)
left() { echo $(( limit - ($(date +%s) - start) - 10 )); }
mkdir -p $OUT/after $OUT/before
timeout 150 python -m benchmarks.experiments.ragged $OUT/after causal_conv1d > $OUT/after/ragged.log 2>&1
echo "after: rc=$?"
cp templates/conv1d.py /tmp/conv1d-after.py
cp benchmarks/results/2026-12-05-h200-conv-weights/conv1d_877314f.py templates/conv1d.py
PT_TVM_GIT_COMMIT=877314f timeout 150 python -m benchmarks.experiments.ragged $OUT/before causal_conv1d \
  > $OUT/before/ragged.log 2>&1
echo "before: rc=$?"
cp /tmp/conv1d-after.py templates/conv1d.py
PYTHONPATH=.:${PYTHONPATH:-} timeout $(( $(left) < 200 ? $(left) : 200 )) \
  python benchmarks/results/2026-12-05-h200-conv-weights/plans.py > $OUT/plans.log 2>&1
echo "plans: rc=$?"
timeout $(left) python -m pytest -q -m gpu tests/test_ops_gpu.py -k causal_conv1d > $OUT/gpu-tests.txt 2>&1
echo "gpu tests: rc=$? $(tail -1 $OUT/gpu-tests.txt)"
for w in after before; do grep -E "^  causal_conv1d" $OUT/$w/ragged.log | cut -c1-110 | sed "s/^/$w /"; done
grep -A12 "TFLOP/s over" $OUT/plans.log | cut -c1-200
