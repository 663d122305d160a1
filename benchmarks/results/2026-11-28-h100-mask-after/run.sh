# One H100 (nvidia-h100-x1), two calls; ratios compare kernels of one run only.
# Call 1 (after/, before/): issue 14's ragged attention pairs with the score mask applied after QK^T (the gemm
# clears its accumulator; the mask a branch on the blocks that need it), then, in the same call, the template of
# d8a94ed (the mask as the accumulator's initial value, before the gemm) copied over the tree and the same pairs.
# That call's cost model still priced the one-sided branch as one statement (no trip count).
#   python -m benchmarks.experiments.ragged $OUT/after flash_attention flash_attention_varlen
#   git show d8a94ed:templates/flash_attention.py > templates/flash_attention.py
#   python -m benchmarks.experiments.ragged $OUT/before flash_attention flash_attention_varlen
# Call 2 (priced/, gpu-tests.txt; another machine): the pairs with the branch priced at its share of the steps
# (passes/extract.py), then every GPU test of attention:
source .gpu-bundle/setup.sh && export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=${PT_TVM_GIT_COMMIT:-wip}
mkdir -p $OUT/priced
python -m benchmarks.experiments.ragged $OUT/priced flash_attention flash_attention_varlen 2>&1 | grep -v INFO > $OUT/priced/ragged.log
tail -7 $OUT/priced/ragged.log
OUT=$OUT bash benchmarks/gpu-tests.sh 15 420 tests/test_shapes_gpu.py tests/test_templates_gpu.py tests/test_ops_gpu.py \
  tests/test_handoff.py tests/test_layers_suite.py -k "attention or qkv or turns or llama or model"
# Call 3 (third/; asked for nvidia-h200, ran on an H100), at 1b3359f: the pairs again.
#   PT_TVM_GIT_COMMIT=1b3359f python -m benchmarks.experiments.ragged $OUT flash_attention flash_attention_varlen
