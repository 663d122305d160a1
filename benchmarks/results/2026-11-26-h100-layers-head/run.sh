#!/bin/bash
# The layers suite's whole grid on ONE H100 (nvidia-h100-x1) at 5babeca (the GEMM tile space with 160- and
# 224-column tiles, 8f91fc4, which the previous grid at 3158e15 lacked), each system settling for 500 ms of its
# own calls before its share of every round; three device calls back to back on one warm machine, each carrying
# .gpu-bundle and .peers/mamba (benchmarks/layers-gpu.sh; configs and limits there):
#   bash benchmarks/layers-gpu.sh llama 5babeca && bash benchmarks/layers-gpu.sh llama-batched 5babeca
#   bash benchmarks/layers-gpu.sh mamba2 5babeca; source benchmarks/gpu-env.sh && env_setup && \
#     unset TORCHINDUCTOR_COMPILE_THREADS && python -m benchmarks run --suite layers \
#       --where "kernel=mamba2-1.3b,batch=4" --rep-ms 300 --out $OUT/layers-mamba2-b4.json
#   (same setup) python -m benchmarks run --suite layers --where "kernel=mamba2-1.3b,batch=16" --rep-ms 300 \
#       --out $OUT/layers-mamba2-b16.json
# (the two direct runs recorded the full hash of the same commit). Then, on any machine:
#   python -m benchmarks merge layers-llama.json layers-mamba2.json layers-llama-batched.json \
#       layers-mamba2-b4.json layers-mamba2-b16.json --out layers.json
#   python -m benchmarks report layers.json --out-dir layers/
bash benchmarks/layers-gpu.sh "$@"
