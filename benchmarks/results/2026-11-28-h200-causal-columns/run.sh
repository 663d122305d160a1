#!/bin/bash
# A causal grid walked in panels of two query blocks across every head where the heads its resident blocks span
# keep their keys and values within 1.5x L2 (pt_tvm.space.COLUMN_SPAN_L2), on ONE H200 (nvidia-h200), from the
# project root; three device calls back to back (the machine stays warm 30 s):
#   1. carrying .gpu-bundle:   source benchmarks/gpu-env.sh && env_setup
#   2. carrying .gpu-peers/a:  source .gpu-peers/a/peers.sh        (../shared/gpu/make-peers-bundle.sh)
#   3. carrying .gpu-peers/b:  bash benchmarks/results/2026-11-28-h200-causal-columns/run.sh COMMIT
# causal_columns-<commit>: the attention-core configs whose pick the rule changes (fp16, causal: head dim 64 at
# 4 x 4096, 128 and 256 at 16 x 1024), the search's pick against the plan it picked before (panels of 4 heads
# walked forwards) and the launch order, beside cuDNN SDPA and flash-attn-4 (benchmarks.experiments.causal_order).
# gpu-tests-4cefa63: tests/test_tile_walk.py's walked plans on the GPU (a causal FlashAttention in panels of two
#   query blocks across every head among them), carrying .gpu-bundle: source benchmarks/gpu-env.sh && env_setup &&
#   OUT=$OUT bash benchmarks/gpu-tests.sh 8 200 tests/test_tile_walk.py -k walked_plans
set -u
source benchmarks/gpu-env.sh && env_setup
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_GIT_COMMIT=$1
python -c "
import sys
from benchmarks.experiments import causal_order as co
from benchmarks.experiments.variants import compare
configs = [c for c in co.CONFIGS if c['note'].strip() in ('d64 s4096', 'd128 s1024', 'd256 s1024')]
compare(configs, co.variants, (\"search's pick\", 'launch order', '4 heads'), sys.argv[1], 'causal_columns.json',
        'bash benchmarks/results/2026-11-28-h200-causal-columns/run.sh', 300, template='flash_attention',
        peer='cudnn-sdpa', also=('fa3',))
" $OUT 2>&1 | grep -v INFO | tee $OUT/causal_columns.log
