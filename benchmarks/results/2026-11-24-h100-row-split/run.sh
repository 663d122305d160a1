#!/bin/bash
# One device call on ONE H100 (nvidia-h100-x1), carrying .gpu-bundle:
#   source benchmarks/gpu-env.sh && env_setup && python -m benchmarks.experiments.row_split $OUT
# row_split-first.json: at 5bd576e, before the cost model priced the wgmma width (its model's pick was the
#   256x128 tile on most configs; the pick's own timings were lost to a name clash in the experiment, fixed
#   after: "model pick" was both a variant and the summary key). The log is stripped of TileLang's compile lines.
# row_split.json: the same at the commit that prices the wgmma width and searches row splits by default.
source benchmarks/gpu-env.sh && env_setup && nvidia-smi -L
python -m benchmarks.experiments.row_split $OUT 2>&1 | grep -v "TileLang:tilelang.jit.kernel:INFO" > $OUT/row_split.log
tail -30 $OUT/row_split.log
