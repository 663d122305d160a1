#!/bin/bash
# GEMM at an fp16 K whose rows TMA cannot address (4001, 4004), through pt_tvm.ops at c64b1a3 (such an operand
# copied once a call into rows 16 bytes apart and read through TMA), against the K = 3968 twin, cuBLAS at both, the
# kernel on rows the caller keeps aligned, and the kernel that loads the rows as they lie (before c64b1a3); then
# the GPU tests of matmul and linear, strided and copied operands among them. One call on one H100
# (nvidia-h100-x1), from the project root:
#   source .gpu-bundle/setup.sh && bash benchmarks/results/2026-11-28-h100-unaligned-rows/run.sh c64b1a3
set -u
export PYTHONPATH=$PWD:${PYTHONPATH:-} PT_TVM_GIT_COMMIT=$1
timeout 200 python -m pytest -q -m gpu -p no:cacheprovider tests/test_ops_gpu.py \
  -k "rows_as_they_lie or test_matmul or test_linear" > $OUT/gpu-tests.txt 2>&1
tail -4 $OUT/gpu-tests.txt
timeout 380 python -m benchmarks.experiments.unaligned_rows $OUT 2>&1 | grep -v "INFO\|AutoWarpSpecialization" \
  > $OUT/unaligned_rows.log
tail -14 $OUT/unaligned_rows.log
