#!/bin/bash
# Issue 16, batch 1, kv 16k: how fast one kernel reads the cache's 64 MiB in the layout the split kernel reads it
# (layout_read.cu: a head's 256 bytes of each token row, 2 KB apart, against contiguous shares and whole rows), then
# Nsight Compute of the split kernel itself (benchmarks/experiments/decode_profile.py, one launch, --set full).
# ONE H200 (nvidia-h200), one call carrying .gpu-bundle, from the project root:
#   bash benchmarks/results/2026-11-29-h200-decode-layout/run.sh COMMIT
set -u
here=benchmarks/results/2026-11-29-h200-decode-layout
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1
nvcc -O3 -arch=sm_90a -o /tmp/layout_read $here/layout_read.cu && /tmp/layout_read | tee $OUT/layout_read.txt
timeout 300 ncu --nvtx --nvtx-include "profile/" --set full --import-source no -f -o $OUT/split \
  python -u -m benchmarks.experiments.decode_profile > $OUT/profile.log 2>&1
echo "ncu rc=$?"; grep -v "INFO\|^==PROF== Profiling" $OUT/profile.log | tail -4 | cut -c1-200
ncu -i $OUT/split.ncu-rep --page details --print-details all > $OUT/details.txt 2>&1
ncu -i $OUT/split.ncu-rep --page raw --csv > $OUT/raw.csv 2>&1 && gzip -f $OUT/raw.csv
grep -E "Duration|DRAM Throughput|Memory Throughput|L2 Cache Throughput|Compute \(SM\) Throughput|Issue Slots Busy|Achieved Occupancy|Registers Per|No Eligible|Warp Cycles Per Issued|Stall" $OUT/details.txt | head -30
