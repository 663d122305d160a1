#!/bin/bash
# The 16-row decoding tile (branch rowtile16, 3e7eb08, merged with the head-dim branch for the call; kept off main)
# against the 64-row plans at batch 1 x 16k, paged 16, LLaMA-3-8B heads (32/8, d128): seven kinds of plan, each the
# best-priced of its split, key tile, stages and rows, checked against float32 and timed from CUDA graphs beside a
# copy of the same bytes and the 2 GiB copy peak, on one H200 (nvidia-h200), in one call with .gpu-bundle, on the
# tree of that merge with the plans written on the CPU before:
#   python -m benchmarks.experiments.decode_split plan ds-plans.json "sp32 b64 st2" "sp32 b64 st3" "sp16 b64 st4" \
#     "sp32 b64 st2 r16" "sp16 b64 st3 r16" "sp8 b64 st4 r16" "sp32 b64 st2 fused"
#   source benchmarks/gpu-env.sh && env_setup && python -m benchmarks.experiments.decode_split run ds-plans.json $OUT
# decode_split.json's header names 9bdba04, dirty: the commit the merge sat on. The 16-row plans ran 22.8-37.9 us against 20.9 for the 64-row pick (decode_split.json): not landed.
set -u
source benchmarks/gpu-env.sh && env_setup
python -m benchmarks.experiments.decode_split run ds-plans.json $OUT
