#!/bin/bash
# Issue 15's suites at ONE commit, on a 4-GPU H100 machine (nvidia-h100-x4) and then a 4-GPU H200 machine
# (nvidia-h200-x4): each suite in as many interleaved shards as the machine has GPUs, one shard a GPU
# (CUDA_VISIBLE_DEVICES), side by side, merged after. Every ratio compares systems of one config, timed on one
# GPU; shards ran on different GPUs of one machine. The issue-12 harness (NaN-prefilled outputs, every output
# checked, CUDA-graph and queued timing, each system settled 500 ms before each of 5 rounds; the tuner settles
# its candidates likewise). Peers: gemm-core and mamba all but TileLang's autotuner (about 2 minutes a GEMM
# config); attention-core without torch-compile and FlashAttention-2 SDPA (neither is in the bar, the best of
# cuDNN and flash-attn-4; they cost 20 s a config of a session's 30 minutes of device time). Device calls back
# to back on one warm machine (64 MiB carried per call, 600 s per call), in this order:
#   gemm COMMIT        carry .gpu-bundle                  gemm-core
#   mamba COMMIT       carry .gpu-peers/a .peers/mamba    mamba (and the first half of flash-attn-4)
#   attention COMMIT   carry .gpu-peers/b                 attention-core
# each as: source .gpu-bundle/setup.sh; bash benchmarks/results/2026-11-27-x4-suites/run.sh STEP COMMIT
# (the first call's setup.sh unpacks the bundle; later calls find it in /tmp).
set -u
step=$1
export PT_TVM_GIT_COMMIT=${2:-unknown}
source benchmarks/gpu-env.sh
env_setup || exit 1
gpus=$(nvidia-smi -L | wc -l)
sharded() {  # NAME LIMIT_S SYSTEMS: the suite over every GPU, one shard each, merged into $OUT/NAME.json
  local name=$1 i parts=()
  for ((i = 0; i < gpus; i++)); do
    CUDA_VISIBLE_DEVICES=$i timeout $2 python -m benchmarks run --suite $name --shard $i/$gpus --tune-top-k 4 \
      --rep-ms 200 --systems $3 --out $OUT/$name-$i.json > $OUT/$name-$i.log 2>&1 &
    parts+=($OUT/$name-$i.json)
  done
  wait
  for ((i = 0; i < gpus; i++)); do
    echo "$name-$i: $(python -c "import json;h=json.load(open('$OUT/$name-$i.json'))['header'];print('wall_s',h.get('wall_s'),'partial',h.get('partial'))")"
  done
  python -m benchmarks merge --out $OUT/$name.json "${parts[@]}" && rm "${parts[@]}"
  python -m benchmarks report $OUT/$name.json --out-dir $OUT/$name > /dev/null && grep "best peer geomean" $OUT/$name/table.md
}
case $step in
  gemm) nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
      sharded gemm-core 540 pt-tvm,pt-tvm-model,tilelang-auto,tilelang-ws,cublas,torch-compile ;;
  mamba) sharded mamba 540 pt-tvm,pt-tvm-model,tilelang-auto,tilelang-ws,mamba-triton,torch-compile ;;
  attention) sharded attention-core 560 pt-tvm,pt-tvm-model,tilelang-auto,tilelang-ws,cudnn-sdpa,fa3 ;;
esac
# What ran (2026-11-27, one nvidia-h100-x4 machine; the session asked for nvidia-h200-x4 and H100s came): gemm,
# mamba, attention, each followed by `rm -rf $OUT/<suite>` (a call returns 8 files; the reports were written here,
# `python -m benchmarks report`, and the rooflines, `python -m benchmarks roofline mamba.json`). Then on the same
# machine every GPU test (gpu-tests-cb5b2ef.txt):
#   source .gpu-bundle/setup.sh && source benchmarks/gpu-env.sh && env_setup && OUT=$OUT/t bash benchmarks/gpu-tests.sh 32 300
# A second call meant to run the 5 tests not reached passed their ids as PYTEST_ARGS, which gpu-tests.sh hands to
# every process: each ran all five, and the call timed out (240 s) before any summary. The session's device time
# was then spent: no H200 run. Logs here: TileLang's compile and AutoWarpSpecialization lines left out.
