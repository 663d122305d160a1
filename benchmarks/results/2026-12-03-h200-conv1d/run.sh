#!/bin/bash
# Issue 14 item 4: Mamba's causal conv1d + SiLU on pt-tvm's kernel (pt_tvm.ops.causal_conv1d, the causal_conv1d
# template) against PyTorch's F.conv1d and torch.compile as the Mamba2 layer calls them, and a copy of the same rows
# (benchmarks/experiments/conv1d.py), then the GPU tests of the op and of the layers suite, on ONE H200
# (nvidia-h200), one call carrying .gpu-bundle, from the project root:
#   bash benchmarks/results/2026-12-03-h200-conv1d/run.sh COMMIT
set -u
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 300 python -m benchmarks.experiments.conv1d $OUT 2>&1 | grep -v "INFO\|AutoWarpSpecialization" > $OUT/conv1d.log
echo "rc=$? (at $1)"
bash benchmarks/gpu-tests.sh 8 150 tests/test_ops_gpu.py tests/test_layers_suite.py -k "conv1d or ssd or layer" | tail -4
tail -6 $OUT/conv1d.log | cut -c1-600
