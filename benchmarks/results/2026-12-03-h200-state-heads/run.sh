#!/bin/bash
# Issue 15 item 4: Mamba2's chunk_state with 1, 2 and 4 heads of one group a block sharing the B tile
# (benchmarks/experiments/head_pack.py chunk_state), beside mamba-ssm's Triton kernel, then the Mamba2 GPU tests
# (packed heads among them), on ONE H200 (nvidia-h200), one call carrying .gpu-bundle and .peers/packed, from the
# project root:
#   bash benchmarks/results/2026-12-03-h200-state-heads/run.sh COMMIT
set -u
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
timeout 330 python -m benchmarks.experiments.head_pack $OUT chunk_state 2>&1 \
  | grep -v "INFO\|AutoWarpSpecialization" > $OUT/head_pack.log
echo "rc=$? (at $1)"
bash benchmarks/gpu-tests.sh 12 150 tests/test_mamba2.py | tail -4
tail -14 $OUT/head_pack.log | cut -c1-200
# What ran (2026-12-03, 775b2ca, one call, 256 s): head_pack chunk_state, nine configs checked and timed beside
# mamba-ssm's Triton (head_pack_chunk_state-775b2ca.json.gz, head_pack.log), then the 18 Mamba2 GPU tests: 18 passed
# (gpu-tests.txt.gz).
