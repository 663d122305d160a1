#!/bin/bash
# The decode suite's GPU slice (8 configs) and the split sweep on ONE H200 (nvidia-h200), at 728540f, six device calls
# on one warm machine (benchmarks/decode-gpu.sh says how): the TileLang bundle, flash-attn-4's two halves, then
#   bash benchmarks/decode-gpu.sh 728540f 0/3      (part-0/; the third call, carrying .gpu-peers/b)
#   bash benchmarks/decode-gpu.sh 728540f 1/3      (part-1/)
#   bash benchmarks/decode-gpu.sh 728540f 2/3; bash benchmarks/decode-gpu.sh 728540f sweep   (part-2/, splits.json)
# Every part finished (92-127 s each); FlashInfer was not carried (its rows say so). Logs are stripped of
# TileLang's compile lines. Then, on any machine:
#   python -m benchmarks merge part-0/decode.json part-1/decode.json part-2/decode.json --out decode.json
#   python -m benchmarks.decode --chart decode.json --out .      (bandwidth.png)
#   python -m benchmarks report decode.json --out-dir decode/
bash benchmarks/decode-gpu.sh "$@"
