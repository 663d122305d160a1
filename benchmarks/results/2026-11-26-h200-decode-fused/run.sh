#!/bin/bash
# The fused split-KV combine on ONE H200 (nvidia-h200) at f67367b, one device call carrying .gpu-bundle:
#   bash benchmarks/gpu-tests.sh 12 240 -k test_decode      (gpu-tests.txt: 13 of 14 passed, the fused combine's
#                                                            two included; one cut off by the limit while compiling)
#   SWEEP_LIMIT_S=290 bash benchmarks/decode-gpu.sh f67367b sweep
# The sweep (splits.json) finished its first config only (batch 1, kv 64k, contiguous: every split count with the
# combine kernel and fused) before the 290 s limit; the other three were not reached.
source benchmarks/gpu-env.sh && env_setup
bash benchmarks/gpu-tests.sh 12 240 -k test_decode
SWEEP_LIMIT_S=290 bash benchmarks/decode-gpu.sh "$@" sweep
