"""pt-tvm's kernels as PyTorch ops (``torch.ops.pt_tvm.*``), callable from eager code and from
``torch.compile(fullgraph=True)`` graphs without breaks.

Ops: :func:`attention` (``flash_attn_func`` conventions), :func:`decode_attention` (over a contiguous or paged KV
cache, one plan per shape bucket), :func:`matmul`, :func:`linear`, :func:`swiglu` (a gated MLP's gate/up
projection and SiLU gating in one kernel), :func:`qkv_rope` and :func:`attention_qkv` (an attention layer's
fused QKV projection with its rotary embedding in one kernel, and attention reading its output as it lies),
Mamba's :func:`causal_conv1d` (``causal_conv1d_fn`` conventions), Mamba2's :func:`chunk_state`, :func:`chunk_scan`
and the whole SSD forward :func:`ssd_chunk_scan` (``mamba_chunk_scan_combined`` conventions), plus the kernel
ops ``torch.ops.pt_tvm.gemm`` and ``torch.ops.pt_tvm.gemm_swiglu``. Each has a fake (meta) implementation for
tracing. The first call of a new shape finds its plan in the plan cache, else searches it with the cost model
(or, after ``configure(tune=True)`` or with ``PT_TVM_TUNE=1``, measures the best few on the GPU), compiles it and
logs the choice on logger ``pt_tvm.ops``; later calls of the shape reuse the compiled kernel (see
:mod:`pt_tvm.ops.kernels`).

Example::

    import torch, pt_tvm.ops as ops

    class Block(torch.nn.Module):
        def __init__(self, d=1024, heads=8):
            super().__init__()
            self.heads, self.qkv, self.out = heads, torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)

        def forward(self, x):                                   # x [batch, seqlen, d], fp16/bf16, CUDA
            b, s, d = x.shape
            q, k, v = ops.linear(x, self.qkv.weight, self.qkv.bias).view(b, s, 3, self.heads, -1).unbind(2)
            o = ops.attention(q, k, v, causal=True)              # views of the projection, read as they lie
            return ops.linear(o.view(b, s, d), self.out.weight, self.out.bias)

    model = torch.compile(Block().cuda().half(), fullgraph=True)
"""
from .attention import attention, attention_qkv
from .conv import causal_conv1d
from .decode import decode_attention
from .gemm import gemm, gemm_swiglu, linear, matmul, qkv_rope, swiglu
from .kernels import Config, KernelStore, configure, current, using
from .ssd import chunk_scan, chunk_state, ssd_chunk_scan

__all__ = ["attention", "attention_qkv", "decode_attention", "matmul", "linear", "swiglu", "qkv_rope", "gemm",
           "gemm_swiglu", "causal_conv1d", "chunk_state", "chunk_scan", "ssd_chunk_scan", "Config", "KernelStore",
           "configure", "current", "using"]
