"""Argument checks of pt-tvm's PyTorch ops, run before any search: each error names the op and the argument.

Dtypes raise :class:`ArgumentTypeError` (a ``TypeError``); shapes, layouts and devices raise
:class:`ArgumentError` (a ``ValueError``); both are :class:`pt_tvm.errors.PtTvmError` s. An argument
that is no tensor at all never gets here: the op's schema refuses it (a ``RuntimeError`` naming it).
Sizes are checked by name (:class:`Dims`): the first argument to name a dim sets its
size and every later one must agree, so a mismatch names both arguments.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import torch

from ..errors import PtTvmError

__all__ = ["ArgumentError", "ArgumentTypeError", "HALF", "FLOAT32", "FLOATS", "KERNEL_DEVICE_TYPES", "ALIGN", "Dims",
           "tensor", "start_bytes", "tma_view", "same_device", "kernel_device"]

HALF = (torch.float16, torch.bfloat16)
FLOAT32 = (torch.float32,)
FLOATS = (torch.float32, torch.float16, torch.bfloat16)
KERNEL_DEVICE_TYPES = ("cuda", "meta")  # where the compiled kernels run; meta tensors get shapes only
ALIGN = 16  # bytes: where a tensor a kernel reads must start (a TMA descriptor's base, a 16-byte vector load's)


class ArgumentError(PtTvmError, ValueError):
    """An op's argument has the wrong shape, layout or device, or a value the op does not take."""


class ArgumentTypeError(PtTvmError, TypeError):
    """An op's tensor argument has the wrong dtype (or a setting the wrong type)."""


def _dtype_names(dtypes: Sequence[torch.dtype]) -> str:
    return " or ".join(str(d).removeprefix("torch.") for d in dtypes)


def tensor(op: str, name: str, value: torch.Tensor, dims: Sequence[str], dtypes: Sequence[torch.dtype], *,
           contiguous: bool = True) -> torch.Tensor:
    """``value`` if it is of one of ``dtypes`` with one dim per name in ``dims``, contiguous unless told
    otherwise (what a kernel reads must be; what plain PyTorch glue reads need not), and, read by a kernel as
    floating point, starting on a 16-byte boundary of its storage (PyTorch's allocators align the storage
    itself). The ops' schemas refuse arguments that are no tensors before this runs."""
    layout = f"[{', '.join(dims)}]"
    if value.dtype not in dtypes:
        raise ArgumentTypeError(f"{op}: argument {name!r} must be {_dtype_names(dtypes)}, got {value.dtype}")
    if value.dim() != len(dims):
        raise ArgumentError(f"{op}: argument {name!r} must have {len(dims)} dims {layout}, "
                            f"got shape {tuple(value.shape)}")
    if contiguous and not value.is_contiguous():
        raise ArgumentError(f"{op}: argument {name!r} must be contiguous (strides {value.stride()} for shape "
                         f"{tuple(value.shape)}); pass {name}.contiguous()")
    offset = start_bytes(value)
    if contiguous and value.is_floating_point() and offset % ALIGN:
        raise ArgumentError(f"{op}: argument {name!r} starts {offset} bytes into its storage, not on a {ALIGN}-byte "
                            f"boundary (the kernels' TMA and vector loads need one); pass {name}.clone()")
    return value


def tma_view(op: str, name: str, value: torch.Tensor) -> tuple[torch.Tensor, tuple]:
    """``(view, strides)``: a kernel argument as TMA reads it where it lies. A contiguous tensor gives ``()`` (the
    kernel's packed layout); a view (the heads of a fused projection, a ``[batch, heads, seqlen, dim]`` tensor
    transposed) gives the strides of all but its last dim in elements, the view re-strided so that a dim of size
    1 carries the next dim's stride times its size (PyTorch leaves any stride there; the kernel checks every
    stride it was built for, and views of one layout then share a kernel). Its last dim must be unit-strided,
    its other strides positive multiples of 16 bytes and its start on a 16-byte boundary: a TMA descriptor's
    rules, each named in the error."""
    offset = start_bytes(value)
    if offset % ALIGN:
        raise ArgumentError(f"{op}: argument {name!r} starts {offset} bytes into its storage, not on a {ALIGN}-byte "
                            f"boundary (the kernels' TMA and vector loads need one); pass {name}.clone()")
    if value.is_contiguous():
        return value, ()
    shape, size = value.shape, value.element_size()
    strides = list(value.stride())
    if strides[-1] != 1 and shape[-1] > 1:
        raise ArgumentError(f"{op}: argument {name!r} must have a unit stride in its last dim (strides "
                            f"{value.stride()} for shape {tuple(shape)}); pass {name}.contiguous()")
    strides[-1] = 1
    for i in range(len(shape) - 2, -1, -1):
        if shape[i] == 1:
            strides[i] = strides[i + 1] * shape[i + 1]
        elif strides[i] <= 0 or strides[i] * size % ALIGN:
            raise ArgumentError(f"{op}: argument {name!r} has stride {strides[i]} in dim {i} (strides {value.stride()} "
                                f"for shape {tuple(shape)}): a kernel reads a view through TMA, whose strides are "
                                f"positive multiples of {ALIGN} bytes; pass {name}.contiguous()")
    return value.as_strided(shape, strides), tuple(strides[:-1])


def start_bytes(value: torch.Tensor) -> int:
    """How far into its storage ``value`` starts, in bytes (the storage itself is aligned by PyTorch's allocators)."""
    return value.storage_offset() * value.element_size()


class Dims:
    """Named sizes shared by an op's arguments (``batch``, ``heads``, ...)."""

    def __init__(self, op: str):
        self.op = op
        self._size: dict[str, int] = {}
        self._source: dict[str, str] = {}

    def bind(self, name: str, value: torch.Tensor, dims: Sequence[str]) -> None:
        """Record or check the size of each of ``value``'s named dims."""
        for i, (dim, size) in enumerate(zip(dims, value.shape)):
            if dim not in self._size:
                self._size[dim], self._source[dim] = size, name
            elif size != self._size[dim]:
                raise ArgumentError(f"{self.op}: argument {name!r} has {dim}={size} (dim {i} of [{', '.join(dims)}]), "
                                 f"but {self._source[dim]!r} has {dim}={self._size[dim]}")

    def __getitem__(self, dim: str) -> int:
        return self._size[dim]


def same_device(op: str, tensors: Mapping[str, torch.Tensor | None]) -> torch.device:
    """The one device of the given tensors (None entries are skipped)."""
    given = [(n, t) for n, t in tensors.items() if t is not None]
    first, device = given[0][0], given[0][1].device
    for name, t in given[1:]:
        if t.device != device:
            raise ArgumentError(f"{op}: argument {name!r} is on {t.device} but {first!r} is on {device}")
    return device


def kernel_device(op: str, name: str, value: torch.Tensor) -> None:
    """``value`` lies where pt-tvm's kernels run (a CUDA device), or on the meta device (shapes only)."""
    if value.device.type not in KERNEL_DEVICE_TYPES:
        raise ArgumentError(f"{op}: argument {name!r} is on {value.device}: pt-tvm's kernels need a CUDA device "
                         f"(move the inputs with .cuda())")
