#!/bin/bash
# Four more parts of the whole decode grid (issue 16: 136 configs; 2026-11-29-h200-x2-decode ran parts 0, 4, 8, 12 of
# 16 at 50593ce) at COMMIT on a 2-GPU H200 machine (nvidia-h200-x2), with the decode suite's dynamic kernels
# (`dynamic=True` since 8af2b21): `python -m benchmarks.decode --all --part I/16` for I in 1, 2, 3, 5, one part a
# GPU (CUDA_VISIBLE_DEVICES: every ratio compares systems of one config timed in one process on one GPU), the same
# options as the quarter's run; then the decode GPU tests (the op's bucket test among them, not yet run on a GPU).
# Merged after with the quarter's run (its four parts at 50593ce, static kernels; these at 0231e29, the same plans'
# kernels of dynamic sizes, which measured 1.000-1.009x the static ones in 2026-11-29-h200-x2-decode-dynamic):
#   zcat ../2026-11-29-h200-x2-decode/decode.json.gz > quarter.json
#   python -m benchmarks merge quarter.json decode-{1,2,3,5}/decode.json --across-commits --out decode.json
#   python -m benchmarks report decode.json --out-dir decode; python -m benchmarks.decode --chart decode.json --out .
#   python -m benchmarks model-check decode.json --target h200 > model-check.md
# Each part's copy peak is in its decode-*/decode.json (4.25 TB/s here, 4.27 in the quarter's); the merged header
# keeps the first part's, against which decode/table.md and bandwidth.png read every row.
# Ran 2026-11-30 with COMMIT 0231e29, all four parts whole (decode-*/suite.log; every call rc 0, no call cold), the
# decode GPU tests 18 passed (gpu-tests.txt; the op's bucket test among them).
# Device calls back to back on one warm machine (a call carries at most 64 MiB):
#   setup    carry .gpu-bundle            the TileLang bundle unpacked
#   peers    carry .gpu-peers/a           flash-attn-4's first half stored
#   peers-b  carry .gpu-peers/b           its second half unpacked
#   decode0  carry .gpu-flashinfer/0      FlashInfer unpacked; GPU 0: part 1/16; GPU 1: part 2/16
#   decode1  carry nothing                GPU 0: part 3/16; GPU 1: part 5/16
#   tests    carry nothing                the decode GPU tests, both GPUs' processes
# each as: bash benchmarks/results/2026-11-30-h200-x2-decode/run.sh STEP COMMIT
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
  decode0) part 0 1 & part 1 2 ;;
  decode1) part 0 3 & part 1 5 ;;
  tests) OUT=$OUT bash benchmarks/gpu-tests.sh 16 420 tests/test_decode.py tests/test_ops_gpu.py -k decode ;;
esac
wait
[ -f $OUT/gpu-tests.txt ] && head -12 $OUT/gpu-tests.txt
for d in $OUT/decode-*; do
  [ -d $d ] || continue
  echo "$d: $(grep -c 'TFLOP/s' $d/suite.log) rows; $(grep 'done in\|copy:' $d/suite.log | tr '\n' ' ')"
  grep "TFLOP/s" $d/suite.log | cut -c1-150 | tail -30
done
