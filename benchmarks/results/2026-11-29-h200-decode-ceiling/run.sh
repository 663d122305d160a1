#!/bin/bash
# Issue 16, batch 1, kv 16k: how fast ONE kernel can read that config's 64 MiB of K and V on this GPU (read_ceiling.cu,
# raw CUDA, timed from CUDA graphs as pt_tvm.measure times a call), then where pt-tvm's call spends its time
# (benchmarks/experiments/decode_launch.py). One H200 (nvidia-h200), from the project root, carrying .gpu-bundle:
#   bash benchmarks/results/2026-11-29-h200-decode-ceiling/run.sh COMMIT
set -u
here=benchmarks/results/2026-11-29-h200-decode-ceiling
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:${PYTHONPATH:-} PT_TVM_GIT_COMMIT=$1
nvcc -O3 -arch=sm_90a -o /tmp/read_ceiling $here/read_ceiling.cu && /tmp/read_ceiling | tee $OUT/read_ceiling.txt
timeout 300 python -m benchmarks.experiments.decode_launch $OUT 2>&1 | grep -v INFO | tail -40 | tee $OUT/decode_launch.log
# then, in a second call (cluster_read.cu: the splits combined inside the kernel through a cluster's shared memory):
#   source benchmarks/gpu-env.sh && env_setup && nvcc -O3 -arch=sm_90a -o /tmp/cluster_read $here/cluster_read.cu \
#     && /tmp/cluster_read | tee $OUT/cluster_read.txt
# read_ceiling.txt's own "peak" line times a 2 GiB copy as a graph's memcpy node (the copy engines: 2.77 TB/s);
# the bar's peak is torch's copy_ (an SM kernel), 4.26 TB/s in decode_launch.log of the same call: docs/NOTES-parity.md
# "Batch 1, kv 16k: how fast one kernel can read the 64 MiB" reads every figure against that.
