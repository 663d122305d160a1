#!/bin/bash
# Two calls on one H100 (nvidia-h100-x1) at eff5780, from the project root after `source .gpu-bundle/setup.sh`
# and `export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=eff5780`:
# 1. GPT-2's lm_head (2048 tokens x 768 -> 50257, the weight [N, K] as it lies), against N = 50304, the nearest
#    multiple of 128 (the ragged experiment's pair; C's rows of 100514 bytes are off 16-byte boundaries):
#      python -c "import sys; from benchmarks.experiments import ragged
#      ragged.main(sys.argv[1], [], pairs=[p for p in ragged.PAIRS if p[3].startswith('GPT-2')])" $OUT
# 2. The GPU tests of the ops and of ragged shapes (the gemm template's strided operands among them):
#      OUT=$OUT bash benchmarks/gpu-tests.sh 12 330 tests/test_ops_gpu.py tests/test_shapes_gpu.py
#    (the first call ran them beside the experiment and collected none; this file is the second call's)
