#!/bin/bash
# The attention GPU tests whose kernels come from the search's own pick (the ops' attention, on views, and the
# templates' searched plans) after a walked twin takes its plain twin's refined plans (4f6712a): one H200,
#   source .gpu-bundle/setup.sh && bash benchmarks/results/2026-12-02-h200-gpu-tests-twins/run.sh COMMIT
set -u
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | tee $OUT/gpu.txt
bash benchmarks/gpu-tests.sh 16 170 tests/test_ops_gpu.py tests/test_templates_gpu.py \
  -k "test_attention or test_attention_on_views or (test_searched_plan and flash)" > /dev/null
head -14 $OUT/gpu-tests.txt
