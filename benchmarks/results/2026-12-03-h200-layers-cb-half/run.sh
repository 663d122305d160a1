#!/bin/bash
# The layers suite's Mamba2-1.3B rows on ONE H200 after the SSD forward passes cb to chunk_scan in x's dtype
# (11e5d7e: half the bytes every head's blocks read again): batch 1 at 512, 777, 2048, 2500, 4096 tokens in one
# device call, then 4 x 2048 and 16 x 4096 in a second, each carrying .gpu-bundle and .peers/packed
# (benchmarks/fetch_mamba_ssm.sh):
#   bash benchmarks/results/2026-12-03-h200-layers-cb-half/run.sh mamba2 COMMIT
#   bash benchmarks/results/2026-12-03-h200-layers-cb-half/run.sh mamba2-batched COMMIT
# then, on any machine, the whole grid over 2026-12-01-h200-layers-mamba2's (its LLaMA-3-8B rows kept):
#   python -m benchmarks merge ../2026-12-01-h200-layers-mamba2/layers.json.gz --rerun layers-mamba2.json.gz \
#       [--rerun layers-mamba2-batched.json.gz] --out layers.json
#   gzip -9 layers.json; python -m benchmarks report layers.json.gz --out-dir layers/
bash benchmarks/layers-gpu.sh "$1" "$2"
