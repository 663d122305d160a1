#!/bin/bash
# Does the conv over rows TMA cannot address (4 x 4096 x 4353 fp16) follow its blocks an SM or its tile's width?
# (NOTES-shapes, "Why every plan ran 1.3-1.6x its price": the model counts 41-44 registers a thread, ptxas 72-224.)
# One call on one GPU (say which), carrying .gpu-bundle:
#   bash benchmarks/results/2026-12-05-h200-conv-weights/run3.sh COMMIT 540
# 1. threads.py: six tiles' best plans pinned (the pick's at 128 and 256 threads, 32 x 256 at both, 64 x 64 at
#    both), each with ptxas's registers and blocks an SM, timed from CUDA graphs beside torch.compile;
# 2. the conv's GPU tests and its random problems (seeds 1-6 now draw odd channels and strides: 474 channels of a
#    symbolic length among them, never run on a GPU), in the time left.
set -u
limit=$2
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
nvidia-smi -L
start=$(date +%s)
left() { echo $(( limit - ($(date +%s) - start) - 10 )); }
here=benchmarks/results/2026-12-05-h200-conv-weights
PYTHONPATH=.:${PYTHONPATH:-} timeout 300 python $here/threads.py $OUT > $OUT/threads.log 2>&1
echo "threads: rc=$?"
timeout $(left) python -m pytest -q -m gpu tests/test_ops_gpu.py tests/test_random_problems.py -k causal_conv1d \
  > $OUT/gpu-tests.txt 2>&1
echo "gpu tests: rc=$? $(tail -1 $OUT/gpu-tests.txt)"
grep -A10 "^tile (L x D" $OUT/threads.log
