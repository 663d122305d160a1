#!/bin/bash
# The layers suite's Mamba2-1.3B rows at batch 1 (512, 777, 2048, 2500, 4096 tokens) on ONE H200 after chunk_scan's
# clamped row loads at ragged and symbolic lengths (425df91, 1f94098): every SSD kernel of the ragged configs takes
# that path. One device call carrying .gpu-bundle and .peers/packed (benchmarks/fetch_mamba_ssm.sh):
#   bash benchmarks/results/2026-12-01-h200-layers-mamba2/run.sh COMMIT
# (at 4e07eba; its layers-mamba2.json gzipped), then, on any machine, the whole grid (header: the three commits its
# rows were last measured at, as benchmarks' merge names them since 2026-12-01):
#   python -m benchmarks merge ../2026-11-27-h200-layers/layers.json.gz --rerun \
#       ../2026-11-29-h200-layers-c87097f/layers-llama.json.gz --rerun layers-mamba2.json.gz --out layers.json
#   gzip -9 layers.json; python -m benchmarks report layers.json.gz --out-dir layers/
bash benchmarks/layers-gpu.sh mamba2 "$1"
