#!/bin/bash
# The layers suite's batched Mamba2-1.3B rows (4 x 2048, 16 x 4096, with max-autotune) on ONE H200 with the mixer's
# causal conv1d on pt-tvm's vectorized, fast-math kernel (c12140c's, unchanged since) in pt-tvm's systems; the other
# systems keep PyTorch's conv (mamba-ssm's too: its fused conv needs the causal-conv1d extension, not built). One
# device call a batch size (every Inductor compile is cold: 16 x 4096 alone takes more than 230 s), each carrying
# .gpu-bundle and .peers/packed (benchmarks/fetch_mamba_ssm.sh):
#   bash benchmarks/results/2026-12-03-h200-layers-mamba2-batched-conv/run.sh 4 COMMIT 300
#   bash benchmarks/results/2026-12-03-h200-layers-mamba2-batched-conv/run.sh 16 COMMIT 560
# (each layers-bB.json gzipped), then, on any machine, the whole grid over the current one:
#   python -m benchmarks merge ../2026-12-03-h200-layers-mamba2-b1-conv/layers.json.gz \
#       --rerun layers-b4.json.gz --rerun layers-b16.json.gz --out layers.json
#   gzip -9 layers.json; python -m benchmarks report layers.json.gz --out-dir layers/
set -u
batch=$1 limit=$3
export PT_TVM_GIT_COMMIT=$2
source benchmarks/gpu-env.sh
env_setup || exit 1
unset TORCHINDUCTOR_COMPILE_THREADS  # gpu-env's setting for many compiling processes; here Inductor compiles in one
nvidia-smi -L
timeout $limit python -m benchmarks run --suite layers --where "kernel=mamba2-1.3b,batch=$batch" --rep-ms 300 \
  --out $OUT/layers-b$batch.json > $OUT/layers-b$batch.log 2>&1
echo "b$batch: rc=$? (124: cut off at the time limit, finished configs kept)"
grep -E "^mamba2-1.3b " $OUT/layers-b$batch.log | cut -c1-220
tail -4 $OUT/layers-b$batch.log
# What ran (2026-12-03, twenty-first session, f8cbda6, two calls on one H200): batch 4 (305 s, layers-b4.json.gz,
# .log) and batch 16 (281 s, layers-b16.json.gz, .log), every system's output checked against float32; merged over
# 2026-12-03-h200-layers-mamba2-b1-conv as above (layers.json.gz, layers/). The conv's plan is f8cbda6's pick (the
# warp-specialized one; 2f41aa1 later moved it: 2026-12-03-h200-conv1d-rcp).
