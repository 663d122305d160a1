#!/bin/bash
# Issue 14 item 4: the causal_conv1d template vectorized (its taps written out in one expression: 8- or 16-byte
# shared loads and stores; `stage_y` a tile dimension: y stored from registers or staged in shared memory for a
# TMA store) against its pick at 26cd244 (conv1d_before.py, made before the call by
#   git show 26cd244:templates/conv1d.py | sed 's/^from .base import/from pt_tvm.templates.base import/;
#     s/name="causal_conv1d",/name="causal_conv1d_before",/' > benchmarks/experiments/conv1d_before.py
# and carried uncommitted), the search's best plan of each kind, PyTorch's conv as the Mamba2 layer calls it,
# torch.compile, and two copies (benchmarks/experiments/conv1d.py); then the GPU tests of the op and the Mamba2
# layer, on ONE H200 (nvidia-h200), one call carrying .gpu-bundle, from the project root:
#   bash benchmarks/results/2026-12-03-h200-conv1d-vector/run.sh COMMIT
set -u
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 400 python -m benchmarks.experiments.conv1d $OUT 2>&1 | grep -v "INFO\|AutoWarpSpecialization" > $OUT/conv1d.log
echo "rc=$? (at $1)"
bash benchmarks/gpu-tests.sh 8 120 tests/test_ops_gpu.py tests/test_layers_suite.py -k "conv1d or mamba2" | tail -4
tail -8 $OUT/conv1d.log | cut -c1-900
# What ran (2026-12-03, twentieth session, e60758d with conv1d_before.py made as above, one call, 374 s): the
# experiment on its four configs in 212 s (conv1d-e60758d.json.gz, conv1d.log), then 5 GPU tests passed
# (gpu-tests.txt.gz: the op's four cases and the Mamba2 layer's suite test).
