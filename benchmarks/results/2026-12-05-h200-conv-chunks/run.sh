#!/bin/bash
# The causal conv1d over rows TMA cannot address (a row stride off 16-byte units, e.g. 4353 fp16 channels) loaded
# as the aligned 16-byte chunks around each row's tile (cp.async, software-pipelined), where the kernel loaded
# them an element a thread, synchronously (0.202 of its tile-multiple twin on 2026-12-04). One call on ONE H200
# (nvidia-h200), carrying .gpu-bundle:
#   bash benchmarks/results/2026-12-05-h200-conv-chunks/run.sh COMMIT 560 (steps 1-2; step 3, plans.py, moved to 2026-12-05-h200-conv-weights)
# (loads/: the loads by chunks, 715d540, the stores an element a thread; stores/: the stores by chunks too)
# 1. the op's GPU tests of the conv (three cases of such rows among them), every output against float32;
# 2. the ragged experiment's three conv pairs (4353 channels against 4352), settled CUDA-graph timing;
# 3. at 4 x 4096 x 4353: the search's pick, the next four tiles it ranks and the twin's tile, beside
#    torch.compile of the reference (plans.py), every output checked.
set -u
limit=$2
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
nvidia-smi -L
start=$(date +%s)
timeout 200 python -m pytest -q -m gpu tests/test_ops_gpu.py -k causal_conv1d > $OUT/gpu-tests.txt 2>&1
echo "gpu tests: rc=$? $(tail -1 $OUT/gpu-tests.txt)"
timeout 240 python -m benchmarks.experiments.ragged $OUT causal_conv1d > $OUT/ragged.log 2>&1
echo "ragged: rc=$?"
left=$(( limit - ($(date +%s) - start) - 10 ))
PYTHONPATH=.:${PYTHONPATH:-} timeout $left python benchmarks/results/2026-12-05-h200-conv-weights/plans.py > $OUT/plans.log 2>&1
echo "plans: rc=$?"
grep -E "causal_conv1d|ratio|pair" $OUT/ragged.log | tail -8 | cut -c1-200
tail -12 $OUT/plans.log | cut -c1-200
# What ran (one H200 each):
# - loads/: 715d540 (the loads by chunks, the stores an element a thread), `run.sh 715d540 560`: GPU tests 7
#   passed; ragged pairs 0.980, 1.004, 0.758 (4353 channels: 114.5 us against the twin's 86.8); step 3 stopped at
#   once (it was a here-document then, which spawn's workers cannot re-import; plans.py since).
# - stores/: 1ef31d5 (the stores by chunks too), `run.sh 1ef31d5 400` on a machine with 200 s of the session's
#   device time left: GPU tests 7 passed; the ragged experiment cut off at the limit before its first pair
#   (ragged.log), plans.py not reached. An earlier call at 1ef31d5 was taken back mid-run with nothing returned.
