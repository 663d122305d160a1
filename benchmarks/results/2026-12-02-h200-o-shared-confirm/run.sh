#!/bin/bash
# FlashAttention without a mask once a persistent walk counts every fragment (verify.fragment_bytes) and the
# template names Q_shared apart from O_shared: the search's picks against its best plan staging the output in
# Q_shared, beside cuDNN SDPA, on the configs whose pick moved (benchmarks/experiments/o_shared_picks.py); then
# the attention GPU tests (walked plans with the output tile of their own, random problems). One H200:
#   source .gpu-bundle/setup.sh && bash benchmarks/results/2026-12-02-h200-o-shared-confirm/run.sh COMMIT
set -u
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | tee $OUT/gpu.txt
timeout 300 python -m benchmarks.experiments.o_shared_picks $OUT "d64 s1024" "d128 s1024" "d64 s4096" whisper \
  vit-l "d128 s1500" 2>&1 | grep -v INFO > $OUT/o_shared_picks.log
PT_TVM_RANDOM_SEEDS=1:9 bash benchmarks/gpu-tests.sh 16 170 tests/test_tile_walk.py tests/test_random_problems.py \
  -k "(walked_plans and flash_attention) or (flash_attention and not varlen and not decode and random)" > /dev/null
head -12 $OUT/gpu-tests.txt
tail -12 $OUT/o_shared_picks.log
