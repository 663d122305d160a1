#!/bin/bash
# chunk_scan at 4000 tokens against 4096, same tiles and plan, one launch each under Nsight Compute (--set full,
# clocks as they run; profile.py checks each output against float32 first). One H200 (nvidia-h200), one call
# carrying .gpu-bundle:
#   bash benchmarks/results/2026-11-30-h200-chunk-scan-ragged/run.sh COMMIT
set -u
here=benchmarks/results/2026-11-30-h200-chunk-scan-ragged
source benchmarks/gpu-env.sh && env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | tee $OUT/gpu.txt
ncu --version | tail -1
timeout 400 ncu --nvtx --nvtx-include "profile/" --set full --import-source no --clock-control none -f \
  -o $OUT/chunk_scan python $here/profile.py > $OUT/profile.log 2>&1
echo "rc=$? (at $1)"; grep -v "INFO\|^==PROF== Profiling" $OUT/profile.log | tail -6
ncu -i $OUT/chunk_scan.ncu-rep --page raw --csv > $OUT/raw.csv 2>&1 && gzip $OUT/raw.csv
ncu -i $OUT/chunk_scan.ncu-rep --page details --print-details all > $OUT/details.txt 2>&1 && gzip $OUT/details.txt
rm -f $OUT/chunk_scan.ncu-rep
python $here/profile.py compare $OUT/raw.csv.gz | tee $OUT/compare.txt
