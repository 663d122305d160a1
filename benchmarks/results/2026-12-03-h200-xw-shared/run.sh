#!/bin/bash
# Issue 15 item 4: chunk_state's weighted x in shared memory, read transposed by the GEMM, against the register
# fragment (benchmarks/experiments/xw_shared.py, branch xw-shared), on ONE H200 (nvidia-h200), one call carrying
# .gpu-bundle and .peers/packed, from the project root:
#   bash benchmarks/results/2026-12-03-h200-xw-shared/run.sh COMMIT
set -u
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 400 python -m benchmarks.experiments.xw_shared $OUT 2>&1 | grep -v "INFO\|AutoWarpSpecialization" \
  > $OUT/xw_shared.log
echo "rc=$? (at $1)"; tail -8 $OUT/xw_shared.log | cut -c1-200
# What ran (2026-12-03, d0cecaf on branch xw-shared, kept off main: the template's `xw_shared` pin and
# benchmarks/experiments/xw_shared.py exist only there), one call chained before the row-sum-extra run.sh, which the
# session's device time (limit 268 s) cut: five of the six configs timed (b1 s16384 xw2 not), xw_shared-d0cecaf.json.gz.
