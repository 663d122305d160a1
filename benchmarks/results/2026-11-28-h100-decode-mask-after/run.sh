# One H100 (nvidia-h100-x1): batch-1 kv-16k paged decoding (issue 16's config) with the split kernel's score mask
# after the QK gemm, on the key blocks holding a sequence's end only (the gemm clears its accumulator; after/), then,
# in the same call, with 6f89b54's template (the mask, every step, as the accumulator's initial value; before/)
# copied over the tree. No device time changed (split kernel 25.6 against 25.5 us), so the change was not kept;
# it was this, on templates/decode_attention.py of 6f89b54:
#   -            for i, j in T.Parallel(block_M, block_N):
#   -                acc_s[i, j] = T.if_then_else((at.first + k) * block_N + j < at.key_limit(i),
#   -                                             0, -T.infinity(ACCUM))
#   -            T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
#   +            T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow, clear_accum=True)
#   +            if (at.first + k + 1) * block_N > at.key_limit(0):  # the block holds a key some row may not see
#   +                for i, j in T.Parallel(block_M, block_N):
#   +                    acc_s[i, j] = T.if_then_else((at.first + k) * block_N + j < at.key_limit(i), acc_s[i, j],
#   +                                                 -T.infinity(ACCUM))
source .gpu-bundle/setup.sh && export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=${PT_TVM_GIT_COMMIT:-wip}
D=benchmarks/results/2026-11-28-h100-decode-mask-after
mkdir -p $OUT/after $OUT/before
python -m benchmarks.experiments.decode_launch $OUT/after 2>&1 | grep -v INFO > $OUT/after/decode_launch.log
cp $D/old_decode_attention.py templates/decode_attention.py   # git show 6f89b54:templates/decode_attention.py
python -m benchmarks.experiments.decode_launch $OUT/before 2>&1 | grep -v INFO > $OUT/before/decode_launch.log
for w in after before; do echo "== $w"; tail -13 $OUT/$w/decode_launch.log; done
