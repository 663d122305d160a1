#!/bin/bash
# The layers suite's Mamba2-1.3B rows at batch 1 (512, 777, 2048, 2500, 4096 tokens) on ONE H200 after chunk_scan's
# clamped row loads at ragged and symbolic lengths (425df91, 1f94098): every SSD kernel of the ragged configs takes
# that path. One device call carrying .gpu-bundle and .peers/packed (benchmarks/fetch_mamba_ssm.sh):
#   bash benchmarks/results/2026-12-01-h200-layers-mamba2/run.sh COMMIT
bash benchmarks/layers-gpu.sh mamba2 "$1"
