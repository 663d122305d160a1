#!/bin/bash
# FlashAttention's tiles beyond 128 x 128 (192 query rows over three consumer warpgroups at head dim 64, 176 and
# 192 keys at head dim 128, 80 and 96 keys at head dim 256) against the 128-row, 64/128-key tiles and cuDNN SDPA,
# and issue 14's 1500-token pair two and three stages deep; one process on ONE H100 (nvidia-h100-x1), one call
# carrying .gpu-bundle, at 02d3a86 with the uncommitted change that became 9722624, the template's tile space
# then widened to every tile named here and the verify's register overhead at 20 (to admit them; 28 landed):
#   source .gpu-bundle/setup.sh && source benchmarks/gpu-env.sh && env_setup && export PT_TVM_GIT_COMMIT=02d3a86+tiles
python -m benchmarks.experiments.attention_tiles "$1"
# gpu-tests-attention-9722624.txt: the 43 attention GPU tests at 9722624 (tiles as landed), a second call:
#   OUT=$OUT/t bash benchmarks/gpu-tests.sh 15 480 -k "attention"
