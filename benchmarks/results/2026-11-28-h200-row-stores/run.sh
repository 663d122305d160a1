#!/bin/bash
# GEMMs whose output rows TMA cannot address (GPT-2's lm_head N = 50257, a vocabulary of 32001), on ONE H200
# (nvidia-h200), from the project root, carrying .gpu-bundle; each step one device call:
#   storer-d0e5dfb: bash benchmarks/results/2026-11-28-h200-row-stores/run.sh storer d0e5dfb
#     (benchmarks/experiments/storer.py and pt_tvm.space.storer_variant as they were at d0e5dfb: the staged tile's
#     element-wise stores issued by two warps of the producer's warpgroup; removed after this run)
# ragged-<commit>: GEMM pairs whose C rows are odd (GPT-2's lm_head, a vocabulary of 32001) against their nearest
#   tile multiples, each row's 16-byte-aligned run stored 16 bytes at a time (templates.base.tile_store):
#     bash benchmarks/results/2026-11-28-h200-row-stores/run.sh ragged COMMIT
# gpu-tests-<commit>: the GEMM GPU tests of ragged shapes and of the ops:
#     bash benchmarks/results/2026-11-28-h200-row-stores/run.sh tests COMMIT
# row_stores-<commit>: the lm_head at one plan shape, its staged tile stored three ways, timed, then profiled:
#     bash benchmarks/results/2026-11-28-h200-row-stores/run.sh profile COMMIT
set -u
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$2
case $1 in
  storer) python -m benchmarks.experiments.storer $OUT 2>&1 | grep -v INFO | tee $OUT/storer.log ;;
  ragged) python -c "import sys; from benchmarks.experiments import ragged
ragged.main(sys.argv[1], [], pairs=[p for p in ragged.PAIRS if 'C rows odd' in p[3]])" $OUT 2>&1 | grep -v INFO \
            | tee $OUT/ragged.log ;;
  tests) OUT=$OUT bash benchmarks/gpu-tests.sh 12 300 tests/test_shapes_gpu.py tests/test_ops_gpu.py -k "gemm or linear or matmul" ;;
  profile) python -m benchmarks.experiments.row_stores $OUT 2>&1 | grep -v INFO | tee $OUT/row_stores.log
    timeout 300 ncu --clock-control none -k regex:gemm --section SpeedOfLight --section MemoryWorkloadAnalysis \
      --section WarpStateStats --section SchedulerStats --section LaunchStats \
      python -m benchmarks.experiments.row_stores $OUT profile > $OUT/ncu.txt 2>&1
    grep -v "^==PROF" $OUT/ncu.txt | grep -v INFO | grep -E "gemm_kernel|Duration|Throughput|Stall|Warp Cycles|Issued|Eligible|L1/TEX Hit|L2 Hit|Mem Pipes|Active Warps" | head -120 ;;
esac
