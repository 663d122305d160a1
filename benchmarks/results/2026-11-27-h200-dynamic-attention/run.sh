#!/bin/bash
# Dense attention through ops.attention with dynamic_tokens off and on (the varlen kernel of the lengths' buckets)
# against SDPA, at dccdf29 on ONE H200 (nvidia-h200), carrying .gpu-bundle; the GPU test of the op first (passed):
#   python -m pytest -q -m gpu "tests/test_ops_gpu.py::test_dynamic_tokens_attention_one_varlen_kernel_a_bucket"
# (The JSON header's git_commit is the device checkout's stale one; the commit carried was dccdf29.)
python -m benchmarks.experiments.dynamic_attention $OUT
