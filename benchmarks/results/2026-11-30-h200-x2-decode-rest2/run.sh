#!/bin/bash
# The decode grid's 40 configs left (issue 16: 136 configs; 96 in 2026-11-30-h200-x2-decode-rest, merged): parts 6, 7,
# 9, 10, 11, 13, 14 and 15 of `--part I/16` less that run's configs, at COMMIT on a 2-GPU H200 machine
# (nvidia-h200-x2), the same options as the earlier runs (every peer, the tuner's two candidates, 300 ms of timing a
# system, the suite's dynamic kernels), as a queue: each call, each GPU takes every other config that neither the
# earlier run nor this run's earlier calls (committed under callN-gpuG/, kept in /tmp on a warm machine) measured
# (`--skip`, `--share G/2`), and starts no config after STOP s (`--stop-after`; the process is stopped 145 s later;
# every ratio still compares the systems of one config timed in one process on one GPU). Merged after with the 96:
#   python -m benchmarks merge ../2026-11-30-h200-x2-decode-rest/decode.json.gz call*-gpu*/decode.json.gz \
#     --across-commits --keep-first --out decode.json
#   python -m benchmarks report decode.json --out-dir decode; python -m benchmarks.decode --chart decode.json --out .
#   python -m benchmarks model-check decode.json --target h200 > model-check.md
# Device calls back to back on one warm machine (a call carries at most 64 MiB):
#   setup    carry .gpu-bundle            the TileLang bundle unpacked
#   peers    carry .gpu-peers/a           flash-attn-4's first half stored
#   peers-b  carry .gpu-peers/b           its second half unpacked
#   queue    carry .gpu-flashinfer/0      (the first; later ones carry nothing) FlashInfer unpacked; both GPUs' shares
# each as: bash benchmarks/results/2026-11-30-h200-x2-decode-rest2/run.sh STEP COMMIT [STOP]
# Ran 2026-11-30 with COMMIT 20160e9: setup (with 2026-11-30-h200-x2-gpu-tests-fix), peers, peers-b, then one
# queue call, STOP 430 (rc 0, 541 s): each share measured 8 of its 20 configs (call1-gpuG/); merged with the 96 as
# above: 112 of 136 configs. Ran again 2026-11-30 (later) with COMMIT 17a5157 on another nvidia-h200-x2: setup,
# peers, peers-b, then two queue calls, STOP 430: the first (rc 0, 504 s) measured 10 of each share's 12 configs
# (call2-gpuG/), the second (rc 0, 136 s; the machine still warm, /tmp/decode-done skipping the first's) the last
# 2 (call3-gpuG/); merged as above (the rest run, then call*-gpu*/decode.json.gz): all 136 configs.
set -u
export PT_TVM_GIT_COMMIT=$2
STOP=${3:-430}
RUN=benchmarks/results/2026-11-30-h200-x2-decode-rest2
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
  local out=$OUT/q$1 skip="--skip benchmarks/results/2026-11-30-h200-x2-decode-rest/decode.json.gz"
  mkdir -p $out
  for f in $RUN/call*/decode.json* /tmp/decode-done/*.json; do [ -f $f ] && skip="$skip --skip $f"; done
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
