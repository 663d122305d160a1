#!/bin/bash
# The causal conv1d over rows TMA cannot address (a row stride off 16-byte units, e.g. 4353 fp16 channels) loaded
# as the aligned 16-byte chunks around each row's tile (cp.async, software-pipelined), where the kernel loaded
# them an element a thread, synchronously (0.202 of its tile-multiple twin on 2026-12-04). One call on ONE H200
# (nvidia-h200), carrying .gpu-bundle:
#   bash benchmarks/results/2026-12-05-h200-conv-chunks/run.sh COMMIT 560
# 1. the op's GPU tests of the conv (three cases of such rows among them), every output against float32;
# 2. the ragged experiment's three conv pairs (4353 channels against 4352), settled CUDA-graph timing;
# 3. at 4 x 4096 x 4353: the search's pick and the best plan of each other tile the search ranks, beside
#    torch.compile of the float32-free reference (benchmarks.experiments.variants.compare), every output checked.
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
timeout $left python - > $OUT/plans.log 2>&1 <<'PY'
import os
from benchmarks.experiments.variants import compare

def picks(result, vdev):
    out, seen = {"pick": result.best}, {str(result.best.plan.tile) + str(result.best.plan.num_stages)}
    for c in result.ranked:
        key = str(c.plan.tile) + str(c.plan.num_stages)
        if key not in seen and len(out) < 6:
            seen.add(key)
            out[f"ranked {len(out)}"] = c
    return out

compare([{"batch": 4, "seqlen": 4096, "channels": 4353, "x_stride": 4353, "dtype": "float16",
          "note": "4353 channels"}], picks, ["pick", *(f"ranked {i}" for i in range(1, 6))], os.environ["OUT"], "plans", "run.sh step 3", deadline_s=200, template="causal_conv1d",
        peer="torch-compile", settle_ms=300.0, rounds=5)
PY
echo "plans: rc=$?"
grep -E "causal_conv1d|ratio|pair" $OUT/ragged.log | tail -8 | cut -c1-200
tail -12 $OUT/plans.log | cut -c1-200
