#!/bin/bash
# The layers suite (issue 14, item 4) on ONE H100 (nvidia-h100-x1): whole LLaMA-3-8B decoder layers and Mamba2-1.3B
# mixers, pt-tvm's ops (eager and under torch.compile) against eager PyTorch, torch.compile (default and
# max-autotune) and mamba-ssm, every output checked against float32 (benchmarks/layers/). Device calls on one warm
# machine, each carrying .gpu-bundle and .peers/mamba (made once here by ../shared/gpu/make-bundle.sh and
# benchmarks/fetch_mamba_ssm.sh; without .peers/mamba the mamba-ssm rows say it is not installed):
#   bash benchmarks/layers-gpu.sh tests  COMMIT   GPU tests of the suite: every system at 1 x 512, ~3 min
#   bash benchmarks/layers-gpu.sh llama  COMMIT   the default grid of the LLaMA-3-8B layer, at most 6 min
#   bash benchmarks/layers-gpu.sh mamba2 COMMIT   the same for the Mamba2-1.3B mixer, at most 6 min
# $OUT gets gpu-tests.log, or layers-STEP.json, .log and layers-STEP/ (table.md, charts). A run cut off by its time
# limit keeps the configs it finished (fewest tokens first). Both layers in one report, on any machine:
#   python -m benchmarks merge layers-llama.json layers-mamba2.json --out layers.json
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
  llama|mamba2)
         layer=$([ $step = llama ] && echo llama3-8b || echo mamba2-1.3b)
         timeout 320 python -m benchmarks run --suite layers --where kernel=$layer --rep-ms 300 \
           --out $OUT/layers-$step.json > $OUT/layers-$step.log 2>&1
         echo "$step: rc=$? (124: cut off at the time limit, finished configs kept)"
         grep -E "^(llama3-8b|mamba2-1.3b) " $OUT/layers-$step.log | cut -c1-220
         python -m benchmarks report $OUT/layers-$step.json --out-dir $OUT/layers-$step | head -1
         sed -n '/^## Against the paper/,/^## llama3-8b\|^## mamba2-1.3b/p' $OUT/layers-$step/table.md | head -12
         tail -4 $OUT/layers-$step.log ;;
  *) echo "usage: bash benchmarks/layers-gpu.sh tests|llama|mamba2 COMMIT" >&2; exit 2 ;;
esac
