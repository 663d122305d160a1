#!/bin/bash
# Issue 15's suites on a 2-GPU H200 machine (nvidia-h200-x2; the 4-GPU kinds were not lent) at cb5b2ef, the commit
# of the H100 run in 2026-11-27-x4-suites, so that H100 and H200 suite JSONs stand at one commit. The tree of
# cb5b2ef travels as the ignored folder .at-cb5b2ef (`git archive cb5b2ef pyproject.toml README.md pt_tvm templates
# passes benchmarks ':(exclude)benchmarks/results' | tar -x -C .at-cb5b2ef`); every step runs in it, installed
# editable there. The H100 run's harness and shards (each suite in four interleaved shards, one a GPU,
# CUDA_VISIBLE_DEVICES; every ratio compares systems of one config timed on one GPU), two shards a call here,
# side by side; the four parts merged after (`python -m benchmarks merge`). Systems: the H100 run's without
# TileLang's own schedules (tilelang-auto, tilelang-ws; in no bar, and the device time of a session is 30 minutes).
# Device calls back to back on one warm machine:
#   gemm        carry .gpu-bundle .at-cb5b2ef                 gemm-core shards 0/4 1/4, then 2/4 3/4
#   mamba       carry .gpu-peers/a .peers/mamba .at-cb5b2ef   mamba shards 0-3 (and flash-attn-4's first half)
#   attention0  carry .gpu-peers/b .at-cb5b2ef                attention-core shards 0/4 1/4
#   attention1  carry .at-cb5b2ef                             attention-core shards 2/4 3/4
# each as: bash benchmarks/results/2026-11-28-h200-x2-suites/run.sh STEP HEAD_COMMIT
# Where the machine's GPUs are H100s (an H200 kind may be served by H100s) the run is of HEAD instead (its commit
# the second argument): a second H100 run of cb5b2ef would add nothing.
set -u
step=$1
here=$PWD
if nvidia-smi -L | grep -q H200; then
  cd .at-cb5b2ef || exit 1
  for d in .gpu-bundle .gpu-peers .peers; do [ -e $here/$d ] && ln -sfn $here/$d $d; done
  export PT_TVM_GIT_COMMIT=cb5b2ef
else
  export PT_TVM_GIT_COMMIT=${2:-unknown}
fi
echo "tree: $PWD, commit $PT_TVM_GIT_COMMIT"
source benchmarks/gpu-env.sh
env_setup || exit 1
gpus=$(nvidia-smi -L | wc -l)
shards() {  # NAME LIMIT_S SYSTEMS SHARD...: one shard a GPU, side by side, each into $OUT/NAME-SHARD.json
  local name=$1 limit=$2 systems=$3 i=0 s
  shift 3
  for s in "$@"; do
    CUDA_VISIBLE_DEVICES=$i timeout $limit python -m benchmarks run --suite $name --shard $s/4 --tune-top-k 4 \
      --rep-ms 200 --systems $systems --out $OUT/$name-$s.json > $OUT/$name-$s.log 2>&1 &
    i=$(( (i + 1) % gpus ))
    [ $i = 0 ] && wait
  done
  wait
  for s in "$@"; do
    echo "$name-$s: $(python -c "import json;h=json.load(open('$OUT/$name-$s.json'))['header'];print('wall_s',h.get('wall_s'),'partial',h.get('partial'))")"
  done
}
case $step in
  gemm) nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
      shards gemm-core 280 pt-tvm,pt-tvm-model,cublas,torch-compile 0 1 2 3 ;;
  mamba) shards mamba 290 pt-tvm,pt-tvm-model,mamba-triton,torch-compile 0 1 2 3 ;;
  attention0) shards attention-core 560 pt-tvm,pt-tvm-model,cudnn-sdpa,fa3 0 1 ;;
  attention1) shards attention-core 560 pt-tvm,pt-tvm-model,cudnn-sdpa,fa3 2 3 ;;
esac
