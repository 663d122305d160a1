#!/bin/bash
# The SSD ops on the kernels of their length's bucket, at c955a03 on ONE H200 (nvidia-h200), one device call
# carrying .gpu-bundle and .peers/mamba (benchmarks/fetch_mamba_ssm.sh). (The JSON headers' git_commit is the
# device checkout's stale one.)
source benchmarks/gpu-env.sh && env_setup
# the ops' GPU tests of the SSD and dynamic-token ops (passing tests/test_ops_gpu.py outside a ::test id made every
# process run its ten tests besides its share of the 30 other -k matches; 20 of those were not reached: not run)
OUT=$OUT bash benchmarks/gpu-tests.sh 10 200 tests/test_ops_gpu.py -k "dynamic or ssd or chunk"
python -m benchmarks.experiments.dynamic_ssd $OUT/ssd
python -m benchmarks.experiments.dynamic_attention $OUT/att
