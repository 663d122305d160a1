#!/bin/bash
# The ragged-shape experiment's attention pairs on ONE H100 (nvidia-h100-x1) at 3f45e0f (the cost model pricing
# unequal causal blocks by their share of the work: the search packs GQA at 777 queries over 2500 keys), with the
# GQA pair also pinned unpacked (pack_gqa=0), 15 alternating timing rounds a pair; one call carrying .gpu-bundle:
#   source .gpu-bundle/setup.sh && source benchmarks/gpu-env.sh && env_setup && export PT_TVM_GIT_COMMIT=3f45e0f
python -m benchmarks.experiments.ragged "$1" flash_attention flash_attention_varlen
