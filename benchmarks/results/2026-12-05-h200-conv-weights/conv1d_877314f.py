"""Causal depthwise conv1d (+ SiLU): the convolution of Mamba's mixer over its ``x B C`` channels.

``y[b, t, d] = act(bias[d] + sum_k weight[d, k] * x[b, t - (width - 1) + k, d])`` with ``x`` zero before the
sequence's start, as mamba's ``causal_conv1d_fn`` computes it (and ``F.conv1d(..., padding=width - 1,
groups=channels)[..., :seqlen]``). Tokens lead, channels are contiguous (``[batch, seqlen, channels]``, how a
model's projection leaves them): a block takes ``block_D`` channels of one sequence and walks ``block_S`` of its
tokens in ``block_L``-token steps, each step loading its tokens and the ``width - 1`` before them (TMA or a guarded
cp.async zero-fills the rows before 0 and past the end; the store is clipped there). ``x`` may be a view of a wider
tensor (``x_stride``: the elements between tokens; the channels of one fused in-projection, read as they lie). Any
channel count and stride: rows TMA cannot address (a stride off 16-byte units) are loaded as the aligned 16-byte
chunks around them (cp.async over ``x`` as one run of elements; the taps read each row from its start in its first
chunk), and ``y``'s rows are stored so from a staged tile (the chunks wholly the block's as 16-byte vectors, the
two a row shares with its neighbours an element a thread).

I/O contract: ``x [batch, seqlen, channels]`` dtype (token stride ``x_stride``), ``weight [channels, width]``
dtype, ``bias [channels]`` dtype; ``y [batch, seqlen, channels]`` dtype (packed). Arithmetic in float32.
"""
# No ``from __future__ import annotations``: T.prim_func evaluates the
# parameter annotations against the builder's locals (shapes, dtype).
from typing import Any, Mapping

import tilelang.language as T
import torch
import torch.nn.functional as F

from .base import FAST_MATH, Template, TemplateError, operand, priced, size

__all__ = ["CAUSAL_CONV1D"]

_DTYPES = ("float16", "bfloat16")
_ACCUM = "float32"
_ACTIVATIONS = ("silu", "none")
_BYTES = {"float16": 2, "bfloat16": 2}
_CHUNK_BYTES = 16  # rows whose starts are off these boundaries are loaded as the aligned chunks around them


