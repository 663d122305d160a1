#!/bin/bash
# The causal_conv1d pick after a float division counts as an SFU reciprocal (2f41aa1: SiLU's two MUFU ops an
# element, where one was priced): the search's pick (the op), the plan it picked at 244e808 (benchmarks/experiments/
# conv1d.py's PICK_244E808), its best plan of each other kind, PyTorch and torch.compile at the Mamba2-1.3B layer's
# shapes, every output checked against float32, on ONE H200 (nvidia-h200), one call carrying .gpu-bundle, from the
# project root:
#   bash benchmarks/results/2026-12-03-h200-conv1d-rcp/run.sh COMMIT
# and in a second call the GPU tests of the op (four shapes, layouts, dtypes, widths) and of the Mamba2 layer:
#   bash benchmarks/results/2026-12-03-h200-conv1d-rcp/run.sh COMMIT tests
set -u
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1 PT_TVM_CACHE_DIR=$(mktemp -d)  # no plan of an earlier call
if [ "${2:-}" = tests ]; then
  bash benchmarks/gpu-tests.sh 8 200 tests/test_ops_gpu.py tests/test_layers_suite.py -k "conv1d or mamba2" | tail -4
  exit
fi
timeout 300 python -m benchmarks.experiments.conv1d $OUT 2>&1 | grep -v "INFO\|AutoWarpSpecialization" > $OUT/conv1d.log
echo "rc=$?"; tail -6 $OUT/conv1d.log | cut -c1-900
# What ran (2026-12-03, twenty-first session, one H200): the experiment at 3448353 (213 s, the four configs in 178 s;
# conv1d-3448353.json.gz, conv1d.log), then the tests at 32875a4 (173 s, 5 passed: gpu-tests-32875a4.txt.gz; no
# code between the two commits).
