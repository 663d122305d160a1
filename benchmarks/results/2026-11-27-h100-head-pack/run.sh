#!/bin/bash
# chunk_scan with block_H heads of one group a block (benchmarks/experiments/head_pack.py), then the Mamba2
# templates' GPU tests, on ONE H100 (nvidia-h100-x1), each step one device call carrying .gpu-bundle and
# .peers/mamba, from the project root:
#   bash benchmarks/results/2026-11-27-h100-head-pack/run.sh experiment COMMIT
#   bash benchmarks/results/2026-11-27-h100-head-pack/run.sh tests COMMIT
#   bash benchmarks/results/2026-11-27-h100-head-pack/run.sh profile COMMIT   (Nsight Compute, one launch a kernel)
set -u
source benchmarks/gpu-env.sh && env_setup
git_commit=$2
case $1 in
  experiment)
    timeout 540 python -m benchmarks.experiments.head_pack $OUT > $OUT/head_pack.log 2>&1
    echo "rc=$? (at $git_commit)"; grep -v "INFO\|AutoWarpSpecialization" $OUT/head_pack.log | tail -20 ;;
  tests)
    OUT=$OUT bash benchmarks/gpu-tests.sh 16 420 tests/test_mamba2.py::test_gpu_tilelang_schedule \
      tests/test_mamba2.py::test_gpu_pt_tvm_plan
    grep -h "REL_ERR" $OUT/gpu-tests.txt | sort | uniq ;;
  profile)
    timeout 500 ncu --clock-control none -k regex:chunk_scan --section SpeedOfLight --section Occupancy \
      --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
      --section LaunchStats python benchmarks/results/2026-11-27-h100-head-pack/profile.py 1 2 \
      > $OUT/ncu.txt 2>&1
    echo "rc=$? (at $git_commit)"
    grep -E "block_H=|Duration|Throughput|Pipe|Issue|Stall|Occupancy|Registers|Warp Cycles|Eligible|No Eligible" \
      $OUT/ncu.txt | grep -v "^==PROF" | head -90 ;;
esac
