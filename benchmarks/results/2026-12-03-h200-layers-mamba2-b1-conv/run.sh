#!/bin/bash
# The layers suite's Mamba2-1.3B rows at batch 1 (512, 777, 2048, 2500 and 4096 tokens) on ONE H200 with the
# mixer's causal conv1d on pt-tvm's vectorized kernel (a4e4d34: taps as one expression, fast math) in pt-tvm's
# systems; the other systems keep PyTorch's conv (mamba-ssm's too: its fused conv needs the causal-conv1d extension,
# not built). One device call carrying .gpu-bundle and .peers/packed (benchmarks/fetch_mamba_ssm.sh):
#   bash benchmarks/results/2026-12-03-h200-layers-mamba2-b1-conv/run.sh mamba2 COMMIT
# (its layers-mamba2.json gzipped), then, on any machine, the whole grid over the current one:
#   python -m benchmarks merge ../2026-12-03-h200-layers-mamba2-conv/layers.json.gz \
#       --rerun layers-mamba2.json.gz --out layers.json
#   gzip -9 layers.json; python -m benchmarks report layers.json.gz --out-dir layers/
bash benchmarks/layers-gpu.sh "$1" "$2"
# What ran (2026-12-03, twentieth session, c12140c, one call, 439 s): mamba2 (layers-mamba2.json.gz, .log; all five
# configs), merged over 2026-12-03-h200-layers-mamba2-conv as above (layers.json.gz, layers/). A later call timing
# 16 x 4096 alone (`python -m benchmarks run --suite layers --where "kernel=mamba2-1.3b,batch=16"`) ran out of its
# 230 s before its first pt-tvm row (max-autotune's tuning first) and the session's device time: the batched rows
# stay a59bf67's (the conv kernel before vectorizing and fast math).
