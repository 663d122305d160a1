#!/bin/bash
# The layers suite's whole grid on ONE H100 (nvidia-h100-x1) at 3158e15 (non-persistent warp-specialized plans lay
# the epilogue tile over the stages; L2-bound loops priced by a load's least arrival time, at most 128 KB in
# flight), each system settling for 500 ms of its own calls before its share of every round: one device call per
# step, carrying .gpu-bundle, the Mamba2 ones .peers/mamba (benchmarks/layers-gpu.sh; configs and limits there):
#   bash benchmarks/layers-gpu.sh llama 3158e15; bash benchmarks/layers-gpu.sh llama-batched 3158e15
#   bash benchmarks/layers-gpu.sh mamba2 3158e15; bash benchmarks/layers-gpu.sh mamba2-batched 3158e15
# The mamba2-batched step finished batch 4 only (layers-mamba2-b4.json, partial: the call's 600 s ran out after
# the mamba2 step); batch 16 ran alone in the next call on the same machine (layers-mamba2-b16.json):
#   source benchmarks/gpu-env.sh && env_setup && unset TORCHINDUCTOR_COMPILE_THREADS && \
#     python -m benchmarks run --suite layers --where "kernel=mamba2-1.3b,batch=16" --rep-ms 300 \
#       --out $OUT/layers-mamba2-b16.json
# Then, on any machine:
#   python -m benchmarks merge layers-llama.json layers-mamba2.json layers-llama-batched.json \
#       layers-mamba2-b4.json layers-mamba2-b16.json --out layers.json
#   python -m benchmarks report layers.json --out-dir layers/
bash benchmarks/layers-gpu.sh "$@"
