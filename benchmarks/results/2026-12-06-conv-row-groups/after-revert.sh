#!/bin/bash
# Not run: the session's device time ran out (too little was left to start a machine).
# The conv's GPU tests and random problems at main after the revert (the chunked path; seeds 1-6 draw odd channels and
# strides, 474 channels of a symbolic length among them, never run on a GPU before), in the device time left:
#   bash benchmarks/results/2026-12-06-conv-row-groups/after-revert.sh COMMIT SECONDS
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
nvidia-smi -L
timeout $2 python -m pytest -q -rA -m gpu tests/test_ops_gpu.py tests/test_random_problems.py -k causal_conv1d \
  > $OUT/gpu-tests-after-revert.txt 2>&1
echo "gpu tests: rc=$? (124: cut off) $(tail -1 $OUT/gpu-tests-after-revert.txt)"
grep -E "^(PASSED|FAILED|ERROR)|passed|failed|REL_ERR|PROBLEM" $OUT/gpu-tests-after-revert.txt | cut -c1-200 | tail -30
