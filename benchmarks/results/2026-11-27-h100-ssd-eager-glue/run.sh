#!/bin/bash
# ops.ssd_chunk_scan's glue compiled by Inductor when called eagerly (9bab998), on ONE H100 (nvidia-h100-x1; the
# session's last device time), one call carrying .gpu-bundle and .peers/mamba. (The JSON header's git_commit is the
# device checkout's stale one; the tree carried was 9bab998.)
source benchmarks/gpu-env.sh && env_setup && unset TORCHINDUCTOR_COMPILE_THREADS
# the SSD ops' GPU tests, the model under torch.compile (the traced path) and the compiled decoding step: 8 passed
OUT=$OUT bash benchmarks/gpu-tests.sh 8 110 tests/test_ops_gpu.py -k "ssd or compile"
# cut off by its 135 s after the 777-token config (the 2500-token one not timed)
timeout 135 python -m benchmarks.experiments.dynamic_ssd $OUT/ssd
