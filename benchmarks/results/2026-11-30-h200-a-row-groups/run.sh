#!/bin/bash
# GEMM at an fp16 K whose rows TMA cannot address (issue 14 item 1: K = 4001, 4004 against the twin K = 3968), now
# that the gemm template loads such rows of A by TMA in tiles of rows 16 apart (B as [K, N]) and ops.matmul passes A
# as it lies: `python -m benchmarks.experiments.unaligned_rows $OUT` (the op; the op after the copy it made before;
# rows the caller keeps aligned; the kernel on consecutive rows; cuBLAS), then the GEMM GPU tests of any shape and
# the ops' matmul and linear GPU tests (the row-group kernels beside an inf in a neighbouring row among them).
# One call on one H200 (nvidia-h200), carrying .gpu-bundle:
#   bash benchmarks/results/2026-11-30-h200-a-row-groups/run.sh COMMIT
# Ran 2026-11-30 at d6fbdc3 (rc 0; unaligned_rows.*, gpu-tests.txt: 30 passed; ops.matmul then passed A as it lies
# in row groups, reverted after this run: the op keeps its copy), and `stride` at 7130d54 (rc 0; row_groups*).
set -u
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
[ -z "${2:-}" ] && { timeout 270 python -u -m benchmarks.experiments.unaligned_rows $OUT 2>&1 | grep -v " INFO \|:INFO\]" > $OUT/unaligned_rows.log
OUT=$OUT bash benchmarks/gpu-tests.sh 16 170 tests/test_shapes_gpu.py tests/test_ops_gpu.py \
  -k "gemm or row_groups or matmul or linear or rows_as_they_lie or transposed"
tail -16 $OUT/unaligned_rows.log; }
# Second call (one H200, carrying .gpu-bundle), the row groups at one tile beside A's rows kept 16 bytes apart:
#   bash benchmarks/results/2026-11-30-h200-a-row-groups/run.sh COMMIT stride
[ "${2:-}" = stride ] && { timeout 240 python -u -m benchmarks.experiments.row_groups $OUT "K 4001" 2>&1 \
  | grep -v " INFO \|:INFO\]" | tee $OUT/row_groups.log | tail -6; }
