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
# What ran (2026-12-03, nineteenth session, 6b33a04, one call, 306 s): conv1d on four configs (conv1d-6b33a04.json.gz,
# conv1d.log), its inputs slices of columns 4096-8447 of fresh 8512-column tensors and the copy on one input set;
# then 8 of 10 GPU tests passed (gpu-tests.txt.gz: the op's four, the SSD op's, the Mamba2 layer's with the conv on
# pt-tvm's kernel), 2 not reached in 150 s. After the run conv1d.py takes the template's inputs (columns 0-4351,
# the same strides) through variants.graphed_if_right and copies rotated input sets (ef153d2 and later; not re-run).
