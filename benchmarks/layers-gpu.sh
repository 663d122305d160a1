#!/bin/bash
# The layers suite (issue 14, item 4) on ONE H100 (nvidia-h100-x1): whole LLaMA-3-8B decoder layers and Mamba2-1.3B
# mixers, pt-tvm's ops (eager and under torch.compile) against eager PyTorch, torch.compile (default and
# max-autotune) and mamba-ssm, every output checked against float32 (benchmarks/layers/). Device calls on one warm
# machine, each carrying .gpu-bundle and .peers/packed (made once here by ../shared/gpu/make-bundle.sh and
# benchmarks/fetch_mamba_ssm.sh; without it the mamba-ssm rows say it is not installed), each at most
# 8 min (every Inductor compile is cold and per shape; each system settles 0.5 s before each timing round: the
# default grid takes four calls):
#   bash benchmarks/layers-gpu.sh tests          COMMIT   GPU tests of the suite: every system at 1 x 512
#   bash benchmarks/layers-gpu.sh llama          COMMIT   LLaMA-3-8B layer, batch 1: seqlen 512, 777, 2048, 2500, 4096
#   bash benchmarks/layers-gpu.sh llama-batched  COMMIT   LLaMA-3-8B layer, 4 x 2048 and 16 x 4096, with max-autotune
#   bash benchmarks/layers-gpu.sh mamba2         COMMIT   the same two for the Mamba2-1.3B mixer
#   bash benchmarks/layers-gpu.sh mamba2-batched COMMIT
# $OUT gets gpu-tests.log, or layers-STEP.json, .log and layers-STEP/ (table.md, charts). A run cut off by its time
# limit keeps the configs it finished (fewest tokens first). All in one report, on any machine:
#   python -m benchmarks merge layers-llama.json layers-llama-batched.json layers-mamba2.json \
#       layers-mamba2-batched.json --out layers.json
#   python -m benchmarks report layers.json --out-dir layers/
set -u
step=${1:-}
export PT_TVM_GIT_COMMIT=${2:-unknown}
source benchmarks/gpu-env.sh
env_setup || exit 1
unset TORCHINDUCTOR_COMPILE_THREADS  # gpu-env's setting for many compiling processes; here Inductor compiles in one
case $step in
  tests) nvidia-smi -L
         timeout 330 python -m pytest -m gpu -q -rA -p no:cacheprovider tests/test_layers_suite.py \
           > $OUT/gpu-tests.log 2>&1
         echo "tests: rc=$?"; grep -E "PASSED|FAILED|SKIPPED|Error" $OUT/gpu-tests.log | cut -c1-200; tail -3 $OUT/gpu-tests.log ;;
  llama|llama-batched|mamba2|mamba2-batched)
         layer=$(case $step in llama*) echo llama3-8b ;; *) echo mamba2-1.3b ;; esac)
         batch=$(case $step in *-batched) echo "4|16" ;; *) echo 1 ;; esac)
         timeout 440 python -m benchmarks run --suite layers --where "kernel=$layer,batch=$batch" --rep-ms 300 \
           --out $OUT/layers-$step.json > $OUT/layers-$step.log 2>&1
         echo "$step: rc=$? (124: cut off at the time limit, finished configs kept)"
         grep -E "^(llama3-8b|mamba2-1.3b) " $OUT/layers-$step.log | cut -c1-220
         python -m benchmarks report $OUT/layers-$step.json --out-dir $OUT/layers-$step | head -1
         sed -n '/^## Against the paper/,/^## llama3-8b\|^## mamba2-1.3b/p' $OUT/layers-$step/table.md | head -12
         tail -4 $OUT/layers-$step.log ;;
  *) echo "usage: bash benchmarks/layers-gpu.sh tests|llama|llama-batched|mamba2|mamba2-batched COMMIT" >&2
     exit 2 ;;
esac
