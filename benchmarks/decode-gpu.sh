#!/usr/bin/env bash
# Issue 16 (decoding attention) on one GPU, at most 8.5 minutes on an H100: the decode slice of the suite with
# its peers, the device-to-device copy peak, the chart of KV bandwidth against kv_len and the cost model's split
# against the measured best (benchmarks/decode.py); the decode GPU tests run with the others
# (benchmarks/gpu-tests.sh).
#
# Prepare on the CPU machine, from the project root (once):
#   bash ../shared/gpu/make-bundle.sh && bash ../shared/gpu/make-peers-bundle.sh
# Then three device calls on the same warm machine (a call carries at most 64 MiB, so the bundle and the two
# halves of flash-attn-4 travel apart; benchmarks/gpu-env.sh keeps each in /tmp for the next call):
#   1. carry .gpu-bundle:    source benchmarks/gpu-env.sh && env_setup
#   2. carry .gpu-peers/a:   source benchmarks/gpu-env.sh && env_setup
#   3. carry .gpu-peers/b:   bash benchmarks/decode-gpu.sh [COMMIT]        (results under $OUT/decode)
# FlashInfer is measured only where `import flashinfer` works: its set travels in parts made by
# benchmarks/fetch_flashinfer.sh (each part's run sources .gpu-flashinfer/N/flashinfer.sh); otherwise its rows
# say why. The first run (2026-11-23, one H100) is benchmarks/results/2026-11-23-h100-decode-first.
set -uo pipefail
export PT_TVM_GIT_COMMIT=${1:-unknown}
source benchmarks/gpu-env.sh
env_setup || exit 1
for f in .gpu-flashinfer/*/flashinfer.sh; do [ -f "$f" ] && source "$f" && break; done
out="${OUT:-decode-out}/decode"
mkdir -p "$out"
timeout 300 python -m benchmarks.decode --out "$out" --only suite --tune-top-k 2 --rep-ms 300 > "$out/suite.log" 2>&1
echo "suite rc=$?"; grep "TFLOP/s" "$out/suite.log" | cut -c1-200 | tail -40
timeout 200 python -m benchmarks.decode --out "$out" --only sweep > "$out/sweep.log" 2>&1
echo "sweep rc=$?"; tail -10 "$out/sweep.log" | cut -c1-200