def build_causal_conv1d(batch: int, seqlen: int, channels: int, width: int, dtype: str, activation: str,
                        x_stride: int, dynamic_seqlen: bool, block_L: int, block_D: int, block_S: int,
                        stage_y: int, threads: int, num_stages: int):
    """The kernel: grid ``(ceil(channels / block_D), ceil(seqlen / block_S), batch)``, a pipelined loop of
    ``block_S / block_L`` steps, each output element one expression of its taps (TileLang then gives a thread
    neighbouring channels and vector loads and stores); ``stage_y``: the step's outputs staged in shared memory
    (stored by TMA) rather than stored from registers; ``dynamic_seqlen``: one kernel for every length, priced
    at ``seqlen``; ``chunked`` (a row stride off 16-byte units): ``x_shared``'s rows one chunk wider."""
    L = size("seqlen", seqlen, dynamic_seqlen)
    halo = width - 1
    strides = (L * x_stride, x_stride, 1) if x_stride != channels else ()
    steps = block_S // block_L
    silu = activation == "silu"
    chunk = _CHUNK_BYTES // _BYTES[dtype]
    chunked = x_stride % chunk != 0
    y_chunked = channels % chunk != 0  # y's rows (packed) off 16-byte units: stored by chunks, edges by elements
    # x as one run of elements from its first to its last, whole chunks (the last may hold up to chunk - 1
    # elements past x's end: a 16-byte load that starts inside x stays in its aligned 16 bytes)
    flat = T.ceildiv((batch * L - 1) * x_stride + channels, chunk) * chunk
    y_flat_size = T.ceildiv(batch * L * channels, chunk) * chunk

    def first(by, s):
        """The first token step ``s`` of block row ``by`` loads (``width - 1`` before its own)."""
        return by * block_S + s * block_L - halo

    def lead(bx, bz, t):
        """Where token ``t``'s channels of block column ``bx`` start in ``x_flat``."""
        return (bz * L + t) * x_stride + bx * block_D

    def aligned(bx, bz, t):
        """The first chunk boundary at or before it."""
        return lead(bx, bz, t) // chunk * chunk

    def shift(bx, bz, t):
        """Where they start in their row of ``x_shared``: after the aligned chunk's leading elements."""
        return lead(bx, bz, t) % chunk if chunked else 0

    def y_bounds(bx, bz, t):
        """Where the block's outputs of token ``t`` start and end in ``y_flat``."""
        start = (bz * L + t) * channels + bx * block_D
        return start, start + T.min(block_D, channels - bx * block_D)

    def y_whole(bx, bz, t, v):
        """Whether element ``v`` of the staged row (from its first chunk boundary) lies in a chunk wholly the
        block's: stored as one vector."""
        start, end = y_bounds(bx, bz, t)
        at = start // chunk * chunk + v // chunk * chunk
        return (t < L) & (at >= start) & (at + chunk <= end)

    def edge(bx, bz, t, e):
        """Element ``e`` of the staged row's first chunk (``e < chunk``) or of its last (the rest)."""
        start, end = y_bounds(bx, bz, t)
        last = (end - 1) // chunk - start // chunk
        return T.if_then_else(e < chunk, e, last * chunk + e - chunk)

    def y_edge(bx, bz, t, v):
        """Whether it is one of the block's outputs in a chunk shared with a neighbour: stored alone."""
        start, end = y_bounds(bx, bz, t)
        at = start // chunk * chunk + v
        return (t < L) & (at >= start) & (at < end) & T.Not(y_whole(bx, bz, t, v))

    @T.prim_func
    def causal_conv1d(
        x: operand((batch, L, channels), dtype, strides),
        weight: T.Tensor((channels, width), dtype),
        bias: T.Tensor((channels,), dtype),
        y: T.Tensor((batch, L, channels), dtype),
    ):
        if chunked:
            x_flat = T.decl_buffer((flat,), dtype, data=x.data)
        if y_chunked:
            y_flat = T.decl_buffer((y_flat_size,), dtype, data=y.data)
        with T.Kernel(T.ceildiv(channels, block_D), T.ceildiv(L, block_S), batch, threads=threads) as (bx, by, bz):
            w_shared = T.alloc_shared((width, block_D), _ACCUM)
            b_shared = T.alloc_shared((block_D,), _ACCUM)
            x_shared = T.alloc_shared((block_L + halo, block_D + chunk * chunked), dtype)
            alloc_y = T.alloc_shared if stage_y or y_chunked else T.alloc_fragment
            y_tile = alloc_y((block_L, block_D + chunk * y_chunked), dtype)
            for k, j in T.Parallel(width, block_D):
                w_shared[k, j] = T.Cast(_ACCUM, weight[T.min(bx * block_D + j, channels - 1), k])
            for j in T.Parallel(block_D):
                b_shared[j] = T.Cast(_ACCUM, bias[T.min(bx * block_D + j, channels - 1)])
            for s in T.Pipelined(steps, num_stages=num_stages):
                if chunked:
                    for i, v in T.Parallel(block_L + halo, block_D + chunk, coalesced_width=T.int32(chunk)):
                        x_shared[i, v] = T.if_then_else(
                            (first(by, s) + i >= 0) & (first(by, s) + i < L)
                            & (aligned(bx, bz, first(by, s) + i) + v // chunk * chunk < flat),
                            x_flat[aligned(bx, bz, first(by, s) + i) + v], T.Cast(dtype, 0))
                else:
                    T.copy(x[bz, first(by, s):first(by, s) + block_L + halo, bx * block_D:(bx + 1) * block_D],
                           x_shared)
                for i, j in T.Parallel(block_L, block_D):
                    shifts = [shift(bx, bz, first(by, s) + i + k) for k in range(width)]
                    y_tile[i, j + (y_bounds(bx, bz, first(by, s) + halo + i)[0] % chunk if y_chunked else 0)] = T.Cast(
                        dtype, _activate(_taps(b_shared, w_shared, x_shared, i, j, shifts), silu))
                if y_chunked:
                    for i, v in T.Parallel(block_L, block_D + chunk, coalesced_width=T.int32(chunk)):
                        if y_whole(bx, bz, first(by, s) + halo + i, v):
                            y_flat[y_bounds(bx, bz, first(by, s) + halo + i)[0] // chunk * chunk + v] = y_tile[i, v]
                    for i, e in T.Parallel(block_L, 2 * chunk):  # the row's first and last chunks
                        if y_edge(bx, bz, first(by, s) + halo + i, edge(bx, bz, first(by, s) + halo + i, e)):
                            y_flat[y_bounds(bx, bz, first(by, s) + halo + i)[0] // chunk * chunk
                                   + edge(bx, bz, first(by, s) + halo + i, e)] = \
                                y_tile[i, edge(bx, bz, first(by, s) + halo + i, e)]
                else:
                    T.copy(y_tile, y[bz, by * block_S + s * block_L:by * block_S + (s + 1) * block_L,
                                     bx * block_D:(bx + 1) * block_D])

    return priced(causal_conv1d, {"seqlen": seqlen} if dynamic_seqlen else {})


def _taps(b_shared, w_shared, x_shared, i, j, shifts: list):
    """``bias + sum_k w[k] x[i + k]`` in float32 (the weights and bias are held so), the taps written out (one
    multiply-add each), one a width; row ``i + k``'s channels start ``shifts[k]`` columns into ``x_shared``."""
    acc = b_shared[j]
    for k, shift in enumerate(shifts):
        acc = acc + w_shared[k, j] * T.Cast(_ACCUM, x_shared[i + k, j + shift])
    return acc


def _activate(v, silu: bool):
    """SiLU as ``v / (1 + 2^(-v log2 e))`` (ex2 on the SFU), or ``v``."""
    return v / (1.0 + T.exp2(v * -1.4426950408889634)) if silu else v


def _check(problem: Mapping[str, Any], tile: Mapping[str, Any]) -> None:
    """Reject what the kernel cannot compute, naming the parameter."""
    p = problem
    for key in ("batch", "seqlen", "channels", "width"):
        if not isinstance(p[key], int) or p[key] < 1:
            raise TemplateError(f"causal_conv1d: parameter {key!r} must be a positive int, got {p[key]!r}")
    if p["dtype"] not in _DTYPES:
        raise TemplateError(f"causal_conv1d: parameter 'dtype'={p['dtype']!r} is not supported "
                            f"(supported: {', '.join(_DTYPES)})")
    if p["activation"] not in _ACTIVATIONS:
        raise TemplateError(f"causal_conv1d: parameter 'activation'={p['activation']!r} is not supported "
                            f"(supported: {', '.join(_ACTIVATIONS)})")
    if p["x_stride"] < p["channels"]:
        raise TemplateError(f"causal_conv1d: parameter 'x_stride'={p['x_stride']} must be at least channels="
                            f"{p['channels']}")
    if p["dynamic_seqlen"] and p["x_stride"] != p["channels"]:
        raise TemplateError("causal_conv1d: parameter 'x_stride' must equal channels with dynamic_seqlen (a kernel "
                            "of symbolic length takes packed rows: TileLang 0.1.15 loads a view of symbolic strides "
                            "an element at a time)")
    if tile["block_S"] % tile["block_L"]:
        raise TemplateError(f"causal_conv1d: parameter 'block_S'={tile['block_S']} must be a multiple of "
                            f"block_L={tile['block_L']}")
    if p["width"] > tile["block_L"]:
        raise TemplateError(f"causal_conv1d: parameter 'width'={p['width']} exceeds block_L={tile['block_L']}")


def _reference(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, **problem: Any) -> torch.Tensor:
    """The float32 result through ``F.conv1d`` (padding ``width - 1`` on the left)."""
    n, width = x.shape[1], weight.shape[1]
    y = F.conv1d(x.float().transpose(1, 2), weight.float()[:, None], bias.float(), padding=width - 1,
                 groups=weight.shape[0])[..., :n].transpose(1, 2).contiguous()
    return F.silu(y) if problem.get("activation", "silu") == "silu" else y


def _make_inputs(problem: Mapping[str, Any], device: Any, generator: torch.Generator | None = None) -> tuple:
    """``x`` (a view of a wider tensor where ``x_stride`` says so), ``weight`` and ``bias``, uniform as
    ``nn.Conv1d`` initializes them."""
    p = problem
    dtype = getattr(torch, p["dtype"])
    kw = {"device": device, "generator": generator}
    wide = torch.randn(p["batch"], p["seqlen"], p["x_stride"], **kw).to(dtype)
    bound = p["width"] ** -0.5
    weight = ((torch.rand(p["channels"], p["width"], **kw) * 2 - 1) * bound).to(dtype)
    bias = ((torch.rand(p["channels"], **kw) * 2 - 1) * bound).to(dtype)
    return wide[..., :p["channels"]], weight, bias


def _flops(problem: Mapping[str, Any]) -> float:
    """Two per tap per output element (the activation not counted)."""
    p = problem
    return 2.0 * p["batch"] * p["seqlen"] * p["channels"] * p["width"]


# Mamba2-1.3B: the conv's channels are x (4096), B and C (128 each), its width 4; x B C a slice of the
# in-projection's 8512 columns.
CAUSAL_CONV1D = Template(
    name="causal_conv1d",
    builder=build_causal_conv1d,
    reference=_reference,
    problem={"batch": 1, "seqlen": 4096, "channels": 4352, "width": 4, "dtype": "float16", "activation": "silu",
             "x_stride": 4352, "dynamic_seqlen": False},
    tile={"block_L": 64, "block_D": 128, "block_S": 512, "stage_y": 0, "threads": 128},
    tile_space={"block_L": (32, 64, 128), "block_D": (64, 128, 256), "block_S": (256, 512, 1024, 2048),
                "stage_y": (0, 1),
                "threads": (128, 256)},
    make_inputs=_make_inputs,
    flops=_flops,
    out_idx=(3,),
    check=_check,
    pass_configs=FAST_MATH,
    doc="Causal depthwise conv1d + SiLU over [batch, seqlen, channels] (= causal_conv1d_fn(x.transpose(1, 2), "
        "weight, bias, activation='silu').transpose(1, 2)).",
)
