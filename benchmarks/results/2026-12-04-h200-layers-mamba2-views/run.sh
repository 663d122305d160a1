#!/bin/bash
# The Mamba2-1.3B mixer's SSD ops reading x, B and C where they lie, as columns of the convolved in-projection
# (chunk_state and chunk_scan built at the view's strides), where pt-tvm's systems copied them into packed tensors
# before; the layers suite's Mamba2 rows on ONE H200 (nvidia-h200), every output checked against float32. The
# other systems as before (mamba-ssm's and torch's conv: PyTorch's). Device calls carrying .gpu-bundle and
# .peers/packed (benchmarks/fetch_mamba_ssm.sh):
#   bash benchmarks/results/2026-12-04-h200-layers-mamba2-views/run.sh tests COMMIT 150   the SSD ops' GPU tests
#   bash benchmarks/results/2026-12-04-h200-layers-mamba2-views/run.sh 1 COMMIT 440       batch 1, 512-4096 tokens
#   bash benchmarks/results/2026-12-04-h200-layers-mamba2-views/run.sh 4 COMMIT 330       4 x 2048, max-autotune too
#   bash benchmarks/results/2026-12-04-h200-layers-mamba2-views/run.sh 16 COMMIT 330      16 x 4096, the same
# (each layers-bB.json gzipped), then, on any machine, the Mamba2 rows over the current grid:
#   python -m benchmarks merge ../2026-12-03-h200-layers-mamba2-batched-conv/layers.json.gz \
#       --rerun layers-b1.json.gz --rerun layers-b4.json.gz --rerun layers-b16.json.gz --out layers.json
#   gzip -9 layers.json; python -m benchmarks report layers.json.gz --out-dir layers/
set -u
step=$1 limit=$3
export PT_TVM_GIT_COMMIT=$2
source benchmarks/gpu-env.sh
env_setup || exit 1
nvidia-smi -L
if [ "$step" = tests ]; then
  export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_CACHE_DIR=$(mktemp -d)
  bash benchmarks/gpu-tests.sh 8 "$limit" tests/test_ops_gpu.py tests/test_layers_suite.py \
    -k "ssd or chunk or mamba" | tail -4
  grep -E "REL_ERR|FAILED" $OUT/gpu-tests.txt | head -20
  exit 0
fi
unset TORCHINDUCTOR_COMPILE_THREADS  # gpu-env's setting for many compiling processes; here Inductor compiles in one
timeout $limit python -m benchmarks run --suite layers --where "kernel=mamba2-1.3b,batch=$step" --rep-ms 300 \
  --out $OUT/layers-b$step.json > $OUT/layers-b$step.log 2>&1
echo "b$step: rc=$? (124: cut off at the time limit, finished configs kept)"
grep -E "^mamba2-1.3b " $OUT/layers-b$step.log | cut -c1-220
tail -4 $OUT/layers-b$step.log
# What ran (2026-12-04, twenty-third session, ba74c62 (f9f99aa's code; ba74c62 changes a test only), three calls on
# one H200 each: batch 1 (357 s), batch 16 (266 s), then tests and batch 4 in one (490 s; a first call's files at
# f9f99aa were lost before they were copied, its figures within 1% of these): gpu-tests-ba74c62.txt.gz (no failures,
# the Mamba2 small-config layer test not reached in its 150 s), layers-b1/b4/b16.json.gz and .log, every system's
# output checked against float32; merged over 2026-12-03-h200-layers-mamba2-batched-conv as above (layers.json.gz,
# layers/).
