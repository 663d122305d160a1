#!/bin/bash
# run.sh's steps 1-2 for the 4353-channel pair alone (run.sh's ragged runs, 150 s each, ended on a cold H100
# before reaching it), in one call on one GPU, carrying .gpu-bundle and conv1d_877314f.py as run.sh says:
#   bash benchmarks/results/2026-12-05-h200-conv-weights/run2.sh COMMIT 500
# What ran (2026-12-05, about 16:40 UTC): `bash .../run2.sh 5de5574 480` on ONE H100 80GB HBM3, wall 201 s, rc 0.
# Its files were lost with that session's checkout; the table it printed last, as the session recorded it: 4353
# against 4352 channels, settled CUDA graphs, ratio after (weights in registers, pick 32 x 128 x 256) 0.753
# (queued 0.752, twin again -0.0%); before (877314f, pick 64 x 64 x 256) 0.557 (queued 0.574). Bar 0.95.
set -u
limit=$2
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
nvidia-smi -L
here=benchmarks/results/2026-12-05-h200-conv-weights
mkdir -p $OUT/after $OUT/before
PYTHONPATH=.:${PYTHONPATH:-} timeout $(( limit / 2 - 10 )) python $here/pair4353.py $OUT/after > $OUT/after/ragged.log 2>&1
echo "after: rc=$?"
cp templates/conv1d.py /tmp/conv1d-after.py
cp $here/conv1d_877314f.py templates/conv1d.py
PT_TVM_GIT_COMMIT=877314f PYTHONPATH=.:${PYTHONPATH:-} timeout $(( limit / 2 - 20 )) python $here/pair4353.py $OUT/before \
  > $OUT/before/ragged.log 2>&1
echo "before: rc=$?"
cp /tmp/conv1d-after.py templates/conv1d.py
for w in after before; do grep -E "^  causal_conv1d|^causal_conv1d" $OUT/$w/ragged.log | cut -c1-160 | sed "s/^/$w /"; done
