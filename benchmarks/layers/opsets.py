"""The op sets of the layers' other systems: pt-tvm's PyTorch ops, and mamba-ssm's Triton kernels.

Each set calls its library as that library's user would, adapting only what the library's contract asks
(pt-tvm's SwiGLU and QKV-RoPE ops take contiguous tensors: the layers' slices of fused projections are copied for
them; its linear, attention, conv and SSD ops read them as they lie).
pt-tvm's set fuses the QKV projection with RoPE in one kernel whose output its attention reads as it lies.
What a library does not offer stays plain PyTorch (:mod:`benchmarks.layers.models`): pt-tvm has no norm
kernel, mamba-ssm no attention. pt-tvm's set runs Mamba's causal conv1d on its own kernel
(``pt_tvm.ops.causal_conv1d``); mamba-ssm's set keeps PyTorch's (mamba-ssm's fused conv path needs the
causal-conv1d CUDA extension, which ``benchmarks/fetch_mamba_ssm.sh`` does not build).
"""
from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor

import pt_tvm.ops as pt_ops

from .models import Ops, gated_rms_norm, sdpa_attention

__all__ = ["PT_TVM", "mamba_ssm"]


def _linear(x: Tensor, weight: Tensor) -> Tensor:
    return pt_ops.linear(x, weight)


def _swiglu(x: Tensor, weight: Tensor) -> Tensor:
    return pt_ops.swiglu(x.contiguous(), weight)


def _attention(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    return pt_ops.attention(q, k, v, causal=True)


def _ssd(x: Tensor, dt: Tensor, A: Tensor, B: Tensor, C: Tensor, chunk: int, D: Tensor, dt_bias: Tensor) -> Tensor:
    return pt_ops.ssd_chunk_scan(x, dt, A, B, C, chunk, D=D, dt_bias=dt_bias, dt_softplus=True)


def _rope_attention(x: Tensor, weight: Tensor, cos: Tensor, sin: Tensor, kv_heads: int) -> Tensor:
    return pt_ops.attention_qkv(pt_ops.qkv_rope(x.contiguous(), weight, cos, sin, kv_heads), kv_heads, causal=True)


def _conv(x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    return pt_ops.causal_conv1d(x.transpose(1, 2), weight.squeeze(1), bias, activation="silu").transpose(1, 2)


PT_TVM = Ops("pt-tvm", _linear, _attention, _ssd, gated_rms_norm, _swiglu, _rope_attention, _conv)


def mamba_ssm() -> Ops:
    """mamba-ssm's ``mamba_chunk_scan_combined`` and its gated RMSNorm (Triton), as its
    ``Mamba2`` module's non-fused path calls them; raises ImportError where mamba_ssm is not importable
    (``benchmarks/fetch_mamba_ssm.sh`` lays it out in ``.peers/mamba`` for PYTHONPATH)."""
    from mamba_ssm.ops.triton.layernorm_gated import rmsnorm_fn  # optional peer (fetch_mamba_ssm.sh)
    from mamba_ssm.ops.triton.ssd_combined import mamba_chunk_scan_combined  # optional peer (fetch_mamba_ssm.sh)

    def ssd(x: Tensor, dt: Tensor, A: Tensor, B: Tensor, C: Tensor, chunk: int, D: Tensor, dt_bias: Tensor) -> Tensor:
        return mamba_chunk_scan_combined(x, dt, A, B, C, chunk, D=D, dt_bias=dt_bias, dt_softplus=True)

    def norm(y: Tensor, z: Tensor, weight: Tensor, eps: float, group_size: int) -> Tensor:
        return rmsnorm_fn(y, weight, None, z=z, eps=eps, group_size=group_size, norm_before_gate=False)

    return Ops("mamba-ssm", F.linear, sdpa_attention, ssd, norm)
