#!/bin/bash
# Batch 1, kv 16k, paged decoding (LLaMA-3-8B heads, bf16, 32 splits of 64 keys, 2-stage software pipeline) on ONE
# H100, three device calls carrying .gpu-bundle (logs: the JSON's rows as the experiment prints them):
# 1. at ae9a895 (the sequence length loaded before the query rows, the combine a thread per element with every
#    split's loads in one unrolled loop, the split kernel triggering its dependent launch first), then in the same
#    call the template and experiment of 7c25fe5 copied over the tree:
#      PT_TVM_GIT_COMMIT=ae9a895 python -m benchmarks.experiments.decode_launch $OUT/new   -> decode_launch-ae9a895.json
#      PT_TVM_GIT_COMMIT=7c25fe5 python -m benchmarks.experiments.decode_launch $OUT/old   -> decode_launch-7c25fe5.json
#    ("call, combine as PDL" there: the combine built with pdl=True; at 7c25fe5 the split kernel triggered nothing)
# 2. at ca14129 (pdl the chip's tile switch; the early length load reverted): the decode GPU tests, then
#      OUT=$OUT bash benchmarks/gpu-tests.sh 6 250 tests/test_decode.py tests/test_ops_gpu.py \
#        -k "decode or fused_combine or bucket_plan"                                   -> gpu-tests.txt
#      python -m benchmarks.experiments.decode_launch $OUT                              -> decode_launch.json
# 3. at ca14129, the two tests call 2 did not reach in its 250 s:                      -> gpu-tests-rerun.txt
source .gpu-bundle/setup.sh && export PYTHONPATH=$PWD:$PYTHONPATH
python -m benchmarks.experiments.decode_launch "$OUT" "$@"
