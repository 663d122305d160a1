#!/bin/bash
# The LLaMA-3-8B layer at batch 1 (seqlen 512, 777, 2048, 2500, 4096) on ONE H200 (nvidia-h200) at 17e88fd (L2-bound
# GEMM loops priced with L2's queueing: the 512-token projections 4-6 deep), settled rounds, carrying .gpu-bundle:
bash benchmarks/layers-gpu.sh llama 17e88fd
