#!/bin/bash
# Every GPU test at 8f18b83 (2026-12-02, fifteenth session: 282 tests, 281 passed, 1 skipped) on ONE H200 (nvidia-h200, 16 cores: the tests are compile-bound), in two device calls
# each carrying .gpu-bundle, their summaries in gpu-tests-1.txt.gz and gpu-tests-2.txt.gz:
#   bash benchmarks/results/2026-12-02-h200-gpu-tests/run.sh 1 COMMIT   # templates, ops, shapes, Mamba2
#   bash benchmarks/results/2026-12-02-h200-gpu-tests/run.sh 2 COMMIT   # decode, random problems and the plan kinds
set -u
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$2
case $1 in
  1) files="tests/test_templates_gpu.py tests/test_ops_gpu.py tests/test_shapes_gpu.py tests/test_mamba2.py" ;;
  2) files="tests/test_decode.py tests/test_random_problems.py tests/test_carry.py tests/test_handoff.py
            tests/test_multicast.py tests/test_stream_k.py tests/test_tile_walk.py tests/test_tune.py
            tests/test_worker.py tests/test_layers_suite.py" ;;
esac
OUT=$OUT bash benchmarks/gpu-tests.sh 16 500 $files
mv $OUT/gpu-tests.txt $OUT/gpu-tests-$1.txt && gzip -f $OUT/gpu-tests-$1.txt
