#!/bin/bash
# The batch-1, kv-16k, paged decode config's plans by split count, stages, key tile, combine form and style, on ONE
# H200 (nvidia-h200) at 1ed3c25 + the copy-length fix (benchmarks/experiments/decode_split.py): the plans were searched on
# the CPU machine (plans.json, the committed benchmarks/experiments/decode_split_plans.json), then, carrying .gpu-bundle:
#   python -m benchmarks.experiments.decode_split plan benchmarks/experiments/decode_split_plans.json   # any machine
source benchmarks/gpu-env.sh && env_setup
python -m benchmarks.experiments.decode_split run benchmarks/experiments/decode_split_plans.json $OUT/ds
