#!/bin/bash
# Issue 14 item 4: the vectorized causal_conv1d template with fast math (a4e4d34: nvcc --use_fast_math, SiLU's exp2
# and division approximate) against its pick at 26cd244, the search's best plan of each kind, PyTorch and
# torch.compile (benchmarks/experiments/conv1d.py, as 2026-12-03-h200-conv1d-vector; conv1d_before.py made the same
# way, uncommitted), on ONE H200 (nvidia-h200), one call carrying .gpu-bundle, from the project root:
#   bash benchmarks/results/2026-12-03-h200-conv1d-fast-math/run.sh COMMIT
set -u
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1
timeout 300 python -m benchmarks.experiments.conv1d $OUT 2>&1 | grep -v "INFO\|AutoWarpSpecialization" > $OUT/conv1d.log
echo "rc=$?"; tail -6 $OUT/conv1d.log | cut -c1-900
# What ran (2026-12-03, twentieth session, c12140c, one call on the machine warm from the layers call, 214 s; the
# same lines typed as the call's command): the four configs in 180 s (conv1d-c12140c.json.gz, conv1d.log). No GPU
# tests in this call: the op's four GPU tests and the layer's ran in 2026-12-03-h200-conv1d-vector (before fast
# math), and the Mamba2 layers' batch-1 rows (2026-12-03-h200-layers-mamba2-b1-conv, c12140c, fast math) checked
# every output against float32 (5.3e-4).
