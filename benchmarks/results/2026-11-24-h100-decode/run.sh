#!/bin/bash
# The decode suite's second GPU run, ONE H100 (nvidia-h100-x1), at 19bd2c9: three device calls on one warm machine
# (benchmarks/decode-gpu.sh says how: the bundle, then flash-attn-4's halves), the last:
#   bash benchmarks/decode-gpu.sh 19bd2c9
# Its suite step was cut off at 300 s after 3 of 8 configs (tuning's compiles); the split sweep (splits.json)
# finished 3 configs. Logs are stripped of TileLang's compile lines.
bash benchmarks/decode-gpu.sh "$@"
