#!/bin/bash
# The layers whose GEMM picks moved with swapped tiles at multiples of 64 and SWAPPED_TILE_FACTOR (616f11a:
# LLaMA-3-8B's QKV + RoPE at 512 tokens swapped; at 2500 tokens its o and down projections and Mamba2's in- and
# out-projections plain, where they were swapped), with the unchanged 512-token Mamba2 config beside them: the layers
# suite at batch 1, 512 and 2500 tokens, every system, on ONE H200 (nvidia-h200), every output checked against
# float32. One device call carrying .gpu-bundle and .peers/mamba (benchmarks/fetch_mamba_ssm.sh):
#   bash benchmarks/results/2026-12-04-h200-layers-swap-tiles/run.sh COMMIT 420
# then, on any machine, the four configs over the current grid:
#   python -m benchmarks merge ../2026-12-04-h200-layers-mamba2-views/layers.json.gz --rerun layers-b1.json.gz \
#       --out layers.json
#   gzip -9 layers.json; python -m benchmarks report layers.json.gz --out-dir layers/
set -u
limit=$2
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
nvidia-smi -L
unset TORCHINDUCTOR_COMPILE_THREADS  # gpu-env's setting for many compiling processes; here Inductor compiles in one
timeout $limit python -m benchmarks run --suite layers --where "batch=1,seqlen=512|2500" --rep-ms 300 \
  --out $OUT/layers-b1.json > $OUT/layers-b1.log 2>&1
echo "b1: rc=$? (124: cut off at the time limit, finished configs kept)"
grep -E "^(llama3-8b|mamba2-1.3b) " $OUT/layers-b1.log | cut -c1-220
tail -4 $OUT/layers-b1.log
