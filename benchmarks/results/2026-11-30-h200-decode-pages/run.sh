#!/bin/bash
# The paged decoding kernel with each page's index bound once for its column chunks (COMMIT) against the kernel
# as before (the template and passes of the commit before, carried untracked in ab-before/ and copied over the
# tree for the second half), on one H200 (nvidia-h200), one device call carrying .gpu-bundle:
#   the GPU tests of the decoding kernels (-k "decode or paged", 29 tests, LIMIT s);
#   batch 1, kv 16k, paged (issue 16's config below the bandwidth bar): the three plans of plans.json (copied from
#   2026-11-30-h200-decode-bind: the plans' sTasks are the same), each compiled, checked against float32 and timed
#   from CUDA graphs, after/ then before/.
#   bash benchmarks/results/2026-11-30-h200-decode-pages/run.sh COMMIT
set -u
export PT_TVM_GIT_COMMIT=$1
plans=benchmarks/results/2026-11-30-h200-decode-pages/plans.json  # (gpu-env.sh uses $d)
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | tee $OUT/gpu.txt
OUT=$OUT bash benchmarks/gpu-tests.sh 15 ${LIMIT:-130} tests -k "decode or paged" > /dev/null 2>&1
gzip -f $OUT/gpu-tests.txt
mkdir -p $OUT/after $OUT/before
python -m benchmarks.experiments.decode_split run $plans $OUT/after > $OUT/after/log.txt 2>&1
for f in decode_attention.py; do cp ab-before/$f templates/$f; done
for f in apply.py extract.py ir.py; do cp ab-before/$f passes/$f; done
PT_TVM_GIT_COMMIT="$1 with ab-before" python -m benchmarks.experiments.decode_split run $plans $OUT/before \
  > $OUT/before/log.txt 2>&1
zcat $OUT/gpu-tests.txt.gz | head -8
for f in after before; do echo "== $f"; tail -5 $OUT/$f/log.txt; done
