#!/bin/bash
# The LLaMA-3-8B layer at batch 1 (512, 777, 2048, 2500, 4096 tokens) on ONE H100 (nvidia-h100-x1) at 3f45e0f, in
# the same call as 2026-11-26-h100-ragged-gqa (after it), carrying .gpu-bundle. Not the current layers run (that
# is 2026-11-26-h100-layers-rope, every config): a re-run of its batch-1 rows after the attention changes.
bash benchmarks/layers-gpu.sh llama 3f45e0f
