#!/bin/bash
# Random problems of seeds 1-2 of every template (tests/test_random_problems.py, 20 problems), as the longer sweep
# (2026-11-30-h200-x2-random-problems) but with each passed test's output kept (gpu-tests.sh -rP since this
# commit), so that the relative errors they print are on record; one H200 (nvidia-h200), one device call carrying
# .gpu-bundle, within the session's last device time:
#   bash benchmarks/results/2026-11-30-h200-random-problems-errors/run.sh COMMIT
set -u
source benchmarks/gpu-env.sh
env_setup || exit 1
export PYTHONPATH=$PWD:$PYTHONPATH PT_TVM_RANDOM_SEEDS=1:3
OUT=$OUT bash benchmarks/gpu-tests.sh 16 110 tests/test_random_problems.py
gzip -f $OUT/gpu-tests.txt
zcat $OUT/gpu-tests.txt.gz | grep -E "^PROBLEM|^REL_ERR" | paste - - | cut -c1-400 | head -30
