#!/bin/bash
# Needs 725b663's code (main reverted the row groups after it); not run: no device machine came before the session's
# device time ran out.
# probe.py over five problems, one process each (a fault poisons its process's CUDA context), then the faulting one
# under compute-sanitizer where the machine has it. One call carrying .gpu-bundle:
#   bash benchmarks/results/2026-12-06-conv-row-groups/probe.sh COMMIT
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
nvidia-smi -L
here=benchmarks/results/2026-12-06-conv-row-groups
base="batch=1 seqlen=1000 width=3 dtype=bfloat16 activation=none"
run() { echo "== $1"; PYTHONPATH=.:${PYTHONPATH:-} timeout 120 python $here/probe.py $2 2>&1 | grep -E "PLAN|REL_ERR|Error" | head -3; }
run "A: group 2, y rows off 16-byte units (the op test that faulted)" "$base channels=100 x_stride=4260" &
run "B: group 2, y rows on 16-byte units" "$base channels=128 x_stride=4260" &
run "C: A with the chunks (row_groups=0 pinned)" "$base channels=100 x_stride=4260 row_groups=0" &
wait
run "D: group 8 at 4353 channels, y by chunks, stage_y=1" "batch=1 seqlen=1024 channels=4353 stage_y=1" &
run "E: group 2 at 4 x 4096 x 4353 twin (4352, packed)" "batch=2 seqlen=1024 channels=4352" &
wait
which compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null
cs=$(which compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
if [ -n "$cs" ]; then
  PYTHONPATH=.:${PYTHONPATH:-} timeout 200 $cs --print-limit 5 python $here/probe.py $base channels=100 x_stride=4260 \
    > $OUT/sanitizer.txt 2>&1
  grep -v "^\s*$" $OUT/sanitizer.txt | grep -E "=====|PLAN|REL" | head -30
fi
cp /tmp/probe-*.cu $OUT/ 2>/dev/null; ls $OUT
