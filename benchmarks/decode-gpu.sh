#!/usr/bin/env bash
# Issue 16 (decoding attention) on one GPU: the decode slice of the suite with its peers, the device-to-device copy
# peak, the chart of KV bandwidth against kv_len and the cost model's split against the measured best
# (benchmarks/decode.py); the decode GPU tests run with the others (benchmarks/gpu-tests.sh).
#
# Prepare on the CPU machine, from the project root (once):
#   bash ../shared/gpu/make-bundle.sh && bash ../shared/gpu/make-peers-bundle.sh
# Then device calls on the same warm machine (a call carries at most 64 MiB, so the bundle and the two halves of
# flash-attn-4 travel apart; benchmarks/gpu-env.sh keeps each in /tmp for the next call):
#   1. carry .gpu-bundle:    source benchmarks/gpu-env.sh && env_setup
#   2. carry .gpu-peers/a:   source benchmarks/gpu-env.sh && env_setup
#   3. carry .gpu-peers/b:   bash benchmarks/decode-gpu.sh COMMIT 0/3     (results under $OUT/decode-0)
#   4, 5.                    bash benchmarks/decode-gpu.sh COMMIT 1/3, then 2/3 (a part: at most 7 minutes)
#   6.                       bash benchmarks/decode-gpu.sh COMMIT sweep   (the split sweep, $OUT/decode-sweep)
# Then, on any machine: python -m benchmarks merge decode-*/decode.json --out decode.json;
# python -m benchmarks.decode --chart decode.json --out .  (bandwidth.png). The whole slice in one call ran out of
# its 300 s after 3 of 8 configs on an H100 (2026-11-24: compiles of the tuned candidates and of flash-attn-4).
# The whole grid (136 configs) runs the same way with `python -m benchmarks.decode --all --part I/N`, one part a GPU:
# benchmarks/results/2026-11-29-h200-x2-decode ran parts 0, 4, 8 and 12 of 16 (34 configs, 300-490 s a part on an
# H200 with every peer; the configs' pt-tvm kernels now share compiles, dynamic sizes).
# FlashInfer is measured only where `import flashinfer` works: its set travels in parts made by
# benchmarks/fetch_flashinfer.sh (each part's run sources .gpu-flashinfer/N/flashinfer.sh); otherwise its rows
# say why. The first run (2026-11-23, one H100) is benchmarks/results/2026-11-23-h100-decode-first.
set -uo pipefail
export PT_TVM_GIT_COMMIT=${1:-unknown}
source benchmarks/gpu-env.sh
env_setup || exit 1
for f in .gpu-flashinfer/*/flashinfer.sh; do [ -f "$f" ] && source "$f" && break; done
# a part carried by an earlier call of the same warm machine was unpacked into /tmp/gpu-flashinfer
[ -d /tmp/gpu-flashinfer/flashinfer ] && case ":${PYTHONPATH:-}:" in *:/tmp/gpu-flashinfer:*) ;;
  *) export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}/tmp/gpu-flashinfer ;; esac
step=${2:-0/1}
if [ "$step" = sweep ]; then
  out="${OUT:-decode-out}/decode-sweep"; mkdir -p "$out"
  timeout ${SWEEP_LIMIT_S:-420} python -m benchmarks.decode --out "$out" --only sweep > "$out/sweep.log" 2>&1
  echo "sweep rc=$?"; tail -10 "$out/sweep.log" | cut -c1-200
else
  out="${OUT:-decode-out}/decode-${step%/*}"; mkdir -p "$out"
  timeout 420 python -m benchmarks.decode --out "$out" --only suite --part "$step" --tune-top-k 2 --rep-ms 300 \
    > "$out/suite.log" 2>&1
  echo "suite $step rc=$?"; grep "TFLOP/s" "$out/suite.log" | cut -c1-200 | tail -40
fi
