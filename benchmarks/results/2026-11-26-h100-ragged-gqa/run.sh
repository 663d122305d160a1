#!/bin/bash
# The ragged-shape experiment's attention pairs on ONE H100 (nvidia-h100-x1) at 3f45e0f (the cost model pricing
# unequal causal blocks by their share of the work: the search packs GQA at 777 queries over 2500 keys), with the
# GQA pair also pinned unpacked (pack_gqa=0), 15 alternating timing rounds a pair; one call carrying .gpu-bundle:
#   source .gpu-bundle/setup.sh && source benchmarks/gpu-env.sh && env_setup && export PT_TVM_GIT_COMMIT=3f45e0f
python -m benchmarks.experiments.ragged "$1" flash_attention flash_attention_varlen
# gpu-tests-all-b166681.txt: every GPU test (148) at b166681 (the code of 3f45e0f, results and notes after it) on a
# later machine of the same kind, carrying .gpu-bundle and .peers/mamba:
#   source .gpu-bundle/setup.sh && source benchmarks/gpu-env.sh && env_setup && OUT=$OUT/t bash benchmarks/gpu-tests.sh 15 530
# 147 passed, 1 skipped (test_tuning_through_a_tracker_on_the_gpu: it needs tornado, which the GPU machine lacks).
