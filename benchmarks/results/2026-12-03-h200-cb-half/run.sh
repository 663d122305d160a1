#!/bin/bash
# Issue 15 item 4: Mamba2's chunk_scan reading cb in the input dtype (cb_dtype) against float32 cb, the search's
# pick of each, beside mamba-ssm's Triton kernel (benchmarks/experiments/cb_half.py), then the Mamba2 GPU tests
# and the SSD ops GPU tests (half cb among them), on ONE H200 (nvidia-h200), one call carrying .gpu-bundle and
# .peers/packed, from the project root:
#   bash benchmarks/results/2026-12-03-h200-cb-half/run.sh COMMIT
set -u
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 360 python -m benchmarks.experiments.cb_half $OUT 2>&1 \
  | grep -v "INFO\|AutoWarpSpecialization" > $OUT/cb_half.log
echo "rc=$? (at $1)"
bash benchmarks/gpu-tests.sh 12 170 tests/test_mamba2.py tests/test_ops_gpu.py -k "chunk or ssd or mamba or gpu_" | tail -4
tail -6 $OUT/cb_half.log | cut -c1-400
# What ran (2026-12-03, eighteenth session, 724f2f6, one call, 284 s): cb_half on four configs (cb_half-724f2f6.json.gz,
# cb_half.log), then 30 GPU tests of Mamba2 and the SSD ops: 30 passed (gpu-tests.txt.gz).
