#!/bin/bash
# The attention-core suite (issue 15's attention bar: pt-tvm over the best of cuDNN SDPA and flash-attn-4) at HEAD on
# one H100 (nvidia-h100-x1), the first H100 run since cb5b2ef (2026-11-27-x4-suites, 0.95x) and the H100 twin of
# 2026-12-02-h200-attention-core (abed0d3; the library's kernels unchanged since: refactors and the walked twins'
# adoption, whose tuner candidates are the same). Harness and systems as that run: four interleaved shards, two one
# after the other a call, merged after (`python -m benchmarks merge`); the tuner measures the search's best two
# plans. flash-attn-4 travels in two halves (../shared/gpu/make-peers-bundle.sh), so four device calls back to back
# on one warm machine:
#   setup       carry .gpu-bundle     the TileLang bundle unpacked; the GPU tests of the templates, ops, shapes and
#                                     Mamba2 (the first half of 2026-12-02-h200-gpu-tests), gpu-tests-1.txt.gz
#   peers       carry .gpu-peers/a    flash-attn-4's first half stored
#   attention0  carry .gpu-peers/b    its second half, then attention-core shards 0/4 1/4
#   attention1  carry nothing         attention-core shards 2/4 3/4
# each as: bash benchmarks/results/2026-12-02-h100-attention-core/run.sh STEP COMMIT
set -u
export PT_TVM_GIT_COMMIT=$2
[ $1 = peers ] && { source .gpu-peers/a/peers.sh; exit; }
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
if [ $1 = setup ]; then
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
  OUT=$OUT bash benchmarks/gpu-tests.sh 16 330 tests/test_templates_gpu.py tests/test_ops_gpu.py \
    tests/test_shapes_gpu.py tests/test_mamba2.py
  mv $OUT/gpu-tests.txt $OUT/gpu-tests-1.txt && gzip -f $OUT/gpu-tests-1.txt
  exit
fi
python -c "import flash_attn.cute" || exit 1
for s in $([ $1 = attention0 ] && echo 0 1 || echo 2 3); do
  timeout 285 python -m benchmarks run --suite attention-core --shard $s/4 --tune-top-k 2 --rep-ms 200 \
    --systems pt-tvm,pt-tvm-model,cudnn-sdpa,fa3 --out $OUT/attention-core-$s.json > $OUT/attention-core-$s.log 2>&1
done
for s in 0 1 2 3; do
  [ -f $OUT/attention-core-$s.json ] || continue
  echo "attention-core-$s: $(python -c "import json;h=json.load(open('$OUT/attention-core-$s.json'))['header'];print('wall_s',h.get('wall_s'),'partial',h.get('partial'))")"
  grep -h "geomean" $OUT/attention-core-$s.log | cut -c1-160
done
# What ran (2026-12-02, sixteenth session, one nvidia-h100-x1 machine, four calls at 3dbfdde): setup 302 s (153 GPU
# tests, 153 passed), peers 1 s, attention0 558 s (shards 255.5 and 247.8 s), attention1 590 s (271.6 and 278.3 s);
# then here: `python -m benchmarks merge`, `report --out-dir attention-core`, `model-check > model-check.md`.
