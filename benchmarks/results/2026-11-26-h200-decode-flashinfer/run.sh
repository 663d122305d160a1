#!/bin/bash
# The decode suite's GPU slice (8 configs) on ONE H200 (nvidia-h200) at bc76e65, with FlashInfer 0.7.2.post1 as a
# peer (benchmarks/fetch_flashinfer.sh packed it; its kernels JIT-compiled on the machine) and settled timing rounds
# (each system 500 ms untimed before its share of a round). Device calls on one warm machine
# (benchmarks/decode-gpu.sh says how): the TileLang bundle, flash-attn-4's two halves, then .gpu-flashinfer/0
# (sourced, its JIT warmed by `python -m benchmarks.decode --only suite --systems flashinfer`), then
#   bash benchmarks/decode-gpu.sh bc76e65 0/3      (part-0/)
#   bash benchmarks/decode-gpu.sh bc76e65 1/3      (part-1/)
#   bash benchmarks/decode-gpu.sh bc76e65 2/3      (part-2/)
# Every part finished (123-199 s each). The split sweep was not repeated: splits-728540f.json and its log are
# the sweep of 2026-11-26 at 728540f (same H200 kind; the split kernel is unchanged since). Logs are stripped of
# TileLang's compile lines. Then, on any machine:
#   python -m benchmarks merge part-0/decode.json part-1/decode.json part-2/decode.json --out decode.json
#   python -m benchmarks.decode --chart decode.json --out .      (bandwidth.png)
#   python -m benchmarks report decode.json --out-dir decode/
bash benchmarks/decode-gpu.sh "$@"
