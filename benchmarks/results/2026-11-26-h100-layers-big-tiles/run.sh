#!/bin/bash
# The layers suite's whole grid on ONE H100 (nvidia-h100-x1) at 10226be (GEMM tiles up to 256x160 and swapped tiles,
# priced with WIDE_ACCUMULATOR_FACTOR; f0c5ccb is the same tree), each call carrying .gpu-bundle and .peers/mamba
# (benchmarks/layers-gpu.sh; configs and limits there), with the GPU tests of the ragged GEMM shapes first:
#   timeout 150 python -m pytest -m gpu -q -rA tests/test_shapes_gpu.py -k gemm > $OUT/gpu-tests.log  (at f0c5ccb)
#   bash benchmarks/layers-gpu.sh llama f0c5ccb            (layers-llama.json's header says 10226be, with a note)
#   bash benchmarks/layers-gpu.sh llama-batched 10226be; bash benchmarks/layers-gpu.sh mamba2 10226be
#   source benchmarks/gpu-env.sh && env_setup && unset TORCHINDUCTOR_COMPILE_THREADS && \
#     for b in 4 16; do PT_TVM_GIT_COMMIT=10226be python -m benchmarks run --suite layers \
#       --where "kernel=mamba2-1.3b,batch=$b" --rep-ms 300 --out $OUT/layers-mamba2-b$b.json; done
# Then, on any machine:
#   python -m benchmarks merge layers-llama.json layers-llama-batched.json layers-mamba2.json layers-mamba2-b4.json \
#       layers-mamba2-b16.json --out layers.json
#   python -m benchmarks report layers.json --out-dir layers/
bash benchmarks/layers-gpu.sh "$@"
