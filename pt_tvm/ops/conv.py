"""Mamba's causal depthwise conv1d, with ``causal_conv1d_fn``'s conventions (the causal-conv1d package's).

``pt_tvm::causal_conv1d`` runs the ``causal_conv1d`` template: ``x [batch, dim, seqlen]`` as a model leaves it
after its in-projection, the transpose of ``[batch, seqlen, dim]`` rows (channels unit-strided), read where it
lies, also as some columns of a wider projection; the result in the same layout.
"""
from typing import Optional

import torch
from torch import Tensor

from . import checks
from .checks import ArgumentError
from .kernels import current, launch, tokens

__all__ = ["causal_conv1d"]

_OP = "pt_tvm.ops.causal_conv1d"
_ACTIVATIONS = {None: "none", "silu": "silu", "swish": "silu"}


def _check(x: Tensor, weight: Tensor, bias: Optional[Tensor], activation: Optional[str]) -> checks.Dims:
    if activation not in _ACTIVATIONS:
        raise ArgumentError(f"{_OP}: argument 'activation' must be None, 'silu' or 'swish', got {activation!r}")
    dims = checks.Dims(_OP)
    checks.tensor(_OP, "x", x, ("batch", "dim", "seqlen"), checks.HALF, contiguous=False)
    dims.bind("x", x, ("batch", "dim", "seqlen"))
    checks.tensor(_OP, "weight", weight, ("dim", "width"), (x.dtype,))
    dims.bind("weight", weight, ("dim", "width"))
    if bias is not None:
        checks.tensor(_OP, "bias", bias, ("dim",), (x.dtype,))
        dims.bind("bias", bias, ("dim",))
    if dims["width"] > 32:
        raise ArgumentError(f"{_OP}: argument 'weight' has width={dims['width']}: at most 32 taps")
    checks.kernel_device(_OP, "x", x)
    checks.same_device(_OP, {"x": x, "weight": weight, "bias": bias})
    return dims


def _rows(x: Tensor) -> tuple[Tensor, int]:
    """``x [batch, dim, seqlen]`` as ``[batch, seqlen, dim]`` rows the kernel reads, and their stride: where
    ``x`` lies (rows of one tensor, some of its columns, starting on a 16-byte boundary: rows of any stride, the
    kernel reads rows TMA cannot address by the LSU), else copied once (also a view under
    ``Config.dynamic_tokens``: a kernel of symbolic length takes packed rows)."""
    rows = x.transpose(1, 2)
    batch, seqlen, dim = rows.shape
    stride = rows.stride(1) if seqlen > 1 else dim
    lies = (not current().config.dynamic_tokens and (rows.stride(2) == 1 or dim == 1) and stride >= dim
            and (batch == 1 or rows.stride(0) == seqlen * stride)
            and checks.start_bytes(rows) % checks.ALIGN == 0)
    if lies:
        return rows.as_strided(rows.shape, (seqlen * stride, stride, 1)), stride
    return rows.contiguous(), dim


@torch.library.custom_op("pt_tvm::causal_conv1d", mutates_args=())
def causal_conv1d(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
                  activation: Optional[str] = None) -> Tensor:
    """``act(bias + conv1d(x, weight))``, causal (``width - 1`` zeros before each sequence), one filter a channel:
    ``x [batch, dim, seqlen]`` float16 or bfloat16 (channels unit-strided: ``h.transpose(1, 2)`` of a ``[batch,
    seqlen, dim]`` tensor ``h``, or of some of its columns, is read where it lies; another layout is copied
    once), ``weight [dim, width]`` and ``bias [dim]`` in ``x``'s dtype, ``activation`` None or "silu" ("swish");
    returns ``[batch, dim, seqlen]`` in the same layout (the transpose of packed ``[batch, seqlen, dim]``)."""
    dims = _check(x, weight, bias, activation)
    rows, stride = _rows(x)
    if bias is None:
        bias = weight.new_zeros(dims["dim"])
    problem = {"batch": dims["batch"], **tokens("seqlen", dims["seqlen"], 64), "channels": dims["dim"],
               "width": dims["width"], "dtype": str(x.dtype).removeprefix("torch."),
               "activation": _ACTIVATIONS[activation], "x_stride": stride}
    return launch("causal_conv1d", problem, rows, weight, bias).transpose(1, 2)


@causal_conv1d.register_fake
def _(x, weight, bias=None, activation=None):
    d = _check(x, weight, bias, activation)
    return x.new_empty((d["batch"], d["seqlen"], d["dim"])).transpose(1, 2)
