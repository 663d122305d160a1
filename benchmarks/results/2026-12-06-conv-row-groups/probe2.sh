#!/bin/bash
# Needs 725b663's code (main reverted the row groups after it); not run: no device machine came before the session's
# device time ran out.
# probe.sh cut to the device time left (about 5 minutes): problems A and B and A under compute-sanitizer, at once.
#   bash benchmarks/results/2026-12-06-conv-row-groups/probe2.sh COMMIT
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
here=benchmarks/results/2026-12-06-conv-row-groups
base="batch=1 seqlen=1000 width=3 dtype=bfloat16 activation=none"
cs=$(which compute-sanitizer 2>/dev/null || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
echo "sanitizer: ${cs:-none}"
PYTHONPATH=.:${PYTHONPATH:-} timeout 150 python $here/probe.py $base channels=100 x_stride=4260 > $OUT/A.txt 2>&1 &
PYTHONPATH=.:${PYTHONPATH:-} timeout 150 python $here/probe.py $base channels=128 x_stride=4260 > $OUT/B.txt 2>&1 &
if [ -n "$cs" ]; then
  PYTHONPATH=.:${PYTHONPATH:-} timeout 170 $cs --print-limit 3 python $here/probe.py $base channels=100 x_stride=4260 \
    > $OUT/sanitizer.txt 2>&1 &
fi
wait
for f in A B; do echo "== $f"; grep -E "PLAN|REL_ERR|Error" $OUT/$f.txt | cut -c1-300 | head -3; done
grep -E "=====" $OUT/sanitizer.txt | head -20
