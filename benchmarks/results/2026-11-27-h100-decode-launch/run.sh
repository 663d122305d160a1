#!/bin/bash
# Where batch 1, kv 16k, paged decoding (LLaMA-3-8B heads, bf16) spends its time on ONE H100 (asked as nvidia-h200;
# H100s came), three device calls carrying .gpu-bundle, the first two at fe761db (decode_launch-first.json, then
# decode_launch.json with the fused combine's two GPU tests before it: gpu-tests.txt, both passed), the third at
# adf662d (the same template; the experiment took a contiguous cache):
#   source .gpu-bundle/setup.sh && export PYTHONPATH=$PWD:$PYTHONPATH
#   OUT=$OUT bash benchmarks/gpu-tests.sh 2 290 tests/test_decode.py -k fused_combine_matches
#   python -m benchmarks.experiments.decode_launch $OUT
#   python -m benchmarks.experiments.decode_launch $OUT contiguous
# The JSON headers' git_commit was read from the device copy's stale .git (7587152) and is set here by hand to the
# commit each call carried.
source .gpu-bundle/setup.sh && export PYTHONPATH=$PWD:$PYTHONPATH
python -m benchmarks.experiments.decode_launch "$OUT" "$@"
