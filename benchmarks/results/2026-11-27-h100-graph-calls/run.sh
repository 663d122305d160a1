#!/bin/bash
# pt_tvm.measure.capture's longer graphs (at least 0.5 ms of calls a replay, the input sets repeated) against the
# graphs of one call per input set it made before, on batch-1 kv-16k paged decoding (LLaMA-3-8B heads, bf16), ONE
# H100 (asked as nvidia-h200; an H100 came), one device call at 61479ed carrying .gpu-bundle: the capture's GPU
# test (gpu-test.txt), then the experiment, each system timed from graphs of the new length and the call and the
# split kernel also from graphs of two calls, all interleaved in the same rounds:
source .gpu-bundle/setup.sh && export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=61479ed
python -m pytest -q -m gpu -p no:cacheprovider tests/test_tune.py -k graph_of_short
python -m benchmarks.experiments.decode_launch "$OUT"
