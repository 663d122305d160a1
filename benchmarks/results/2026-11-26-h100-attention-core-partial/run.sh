#!/bin/bash
# The attention-core suite on ONE H100 (nvidia-h100-x1) at b166681 (code of 3f45e0f), three calls on one warm
# machine: .gpu-bundle (source .gpu-bundle/setup.sh && source benchmarks/gpu-env.sh && env_setup), then
# .gpu-peers/a (env_setup), then .gpu-peers/b and:
#   source benchmarks/gpu-env.sh && env_setup && export PT_TVM_GIT_COMMIT=b166681
timeout 575 python -m benchmarks run --suite attention-core --tune-top-k 4 --rep-ms 200 --autotune-stages 3 \
  --out "$1/attention-core.json"
# PARTIAL: cut off by its 575 s limit after 9 of the 26 configs (head dim 64 at 1024, 4096, 16384 tokens,
# causal and not, and head dim 128 non-causal); the same suite took 392 s whole on 2026-11-23. Where the time went
# was not measured (pt-tvm's own search, tuning and build took 10-13 s a config).
