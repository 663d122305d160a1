#!/bin/bash
# pt-tvm's cost-model search on this 2-core CPU (no GPU) before and after 4f6712a (a walked twin, FlashAttention's
# tile with o_shared=1, takes the best launched plans of its plain twin's refinement instead of refining the same
# loop again), one after the other, nothing else running (the machine's speed drifts: identical searches of GEMM and
# decoding ran up to 1.5x apart between the two runs; the plan counts are exact):
#   (cd abed0d3-worktree && PT_TVM_GIT_COMMIT=abed0d3 python -m benchmarks search-time --target h100 \
#      --out search-time-h100-abed0d3.json)      (abed0d3: the search of 684f5d0)
#   PT_TVM_GIT_COMMIT=4f6712a python -m benchmarks search-time --target h100 --out search-time-h100-4f6712a.json
# table-*.md: each run's table. Every config found the same best plan at the same predicted time both ways.
# The tuner's candidates (the best four of tune.diverse_top: note, tile, price) were checked the same on the 81
# configs of benchmarks.experiments.search_bound's set (every attention-core, gemm and mamba config, every eleventh
# of the decode grid; H200 model), abed0d3 against 4f6712a: 0 of 81 differ; FlashAttention's 26 configs priced
# 60,811 plans before, 45,816 after.
