#!/bin/bash
# The ragged-shape experiment's FlashAttention, varlen and chunk_state pairs (never run before) on ONE H100
# (nvidia-h100-x1) at 81554ae, one call carrying .gpu-bundle:
#   source benchmarks/gpu-env.sh && env_setup && export PT_TVM_GIT_COMMIT=81554ae
python -m benchmarks.experiments.ragged "$1" flash_attention flash_attention_varlen chunk_state
