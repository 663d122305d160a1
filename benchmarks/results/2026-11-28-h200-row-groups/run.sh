#!/bin/bash
# GEMMs whose output rows start off 16-byte boundaries (GPT-2's lm_head, N = 50257; a vocabulary of 32001) stored by
# TMA in tiles of rows 8 apart (templates/gemm.py, _gemm_row_groups), on ONE H200 (nvidia-h200), from the project
# root; each step one device call:
#   probe: bash benchmarks/results/2026-11-28-h200-row-groups/run.sh probe   (nothing carried; the machine's nvcc)
#     tma_residue.cu: a TMA box over a [R / 8, 8 N] view whose start lies 0, 2 or 8 bytes off a 16-byte boundary
#     (probe.txt; each case its own process, an illegal instruction ends the context); tma_store_bench.cu: 128 x 256
#     tiles stored from shared memory into 2048 x 50304 (aligned) or 2048 x 50257 (probe-store.txt).
#     probe-store.txt's modes 6-8 (rows 8, 16 and 64 apart) came in a call of their own at 34a8db0 (probe-groups.txt).
#   ragged-3e333f1: bash benchmarks/results/2026-11-28-h200-row-groups/run.sh ragged 3e333f1 before, carrying
#     .gpu-bundle and .probe (.probe/before holds templates/gemm.py and passes/extract.py of 6d16b71, the element
#     stores): the ragged experiment's two odd-row pairs at 3e333f1 (rows 8 apart), then with 6d16b71's files
#     copied over the tree (before/).
#   ragged-COMMIT: ... run.sh ragged COMMIT: the same pairs at COMMIT, twice (after/, again/).
#   gpu-tests-COMMIT: ... run.sh tests COMMIT: the GEMM and linear/matmul GPU tests.
#   gpu-tests-ops-f77d763: source benchmarks/gpu-env.sh && env_setup; OUT=$OUT bash benchmarks/gpu-tests.sh 6 240
#     tests/test_ops_gpu.py -k "linear or matmul" (linear at GPT-2's lm_head and at 1001 outputs through the op);
#     then python -m benchmarks.experiments.row_groups $OUT lm_head again (0.797, 0.961, 0.997 of the twin).
#   row_groups-COMMIT: ... run.sh groups COMMIT: python -m benchmarks.experiments.row_groups $OUT (the twin, element
#     stores, rows 8 and 16 apart, each shape at one pinned tile, timed in alternating rounds in one process):
#     at 7766294 it stopped in its timing with an illegal memory access (row_groups-7766294.log): it captured each
#     kernel's CUDA graph over input sets it then dropped, and the replays read freed memory (each kernel alone,
#     isolate.py: correct, eagerly and from a graph; compute-sanitizer's memcheck on six row-group kernels: 0
#     errors). pt_tvm.measure.Graphed now keeps its sets (17b649c). row_groups-17b649c: the same command at
#     17b649c, both shapes in one process (its JSON header names 47ac658: PT_TVM_GIT_COMMIT was mistyped; the tree
#     was 17b649c).
set -u
D=benchmarks/results/2026-11-28-h200-row-groups
case $1 in
  probe)
    for f in tma_residue tma_store_bench; do nvcc -gencode=arch=compute_90a,code=sm_90a -O2 -o /tmp/$f $D/$f.cu; done
    for c in 0 1 2 3 4 5 6; do /tmp/tma_residue $c; done 2>&1 | tee $OUT/probe.txt
    for r in 1 2; do for m in 0 2 3 4 5 6 7 8; do /tmp/tma_store_bench $m; done; done 2>&1 | tee $OUT/probe-store.txt ;;
  ragged)
    source benchmarks/gpu-env.sh && env_setup
    export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$2
    odd() { python -c "import sys; from benchmarks.experiments import ragged
ragged.main(sys.argv[1], [], pairs=[p for p in ragged.PAIRS if 'C rows odd' in p[3]])" $1 2>&1 | grep -v INFO; }
    mkdir -p $OUT/after && odd $OUT/after | tee $OUT/after/ragged.log
    if [ "${3:-}" = before ]; then
      cp .probe/before/templates/gemm.py templates/gemm.py && cp .probe/before/passes/extract.py passes/extract.py
      mkdir -p $OUT/before && PT_TVM_GIT_COMMIT=6d16b71 odd $OUT/before | tee $OUT/before/ragged.log
    else
      mkdir -p $OUT/again && odd $OUT/again | tee $OUT/again/ragged.log
    fi ;;
  groups)
    source benchmarks/gpu-env.sh && env_setup
    PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$2 python -m benchmarks.experiments.row_groups $OUT 2>&1 \
      | grep -v INFO | tee $OUT/row_groups.log ;;
  tests)
    source benchmarks/gpu-env.sh && env_setup
    export PT_TVM_GIT_COMMIT=$2
    OUT=$OUT bash benchmarks/gpu-tests.sh 12 300 tests/test_shapes_gpu.py tests/test_ops_gpu.py -k "gemm or linear or matmul" ;;
esac
