#!/bin/bash
# The ragged-shape experiment's attention pairs and the attention GPU tests on ONE H100 (nvidia-h100-x1) at 8301e53
# (the score mask only on the key blocks that need it; pack_gqa in the tile space, the model not yet picking it), one
# call carrying .gpu-bundle. The GQA pair is run twice: as the search picks it (unpacked) and with pack_gqa=1 pinned.
#   source .gpu-bundle/setup.sh && source benchmarks/gpu-env.sh && env_setup && export PT_TVM_GIT_COMMIT=8301e53
python -m benchmarks.experiments.ragged "$1" flash_attention flash_attention_varlen   # then, in the same call:
OUT=$1/t bash benchmarks/gpu-tests.sh 14 230 -k "flash or attention"                  # -> gpu-tests-attention.txt
