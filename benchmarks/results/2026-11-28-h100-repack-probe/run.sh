#!/bin/bash
# A probe, one call on one H100 (nvidia-h100-x1), 2026-11-28, the tree at 9c1c7a9 with probe.py beside it (then
# .scratch/repack.py): `source .gpu-bundle/setup.sh && PYTHONPATH=$PWD:$PYTHONPATH python probe.py`; probe.log is its
# output as the device tool returned it (the copy_ and TileLang outputs checked equal to the source; timings from
# CUDA graphs over four 33 MB operands, alternating rounds, medians). Not a benchmark run: no JSON was written.
# The TileLang kernel (the source read as one flat run, static row count) was 1.7x faster than PyTorch's copy_ into
# the strided rows, which pt_tvm.ops.gemm uses; the op's version of it (the row count an argument, T.dynamic) was
# built (8bd4911) and reverted (the next commit) when no device time was left to run it.
