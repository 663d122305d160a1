#!/bin/bash
# Swapped GEMM tiles (swap_ab) offered where the token count is a multiple of 64 too, on ONE H200 (nvidia-h200):
# the best plain and swapped plan of the layers' GEMMs whose pick the change moves, with cuBLAS (swap_tiles.py),
# and the ragged experiment's pairs of the templates it had not covered (the layers' own kernels at their ragged
# lengths; decode_attention), every output checked against float32. Device calls carrying .gpu-bundle:
#   bash benchmarks/results/2026-12-04-h200-swap-tiles/run.sh small COMMIT 300   swap_tiles small (512-4096 tokens)
#   bash benchmarks/results/2026-12-04-h200-swap-tiles/run.sh large COMMIT 300   swap_tiles large (16 x 4096 tokens)
#   bash benchmarks/results/2026-12-04-h200-swap-tiles/run.sh ragged COMMIT 540  the new ragged pairs
#   bash benchmarks/results/2026-12-04-h200-swap-tiles/run.sh r2500 COMMIT 300   swap_tiles ragged (2500 tokens)
set -u
step=$1 limit=$3
export PT_TVM_GIT_COMMIT=$2
source benchmarks/gpu-env.sh
env_setup || exit 1
nvidia-smi -L
export PYTHONPATH=$PWD:$PYTHONPATH
if [ "$step" = ragged ]; then
  timeout $limit python -m benchmarks.experiments.ragged $OUT gemm_swiglu gemm_rope flash_attention_qkv \
    causal_conv1d decode_attention > $OUT/ragged.log 2>&1
  echo "ragged: rc=$?"; tail -16 $OUT/ragged.log | cut -c1-230
  exit 0
fi
part=${step/r2500/ragged}
timeout $limit python -m benchmarks.experiments.swap_tiles $OUT $part > $OUT/swap_tiles-$part.log 2>&1
echo "swap_tiles $part: rc=$?"
grep -A30 "^TFLOP/s over" $OUT/swap_tiles-$part.log | cut -c1-230
# What ran (2026-12-04, twenty-fourth session, four calls on one H200 each): small and large at bed704f (140 s, 166
# s: the search then priced swapped tiles without SWAPPED_TILE_FACTOR), ragged at b51a54a (403 s: swapped tiles
# then stretched and priced 1.03x, which gave SwiGLU at 777 tokens a plain tile), r2500 at 616f11a (the factor at
# 1.05, unstretched), followed in the same call by
#   timeout 250 python -m benchmarks.experiments.ragged $OUT/swiglu gemm_swiglu
# (ragged-swiglu/; its JSON header names a9115c3, the device copy's git HEAD: PT_TVM_GIT_COMMIT was not exported for
# that command; the code was 616f11a's). Every output of every kernel checked against float32 (swap_tiles: 2.1e-4,
# QKV + RoPE 2.8e-4, SwiGLU 3.9e-4; the ragged pairs 2.1e-4 to 3.9e-4). Files: swap_tiles-*.json.gz and .log,
# ragged.json.gz and .log, ragged-swiglu/.
