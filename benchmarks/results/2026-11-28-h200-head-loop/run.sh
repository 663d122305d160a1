#!/bin/bash
# chunk_scan's pipelined loop over heads (head_loop), on ONE H200 (nvidia-h200), from a checkout of 2ef30b3 (the
# experiment module and the template option were removed after this run, being 2.7-3.9x slower than the key loop),
# one device call carrying .gpu-bundle and mamba-ssm's Triton kernels (benchmarks/fetch_mamba_ssm.sh, packed as
# .peers/packed/mamba.tar.xz: the tree, the bundle and the unpacked folder together pass the 64 MiB a call carries):
#   git checkout 2ef30b3 && bash benchmarks/results/2026-11-28-h200-head-loop/run.sh COMMIT
# debug.py (debug.txt): one small shape, TileLang's own pipelining and pt-tvm's plans, errors per chunk, row block
# and head; it found the shared-memory merge that c333a06 turns off (debug.txt is its run at 2ef30b3, all correct).
set -u
tar -C .peers -xJf .peers/packed/mamba.tar.xz
source benchmarks/gpu-env.sh && env_setup
git_commit=$1
timeout 150 python benchmarks/results/2026-11-28-h200-head-loop/debug.py 2>&1 | grep -v "INFO\|Warp" > $OUT/debug.txt
grep "head_loop=" $OUT/debug.txt
timeout 560 python -m benchmarks.experiments.head_loop $OUT > $OUT/head_loop.log 2>&1
echo "rc=$? (at $git_commit)"; grep -v "INFO\|AutoWarpSpecialization" $OUT/head_loop.log | tail -45
