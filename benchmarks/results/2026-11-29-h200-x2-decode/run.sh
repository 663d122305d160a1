#!/bin/bash
# A quarter of the whole decode grid (issue 16: 136 configs; the committed run so far is the 8-config GPU slice) at
# HEAD on a 2-GPU H200 machine (nvidia-h200-x2): `python -m benchmarks.decode --all --part I/16` for I in 0, 4, 8,
# 12 (the grid's configs 0, 4, 8, ... in its order: GQA x q_len x layout x batch x kv_len), one part a GPU
# (CUDA_VISIBLE_DEVICES: every ratio compares systems of one config timed in one process on one GPU), with the
# GPU tests at the same commit on the other GPU of the first decode call. Merged after:
#   python -m benchmarks merge decode-*/decode.json --out decode.json
# Device calls back to back on one warm machine (a call carries at most 64 MiB):
#   setup    carry .gpu-bundle            the TileLang bundle unpacked
#   peers    carry .gpu-peers/a           flash-attn-4's first half stored
#   peers-b  carry .gpu-peers/b           its second half unpacked
#   decode0  carry .gpu-flashinfer/0      FlashInfer unpacked; GPU 0: the GPU tests; GPU 1: part 0/16
#   decode1  carry nothing                GPU 0: part 4/16; GPU 1: part 8/16
#   decode2  carry nothing                GPU 0: part 12/16
# each as: bash benchmarks/results/2026-11-29-h200-x2-decode/run.sh STEP COMMIT
# Ran 2026-11-29 with COMMIT 50593ce, every part whole (decode-*/suite.log; merged: decode.json.gz; the parts'
# JSON are in it). What ran: decode0 (the GPU tests and part 0) the tree of 50593ce; decode1 and decode2 (parts 4,
# 8, 12) a working tree whose templates/decode_attention.py was already 8af2b21's (the template's dynamic sizes,
# edited while the calls ran: their rows' configs carry its new `dynamic: False`). Its static kernels are those of
# 50593ce: the TIR of 192 static decode kernels (both layouts, 1 and 8 splits, fused or not, q_len 1 and 4) hashes
# the same from both files; benchmarks/ and the rest of the template path were 50593ce's.
set -u
export PT_TVM_GIT_COMMIT=$2
[ $1 = peers ] && { source .gpu-peers/a/peers.sh; exit; }
source benchmarks/gpu-env.sh
env_setup || exit 1
[ $1 = setup ] && { nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt; exit; }
python -c "import flash_attn.cute" || exit 1
[ $1 = peers-b ] && exit
for f in .gpu-flashinfer/*/flashinfer.sh; do [ -f "$f" ] && source "$f" && break; done
[ -d /tmp/gpu-flashinfer/flashinfer ] && export PYTHONPATH=$PYTHONPATH:/tmp/gpu-flashinfer
export PYTHONPATH=$PWD:$PYTHONPATH
python -c "import flashinfer; print('flashinfer', flashinfer.__version__)"
part() {  # GPU PART
  mkdir -p $OUT/decode-$2
  CUDA_VISIBLE_DEVICES=$1 timeout 560 python -u -m benchmarks.decode --out $OUT/decode-$2 --all --only suite \
    --part $2/16 --tune-top-k 2 --rep-ms 300 --workers 14 2>&1 | grep -v " INFO \|:INFO\]" > $OUT/decode-$2/suite.log
}
case $1 in
  decode0) CUDA_VISIBLE_DEVICES=0 OUT=$OUT bash benchmarks/gpu-tests.sh 14 500 & part 1 0 ;;
  decode1) part 0 4 & part 1 8 ;;
  decode2) part 0 12 ;;
esac
wait
[ -f $OUT/gpu-tests.txt ] && head -8 $OUT/gpu-tests.txt
for d in $OUT/decode-*; do
  echo "$d: $(grep -c 'TFLOP/s' $d/suite.log) rows; $(grep 'done in\|copy:' $d/suite.log | tr '\n' ' ')"
  grep "TFLOP/s" $d/suite.log | cut -c1-150 | tail -30
done
