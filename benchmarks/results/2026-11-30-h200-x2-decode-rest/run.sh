#!/bin/bash
# The rest of the decode grid (issue 16: 136 configs; parts 0-5, 8 and 12 of `--part I/16` ran in
# 2026-11-29-h200-x2-decode and 2026-11-30-h200-x2-decode): parts 6, 7, 9, 10, 11, 13, 14 and 15 at COMMIT on a 2-GPU
# H200 machine (nvidia-h200-x2), the same options as those runs (every peer, the tuner's two candidates, 300 ms of
# timing a system, the suite's dynamic kernels), as one queue: each call, each GPU takes every other config of what
# the earlier calls' JSON (committed under callN-gpuG/ before the next call, and kept in /tmp on a warm machine) did not
# measure (`--skip`, `--share G/2`), and starts no config after STOP s (`--stop-after`, 430 unless given; the process
# is stopped 145 s later; every ratio still compares the systems of one config timed in one process on one GPU). Merged after with the two earlier runs:
#   python -m benchmarks merge <(zcat ../2026-11-30-h200-x2-decode/decode.json.gz) call*/decode.json \
#     --across-commits --out decode.json
#   python -m benchmarks report decode.json --out-dir decode; python -m benchmarks.decode --chart decode.json --out .
#   python -m benchmarks model-check decode.json --target h200 > model-check.md
# Ran 2026-11-30 with COMMIT 849bd51: setup, peers, peers-b, then two queue calls (rc 0; the first stopped each share
# at 11 of 33 configs, the second at 13). --skip matched none of the first call's rows at 849bd51 (it compared the
# grid's problems with the rows' resolved ones; fixed in c133920), so the second call measured the first call's 22
# configs again and 4 more: merged with --keep-first, the first call's rows kept; the 22 repeats put pt-tvm's ratio
# over the best peer at 1.000x the first call's in geometric mean (0.971-1.036x). 96 of 136 configs in all.
# Device calls back to back on one warm machine (a call carries at most 64 MiB):
#   setup    carry .gpu-bundle            the TileLang bundle unpacked
#   peers    carry .gpu-peers/a           flash-attn-4's first half stored
#   peers-b  carry .gpu-peers/b           its second half unpacked
#   queue    carry .gpu-flashinfer/0      (the first; later ones carry nothing) FlashInfer unpacked; both GPUs' shares
# each as: bash benchmarks/results/2026-11-30-h200-x2-decode-rest/run.sh STEP COMMIT [STOP]
set -u
export PT_TVM_GIT_COMMIT=$2
STOP=${3:-430}
RUN=benchmarks/results/2026-11-30-h200-x2-decode-rest
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
mkdir -p /tmp/decode-done
share() {  # GPU
  local out=$OUT/q$1 skip=""
  mkdir -p $out
  for f in $RUN/call*/decode.json /tmp/decode-done/*.json; do [ -f $f ] && skip="$skip --skip $f"; done
  CUDA_VISIBLE_DEVICES=$1 timeout $((STOP + 145)) python -u -m benchmarks.decode --out $out --all --only suite \
    --part 6,7,9,10,11,13,14,15/16 $skip --share $1/2 --stop-after $STOP --tune-top-k 2 --rep-ms 300 --workers 14 2>&1 \
    | grep -v " INFO \|:INFO\]" > $out/suite.log
  [ -f $out/decode.json ] && cp $out/decode.json /tmp/decode-done/$(date +%s)-$1.json
}
[ $1 = queue ] && { share 0 & share 1 & wait; }
for d in $OUT/q*; do
  [ -d $d ] || continue
  echo "$d: $(grep -c 'TFLOP/s' $d/suite.log) rows; $(grep 'done in\|copy:\|deadline' $d/suite.log | tr '\n' ' ')"
  grep "TFLOP/s" $d/suite.log | cut -c1-150 | tail -24
done
