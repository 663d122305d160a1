#!/bin/bash
# The conv over rows TMA cannot address (4 x 4096 x 4353 fp16; 0.753 of its 4352-channel twin on an H100 on
# 2026-12-05) with x read by TMA in groups of 8 tokens (row_groups). One call on one GPU (say which), carrying
# .gpu-bundle:
#   bash benchmarks/results/2026-12-06-conv-row-groups/run.sh COMMIT 560
# 1. the ragged experiment's 4353-channel pair (the search's picks, settled CUDA graphs): the bar's ratio;
# 2. groups.py: six tiles pinned (grouped and the old chunked pick) beside torch.compile, ptxas's registers;
# 3. the conv's GPU tests and random problems, in the time left.
# What ran (2026-12-06, 02:43 UTC): `bash .../run.sh 818ea2e 560` on ONE H200 (the call asked for no kind), wall 268 s,
# rc 0. Every row-group kernel stopped with "CUDA error: an illegal instruction was encountered" (h200/pair-ragged.log,
# h200/groups.log: the first kernel timed, the search's row-group pick, and then every kernel of that process, its
# context lost); of the conv's GPU tests (h200/gpu-tests.txt) the five whose problems take no row groups passed, the
# first that takes them (1 x 1000 x 100, bf16, rows 8520 bytes apart: groups of 2) failed so, and every one after it
# in that process. Main reverted the row groups (the template, extraction, cost and verify changes of 7ef789a and
# 818ea2e) before the session ended: these scripts need 818ea2e's code. NOTES-shapes, "The conv's rows read by TMA
# in groups of tokens".
set -u
limit=$2
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
nvidia-smi -L
start=$(date +%s)
left() { echo $(( limit - ($(date +%s) - start) - 10 )); }
old=benchmarks/results/2026-12-05-h200-conv-weights
here=benchmarks/results/2026-12-06-conv-row-groups
mkdir -p $OUT/pair
PYTHONPATH=.:${PYTHONPATH:-} timeout 200 python $old/pair4353.py $OUT/pair > $OUT/pair/ragged.log 2>&1
echo "pair: rc=$?"
PYTHONPATH=.:${PYTHONPATH:-} timeout 200 python $here/groups.py $OUT > $OUT/groups.log 2>&1
echo "groups: rc=$?"
timeout $(left) python -m pytest -q -m gpu tests/test_ops_gpu.py tests/test_random_problems.py -k causal_conv1d \
  > $OUT/gpu-tests.txt 2>&1
echo "gpu tests: rc=$? $(tail -1 $OUT/gpu-tests.txt)"
grep -E "^  causal_conv1d|^causal_conv1d" $OUT/pair/ragged.log | cut -c1-200
grep -A10 "^tile (L x D" $OUT/groups.log
