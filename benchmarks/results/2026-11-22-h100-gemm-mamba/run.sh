#!/bin/bash
# The GEMM and Mamba2 suites on ONE H100 (nvidia-h100-x1) in one device call, carrying .gpu-bundle and
# .peers (mamba-ssm's Triton kernels): a check that pricing interleaved wgmmas of sibling warpgroups and
# offering turns between them (issue #6) did not cost these kernels. Run: run.sh COMMIT
set -u
export PT_TVM_GIT_COMMIT=$1
source benchmarks/gpu-env.sh
env_setup || exit 1
suite gemm 4 240
suite mamba 8 300
