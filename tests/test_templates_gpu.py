"""GPU tests of the kernel templates: compile with TileLang's default schedule, run on random
inputs and compare with the float32 PyTorch reference (relative Frobenius error)."""
from __future__ import annotations

import pytest
import tilelang
import tilelang.testing
import torch

from pt_tvm.measure import REL_TOL
from pt_tvm.templates import get


FA = {"batch": 2, "heads": 8, "kv_heads": 8, "seq_len": 1024, "dim": 128}
GEMM = {"M": 1024, "N": 1024, "K": 1024}


def _compile_and_inputs(name: str, overrides: dict, num_stages: int) -> tuple:
    """The compiled kernel, the resolved problem and fresh inputs on the GPU."""
    template = get(name)
    problem, tile = template.resolve(**overrides)
    func = template.builder(**problem, **tile, num_stages=num_stages)
    kernel = tilelang.compile(func, out_idx=list(template.out_idx), target="cuda")
    inputs = template.make_inputs(problem, "cuda", torch.Generator(device="cuda").manual_seed(0))
    return kernel, problem, inputs


def _assert_close(label: str, out: torch.Tensor, ref: torch.Tensor, dtype: str) -> None:
    """Finite output with ``||out - ref|| / ||ref||`` under REL_TOL of the operands' ``dtype`` (printed for the log)."""
    tol = REL_TOL[dtype]
    out = out.float()
    assert out.shape == ref.shape
    assert torch.isfinite(out).all(), f"{label}: non-finite output"
    err = (torch.linalg.vector_norm(out - ref) / torch.linalg.vector_norm(ref)).item()
    print(f"REL_ERR {label} {err:.3e}")
    assert err < tol, f"{label}: relative error {err:.3e}"


@pytest.mark.gpu
@pytest.mark.parametrize(
    "label, overrides, num_stages",
    [
        ("fa_d128", {}, 2),
        ("fa_d128_causal", {"causal": True}, 2),
        ("fa_d128_gqa2", {"kv_heads": 2}, 2),
        ("fa_d64", {"dim": 64}, 2),
        ("fa_d256", {"dim": 256, "block_M": 64, "block_N": 64, "threads": 128}, 1),
        ("fa_d128_bf16", {"dtype": "bfloat16"}, 2),
    ],
)
def test_flash_attention(label: str, overrides: dict, num_stages: int) -> None:
    template = get("flash_attention")
    kernel, problem, inputs = _compile_and_inputs("flash_attention", {**FA, **overrides}, num_stages)
    out = kernel(*inputs)
    _assert_close(label, out, template.reference(*inputs, **problem), problem["dtype"])


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_gemm(dtype: str) -> None:
    template = get("gemm")
    kernel, problem, inputs = _compile_and_inputs("gemm", {**GEMM, "dtype": dtype}, 3)
    out = kernel(*inputs)
    _assert_close(f"gemm_{dtype}", out, template.reference(*inputs, **problem), problem["dtype"])


@pytest.mark.gpu
def test_gemm_rowsum() -> None:
    """``kernel(A, B, S)`` returns ``C`` and adds the row sums into the zeroed ``S`` in place."""
    template = get("gemm_rowsum")
    kernel, problem, inputs = _compile_and_inputs("gemm_rowsum", GEMM, 3)
    C = kernel(*inputs)
    C_ref, S_ref = template.reference(*inputs, **problem)
    _assert_close("gemm_rowsum_C", C, C_ref, problem["dtype"])
    _assert_close("gemm_rowsum_S", inputs[2], S_ref, problem["dtype"])  # float32 sums of fp16 products


if __name__ == "__main__":
    tilelang.testing.main()
