#!/bin/bash
# GEMMs whose output rows TMA cannot address (GPT-2's lm_head, N = 50257; a vocabulary of 32001), on ONE H200
# (nvidia-h200), from the project root, carrying .gpu-bundle; each step one device call, each at the commit named
# (every store design below was removed after its run: HEAD stores such rows with TileLang's element-wise T.copy):
#   storer-d0e5dfb: bash benchmarks/results/2026-11-28-h200-row-stores/run.sh storer d0e5dfb
#     (benchmarks/experiments/storer.py, pt_tvm.space.storer_variant: the staged tile's element-wise stores issued by
#     two warps of the producer's warpgroup, a storer role, from a one-version pipeline of the staging tile)
#   ragged-47e073c: bash benchmarks/results/2026-11-28-h200-row-stores/run.sh ragged 47e073c
#     (templates.base.tile_store: each row's 16-byte-aligned run in 16-byte stores, 8 element loads a lane)
#   ragged-21fce85 and gpu-tests-21fce85: ... run.sh ragged 21fce85 && ... run.sh tests 21fce85
#     (passes.row_store: a lane's aligned chunk from shared memory, the next lane's by shuffle, 16 bytes stored)
#   row_stores-d0274a2 and ncu-d0274a2: ... run.sh profile d0274a2 (the lm_head at one plan, 128 x 256 persistent:
#     the twin's TMA store, element stores, 21fce85's row stores; then Nsight Compute, one launch each: the kernels
#     named gemm_kernel (132 blocks) are pt-tvm's, in that order, twice; the others are the float32 reference)
#   row_stores-350b286: ... run.sh profile 350b286 (adds the row stores issued by a storer role; its ncu not kept)
#   row_stores-839a52c: python -m benchmarks.experiments.row_stores $OUT (a call stores every 8th row of the tile)
#   row_stores-b61059f: the same plus a diagnostic kernel, the row stores' loads and shuffles with no store
#   row_stores-4ffec59 and gpu-tests-4ffec59: rows shifted in place in shared memory, bulk-copied by the TMA unit
#     (cp.async.bulk, one a row), and the diagnostic without the copies; then run.sh tests
#   gpu-tests-624bba5: the GEMM tests of test_shapes_gpu.py (-k gemm) with the element stores back (HEAD's), the
#     two odd-row cases this change adds among them: OUT=$OUT bash benchmarks/gpu-tests.sh 12 200 \
#     tests/test_shapes_gpu.py -k gemm
# residue_rows-39ea65f, residue_rows-0d358c5: python -m benchmarks.experiments.residue_rows $OUT (removed after):
#   C viewed as [M / 8, 8 N], the tile's rows of one residue mod 8 one 2-D TMA box at an element coordinate; the
#   staged tile swizzled (39ea65f) and linear (0d358c5); both stopped with an illegal instruction at the first call
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
      python -m benchmarks.experiments.row_stores $OUT profile > $OUT/ncu.txt 2>&1 ;;
esac
