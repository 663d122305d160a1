#!/bin/bash
# Every GPU test at one commit on ONE H200 (nvidia-h200), 16 pytest processes for 330 s, one call carrying
# .gpu-bundle, from the project root (gpu-tests-85fdfda.txt.gz: the summary, the failures, then every log):
#   bash benchmarks/results/2026-11-29-h200-gpu-tests/run.sh
set -u
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH
OUT=$OUT bash benchmarks/gpu-tests.sh 16 330 | head -40
