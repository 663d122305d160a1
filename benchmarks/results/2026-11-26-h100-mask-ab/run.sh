#!/bin/bash
# The score mask on every key block (the flash_attention template at ff889f2) against only on the blocks that need
# it (4b73c3b's), same tile and each its searched plan, one process on ONE H100 (nvidia-h100-x1), one call carrying
# .gpu-bundle (the device's checkout holds ff889f2 in its history):
#   source .gpu-bundle/setup.sh && source benchmarks/gpu-env.sh && env_setup && export PT_TVM_GIT_COMMIT=4b73c3b
python -m benchmarks.experiments.mask_ab "$1"
