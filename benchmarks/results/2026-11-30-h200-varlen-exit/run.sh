#!/bin/bash
# A varlen block past its sequence's queries leaves before its first op (COMMIT: `if ...: T.thread_return()`,
# which pt-tvm's warp-specialized emission runs in every role) against the kernel as before, where such a block
# ran one fully masked key step (the template and passes of the commit before, carried untracked in ab-before/ and
# copied over the tree for the second half). One H200 (nvidia-h200), two device calls carrying .gpu-bundle:
#   bash benchmarks/results/2026-11-30-h200-varlen-exit/run.sh COMMIT
# dense LLaMA-3-8B attention on the bucket's varlen kernel (benchmarks.experiments.dynamic_attention: the exact
# kernel, the bucket's, pinned pack_gqa 0/1 and 64-key tiles), after/ then before/; then, on the same machine,
#   bash benchmarks/results/2026-11-30-h200-varlen-exit/run.sh COMMIT tests
# the GPU tests of the varlen kernel and the dynamic-token ops (gpu-tests.txt.gz).
# Ran 2026-11-30 at 78e7928 (after/ 289 s, before/ 256 s; that call also started the tests and ran out of its
# 600 s before they wrote anything, so they ran alone in the second call: 15 passed).
set -u
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
if [ "${2:-}" = tests ]; then
  OUT=$OUT bash benchmarks/gpu-tests.sh 16 200 tests/test_shapes_gpu.py tests/test_random_problems.py \
    tests/test_ops_gpu.py -k "varlen or dynamic" > /dev/null 2>&1
  gzip -f $OUT/gpu-tests.txt; zcat $OUT/gpu-tests.txt.gz | head -10
  exit 0
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | tee $OUT/gpu.txt
mkdir -p $OUT/after $OUT/before $OUT/keep
python -m benchmarks.experiments.dynamic_attention $OUT/after > $OUT/after/log.txt 2>&1
cp templates/flash_attention.py passes/apply.py passes/extract.py passes/ir.py $OUT/keep/
cp ab-before/flash_attention.py templates/; cp ab-before/apply.py ab-before/extract.py ab-before/ir.py passes/
PT_TVM_GIT_COMMIT="$1 with ab-before" python -m benchmarks.experiments.dynamic_attention $OUT/before \
  > $OUT/before/log.txt 2>&1
cp $OUT/keep/flash_attention.py templates/; cp $OUT/keep/apply.py $OUT/keep/extract.py $OUT/keep/ir.py passes/
rm -r $OUT/keep
gzip -f $OUT/after/log.txt $OUT/before/log.txt
for f in after before; do echo "== $f"; zcat $OUT/$f/log.txt.gz | grep -v "INFO\|^pt_tvm\|TileLang" | grep "L=\|of exact"; done
