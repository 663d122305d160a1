"""``python -m benchmarks registers``: the cost model's registers a thread against ptxas's, and the blocks an SM
each allows (the count decides how many blocks of a software pipeline share an SM)."""
from __future__ import annotations

import shutil

import pytest

from benchmarks import cli as bench_cli
from benchmarks.registers import compare_registers, ptxas_usage
from pt_tvm import cost, hw
from pt_tvm.compiler import schedule_template

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
H100 = hw.get("h100")
# the conv's pick at 4 x 4096 x 4353 fp16 channels on the H100 model (2026-12-05): ptxas gave its kernel 122
# registers a thread, the model counts its fragments' 42
CONV_4353 = dict(batch=4, seqlen=4096, channels=4353, x_stride=4353, block_L=32, block_D=128, block_S=256,
                 stage_y=0, threads=128)


def test_blocks_an_sm_follow_the_registers_a_thread_rounded_as_the_sm_allocates_them():
    result, _, _ = schedule_template("causal_conv1d", H100, params=CONV_4353)
    best = result.best
    assert cost.blocks_per_eu(best.plan, best.graph, H100) == best.estimate.blocks_per_eu == 6
    assert cost.blocks_per_eu(best.plan, best.graph, H100, registers=122) == 4  # 128 x 128 of 65536 a block
    assert cost.blocks_per_eu(best.plan, best.graph, H100, registers=129) == 3  # 136 allocated: 3.76 blocks
    assert cost.blocks_per_eu(best.plan, best.graph, H100, registers=500) == 2  # capped at 255 a thread


@needs_nvcc
def test_ptxas_counts_a_kernel_s_registers():
    src = ('extern "C" __global__ void k(float* y, const float* x) {\n'
           '  float a[16];\n  for (int i = 0; i < 16; ++i) a[i] = x[threadIdx.x * 16 + i];\n'
           '  float s = 0.f;\n  for (int i = 0; i < 16; ++i) s += a[i] * a[15 - i];\n  y[threadIdx.x] = s;\n}\n')
    regs, spills = ptxas_usage(src, "sm_90a")
    assert 16 <= regs <= 64 and spills == 0


@needs_nvcc
def test_the_model_counts_a_gemm_pipeline_s_registers_within_a_third_of_ptxas():
    """chunk_state's registers are its fragments' (a GEMM's accumulator): the model's count is ptxas's within
    a third, and both give the same blocks an SM (2026-12-05: 121 against 120 at its pick)."""
    [u] = compare_registers("chunk_state", "h100", top=1)
    assert abs(u.model - u.ptxas) <= u.ptxas / 3 and u.spill_bytes == 0
    assert u.model_blocks == u.ptxas_blocks


def test_a_chip_ptxas_cannot_count_is_refused_by_name(capsys):
    assert bench_cli.main(["registers", "gemm", "--target", "mi300x"]) == 2
    assert "not a CUDA chip" in capsys.readouterr().err
