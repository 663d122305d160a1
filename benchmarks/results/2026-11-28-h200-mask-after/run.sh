# One H200 (nvidia-h200), one call at 1b3359f: issue 14's ragged attention pairs with FlashAttention's score mask
# after the QK gemm (6f89b54), the branch priced at its share of the steps.
source .gpu-bundle/setup.sh && export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=1b3359f
python -m benchmarks.experiments.ragged $OUT flash_attention flash_attention_varlen 2>&1 | grep -v INFO > $OUT/ragged.log
tail -7 $OUT/ragged.log
