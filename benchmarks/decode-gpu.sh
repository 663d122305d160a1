#!/usr/bin/env bash
# Issue 16 (decoding attention) on one GPU, at most 8.5 minutes (three timeouts) on an H100: the GPU tests of the decode kernels,
# then the decode slice of the suite with its peers, the device-to-device copy peak, the chart of KV bandwidth
# against kv_len and the cost model's split against the measured best (benchmarks/decode.py).
#
# Prepare on the CPU machine, from the project root (once):
#   bash ../shared/gpu/make-bundle.sh && bash ../shared/gpu/make-peers-bundle.sh
# Then three device runs on the same machine (a transfer carries at most 64 MB):
#   1. carry .gpu-bundle:    source .gpu-bundle/setup.sh
#   2. carry .gpu-peers/a:   source .gpu-peers/a/peers.sh
#   3. carry .gpu-peers/b:   bash benchmarks/decode-gpu.sh        (results under $OUT/decode)
# FlashInfer is measured only where `import flashinfer` works: its set travels in parts made by
# benchmarks/fetch_flashinfer.sh (each part's run sources .gpu-flashinfer/N/flashinfer.sh); otherwise its rows
# say why.
set -uo pipefail
source .gpu-bundle/setup.sh || exit 1
[ -d .gpu-peers/b ] && source .gpu-peers/b/peers.sh
for f in .gpu-flashinfer/*/flashinfer.sh; do [ -f "$f" ] && source "$f" && break; done
out="${OUT:-decode-out}/decode"
mkdir -p "$out"
timeout 200 python3 -m pytest -q tests/test_decode.py -m gpu -p no:cacheprovider 2>&1 | tail -15 | tee "$out/gpu-tests.txt"
timeout 210 python3 -m benchmarks.decode --out "$out" --only suite --tune-top-k 2 --rep-ms 300 2>&1 | tail -40
timeout 100 python3 -m benchmarks.decode --out "$out" --only sweep 2>&1 | tail -10
