#!/bin/bash
# chunk_scan at 4000 tokens against 4096, same tiles and plan, one launch each under Nsight Compute (--set full,
# clocks as they run; profile.py checks each output against float32 first), then, once the template clamped the
# rows it loads past a ragged sequence's end, the ragged experiment's Mamba2 pairs again (ragged-rows/), then the
# GPU tests of chunk_scan and the SSD ops (gpu-tests.txt.gz). One H200 (nvidia-h200), a call each carrying
# .gpu-bundle:
#   bash benchmarks/results/2026-11-30-h200-chunk-scan-ragged/run.sh COMMIT            (d53b7ca)
#   bash benchmarks/results/2026-11-30-h200-chunk-scan-ragged/run.sh COMMIT rows       (425df91)
#   bash benchmarks/results/2026-11-30-h200-chunk-scan-ragged/run.sh COMMIT tests      (b012999)
set -u
here=benchmarks/results/2026-11-30-h200-chunk-scan-ragged
source benchmarks/gpu-env.sh && env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | tee $OUT/gpu.txt
if [ "${2:-}" = rows ]; then
  mkdir -p $OUT/ragged-rows
  timeout 200 python -m benchmarks.experiments.ragged $OUT/ragged-rows chunk_scan chunk_state 2>&1 | grep -v INFO | tail -4
  exit
fi
if [ "${2:-}" = tests ]; then
  bash benchmarks/gpu-tests.sh 16 ${LIMIT:-170} tests/test_mamba2.py tests/test_ops_gpu.py tests/test_shapes_gpu.py \
    tests/test_random_problems.py -k "chunk_scan or ssd" > /dev/null 2>&1
  gzip -f $OUT/gpu-tests.txt && zcat $OUT/gpu-tests.txt.gz | head -8
  exit
fi
ncu --version | tail -1
timeout 400 ncu --nvtx --nvtx-include "profile/" --set full --import-source no --clock-control none -f \
  -o $OUT/chunk_scan python $here/profile.py > $OUT/profile.log 2>&1
echo "rc=$? (at $1)"; grep -v "INFO\|^==PROF== Profiling" $OUT/profile.log | tail -6
ncu -i $OUT/chunk_scan.ncu-rep --page raw --csv > $OUT/raw.csv 2>&1 && gzip $OUT/raw.csv
ncu -i $OUT/chunk_scan.ncu-rep --page details --print-details all > $OUT/details.txt 2>&1 && gzip $OUT/details.txt
rm -f $OUT/chunk_scan.ncu-rep
python $here/profile.py compare $OUT/raw.csv.gz | tee $OUT/compare.txt
