#!/bin/bash
# The layers suite's Mamba2-1.3B rows at batch 4 x 2048 and 16 x 4096 on ONE H200 with the mixer's causal conv1d on
# pt-tvm's kernel in pt-tvm's systems (pt_tvm.ops.causal_conv1d, 6b33a04; the other systems keep PyTorch's conv,
# mamba-ssm's too: its fused conv needs the causal-conv1d extension, not built). One device call carrying
# .gpu-bundle and .peers/packed (benchmarks/fetch_mamba_ssm.sh):
#   bash benchmarks/results/2026-12-03-h200-layers-mamba2-conv/run.sh mamba2-batched COMMIT
# (its layers-mamba2-batched.json gzipped), then, on any machine, the whole grid over the last one:
#   python -m benchmarks merge ../2026-12-01-h200-layers-mamba2/layers.json.gz \
#       --rerun layers-mamba2-batched.json.gz --rerun layers-mamba2-b16.json.gz --out layers.json
#   gzip -9 layers.json; python -m benchmarks report layers.json.gz --out-dir layers/
bash benchmarks/layers-gpu.sh "$1" "$2"
# What ran (2026-12-03, nineteenth session, a59bf67, two calls): mamba2-batched cut off by its 440 s limit after
# 4 x 2048 (layers-mamba2-batched.json.gz, .log); then 16 x 4096 alone (one call, 128 s: `source
# benchmarks/gpu-env.sh && env_setup; python -m benchmarks run --suite layers --where
# "kernel=mamba2-1.3b,batch=16" --rep-ms 300 --out $OUT/layers-mamba2-b16.json`; layers-mamba2-b16.json.gz,
# .log), both merged over 2026-12-01 as above with the two --rerun files (layers.json.gz, layers/).
