#!/bin/bash
# Branch varlen-trip (3053e26: trip counts of at least one in the varlen attention and split decode kernels) on ONE
# H200 (nvidia-h200), three device calls carrying .gpu-bundle, each started with `source .gpu-bundle/setup.sh`.
# (The JSON headers' git_commit, 6e674bd dirty, is the device checkout's stale one; the tree carried was 3053e26.)
# 1. the GPU tests the change touches (18), then dense attention on the bucket's varlen kernel:
OUT=$OUT bash benchmarks/gpu-tests.sh 12 300 -k "varlen or decode or dynamic_tokens_attention or combine or bucket_plan"
python -m benchmarks.experiments.dynamic_attention $OUT
# 2. the two tests call 1 did not reach in its 300 s (each alone; the paged software-pipelined decode case compiles
#    for 250 s), and the ragged varlen pair:
python -m pytest -v -m gpu --timeout 400 --durations=0 \
  "tests/test_decode.py::test_decode_kernel_matches_the_reference[params5-tile5-software_pipeline]"
python -m pytest -v -m gpu -s "tests/test_shapes_gpu.py::test_varlen_attention_one_kernel_for_every_batch[True]"
python -m benchmarks.experiments.ragged $OUT flash_attention_varlen
# 3. the batch-1 kv-16k paged decode plans: the four best of benchmarks/experiments/decode_split_plans.json
#    (sp32 b64 st2, sp32 b64 st3, sp32 b64 st2 fused, ws16 b64 d2) in a copy of it (ds4.json; the whole set ran out
#    of its 250 s in call 2, compiling beside the tests):
python -m benchmarks.experiments.decode_split run ds4.json $OUT
