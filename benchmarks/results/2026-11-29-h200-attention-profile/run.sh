#!/bin/bash
# Issue 15 item 3: pt-tvm's FlashAttention kernel (the cost model's first pick) beside flash-attn-4's Hopper kernel
# under Nsight Compute (--set full, one launch each, clocks as they run), head dim 128 non-causal and 64 and 256
# causal at 4 x 4096 (benchmarks/experiments/attention_profile.py; every output checked against float32 first).
# ONE H200 (nvidia-h200), three device calls on one warm machine, from the project root:
#   1. carry .gpu-bundle:   source benchmarks/gpu-env.sh && env_setup
#   2. carry .gpu-peers/a:  source benchmarks/gpu-env.sh && env_setup
#   3. carry .gpu-peers/b:  bash benchmarks/results/2026-11-29-h200-attention-profile/run.sh COMMIT
# Then, here: python benchmarks/results/2026-11-29-h200-attention-profile/compare.py raw.csv.gz > compare.txt
set -u
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1
ncu --version | tail -1
timeout 480 ncu --nvtx --nvtx-include "profile/" --set full --import-source no --clock-control none -f \
  -o $OUT/attention python -m benchmarks.experiments.attention_profile > $OUT/profile.log 2>&1
echo "rc=$? (at $1)"; grep -v "INFO\|^==PROF== Profiling" $OUT/profile.log | tail -15
ncu -i $OUT/attention.ncu-rep --page details --print-details all > $OUT/details.txt 2>&1
ncu -i $OUT/attention.ncu-rep --page raw --csv > $OUT/raw.csv 2>&1 && gzip $OUT/raw.csv
grep -E "^  [a-zA-Z_]|Duration|Compute \(SM\) Throughput|Issue Slots Busy|Registers Per|No Eligible" $OUT/details.txt \
  | head -60
# A second call (any GPU machine with ncu; the report carried as .probe/attention.ncu-rep, ignored by git) wrote the
# per-opcode counts and the SASS with its stall samples:
#   ncu -i .probe/attention.ncu-rep --page raw --csv --print-metric-instances details \
#     --metrics sass__inst_executed_per_opcode,sass__inst_executed_per_opcode_with_modifier_all > $OUT/opcodes.csv
#   ncu -i .probe/attention.ncu-rep --page source --csv --print-source sass > $OUT/sass.csv
# Kept here: raw.csv.gz (every metric), opcodes.csv, compare.txt (compare.py), hot-loops.txt.gz (the SASS lines each
# kernel executed at least 200,000 times, with their stall samples, cut from sass.csv; the full listing and the
# details page are left out for the size of what travels to the GPU machine).
