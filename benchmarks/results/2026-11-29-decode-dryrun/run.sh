#!/bin/bash
# The whole decode grid (136 configs) dry-run on this project's 2-core CPU machine at 69e89b4 (no GPU): pt-tvm's
# search on the H200 model and the lowering of its pick, with the op's kernels of dynamic sizes; two shards side
# by side, one a core:
#   for i in 0 1; do python -m benchmarks run --suite decode --dry-run --target h200 --shard $i/2 --tune-top-k 2 \
#     --systems pt-tvm,pt-tvm-model --out decode-$i.json & done; wait
# Ran 2026-11-29, 37 min: 272 rows, 0 failed; the searches 15 s in the median, 31 s at most (two at once on two
# cores); the 272 candidates the tuner would measure are 66 distinct (shape class, tile, plan) kernels, the
# compiles a GPU run of the whole grid needs now that configs share them; every pick's grid known at its sizes.
