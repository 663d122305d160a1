"""Mamba2's SSD chunked scan forward (Dao & Gu 2024) with mamba_ssm's argument conventions.

``pt_tvm::chunk_state`` and ``pt_tvm::chunk_scan`` are the templates' kernels, taking the arguments of
mamba_ssm's ``_chunk_state_fwd(B, x, dt, dA_cumsum)`` and ``_chunk_scan_fwd(cb, x, dt, dA_cumsum, C,
states, D)``. ``pt_tvm::ssd_chunk_scan`` is the whole forward of ``mamba_chunk_scan_combined`` (as
mamba_ssm's ``_mamba_chunk_scan_combined_fwd`` computes it), a composite op whose body
``torch.compile`` traces. Two of its five steps run on pt-tvm kernels; pt-tvm has no template for the
other three, which are plain PyTorch here (elementwise work, a cumulative sum and small matmuls that
Inductor fuses):

1. ``dt`` and ``dA_cumsum`` ``[batch, heads, nchunks, chunk]`` (glue, mamba's ``_chunk_cumsum_fwd``):
   ``dt + dt_bias``, softplus, clamped to ``dt_limit``, zero past the sequence's end (a partial last
   chunk), and the running sum of ``A * dt`` within each chunk;
2. ``states``: the state each chunk leaves behind (``chunk_state`` kernel);
3. ``prev_states``, ``final_states`` (glue, mamba's ``_state_passing_fwd``): the state entering each
   chunk and the one after the last, from the chunks' states decayed by ``exp(dA_cumsum[..., -1])``;
4. ``cb = C B^T`` per chunk, accumulated in float32 and returned in ``x``'s dtype (glue, mamba's
   ``_bmm_chunk_fwd``, which returns float32 there: chunk_scan rounds the scores built from it to ``x``'s dtype
   for their GEMM either way, and every head reads ``cb`` again, so half its bytes is the kernel's gain);
5. ``out`` (``chunk_scan`` kernel), then ``D [heads, headdim]`` (the kernel takes ``D [heads]``) and
   the gate ``out * silu(z)`` when given (glue).
"""
import functools
import math
from typing import Callable, Optional

import torch
import torch.nn.functional as F
from torch import Tensor

from . import checks
from .checks import ArgumentError, ArgumentTypeError
from .kernels import current, launch, tokens

__all__ = ["chunk_state", "chunk_scan", "ssd_chunk_scan", "prefix_sum"]

_X = ("batch", "seqlen", "heads", "headdim")
_BC = ("batch", "seqlen", "groups", "dstate")
_CHUNKED = ("batch", "heads", "nchunks", "chunk")
_CB = ("batch", "nchunks", "groups", "chunk", "chunk")
_STATES = ("batch", "nchunks", "heads", "headdim", "dstate")


def _bind(op: str, dims: checks.Dims, args: tuple, contiguous: bool = True) -> None:
    """Check and bind ``(name, tensor, layout, dtypes)`` kernel arguments (contiguous unless told otherwise: the
    kernels read ``x``, ``B`` and ``C`` as views, :func:`_views`)."""
    for name, t, layout, dtypes in args:
        checks.tensor(op, name, t, layout, dtypes, contiguous=contiguous)
        dims.bind(name, t, layout)


def _views(op: str, tensors: dict[str, Tensor]) -> tuple[list[Tensor], dict]:
    """``x``, ``B``, ``C`` as the kernel reads them, and the problem's strides of those that are views: where they
    lie (:func:`checks.tma_view`: some columns of Mamba2's convolved in-projection, which a layer would otherwise
    copy), except under ``Config.dynamic_tokens``, whose kernels of a symbolic length take packed tensors (a view's
    batch stride follows the length): copied there."""
    out, strides = [], {}
    for name, t in tensors.items():
        view, stride = checks.tma_view(op, name, t.contiguous() if current().config.dynamic_tokens else t)
        out.append(view)
        if stride:
            strides[f"{name}_strides"] = stride
    return out, strides


def _check_chunks(op: str, dims: checks.Dims, heads_from: str) -> None:
    """``nchunks = ceil(seqlen / chunk)`` and whole groups of heads."""
    want = -(-dims["seqlen"] // dims["chunk"])
    if dims["nchunks"] != want:
        raise ArgumentError(f"{op}: argument 'dt' has nchunks={dims['nchunks']}, but seqlen={dims['seqlen']} in "
                            f"chunks of {dims['chunk']} makes {want}")
    if dims["heads"] % dims["groups"]:
        raise ArgumentError(f"{op}: groups={dims['groups']} must divide the heads={dims['heads']} "
                            f"of {heads_from!r}")


def _same_dtype(op: str, reference: str, tensors: dict) -> None:
    for name, t in tensors.items():
        if t.dtype != tensors[reference].dtype:
            raise ArgumentTypeError(f"{op}: argument {name!r} is {t.dtype} but {reference!r} is "
                                    f"{tensors[reference].dtype}")


def _problem(dims: checks.Dims, x: Tensor) -> dict:
    """The template's problem; with ``Config.dynamic_tokens`` its length symbolic, priced at the bucket."""
    return {"batch": dims["batch"], **tokens("seqlen", dims["seqlen"], dims["chunk"]), "heads": dims["heads"],
            "headdim": dims["headdim"], "dstate": dims["dstate"], "chunk": dims["chunk"], "groups": dims["groups"],
            "dtype": str(x.dtype).removeprefix("torch.")}


def _check_state(B: Tensor, x: Tensor, dt: Tensor, dA_cumsum: Tensor) -> checks.Dims:
    op = "pt_tvm.ops.chunk_state"
    dims = checks.Dims(op)
    _bind(op, dims, (("B", B, _BC, checks.HALF), ("x", x, _X, checks.HALF)), contiguous=False)
    _bind(op, dims, (("dt", dt, _CHUNKED, checks.FLOAT32), ("dA_cumsum", dA_cumsum, _CHUNKED, checks.FLOAT32)))
    _same_dtype(op, "x", {"x": x, "B": B})
    _check_chunks(op, dims, "x")
    checks.kernel_device(op, "x", x)
    checks.same_device(op, {"x": x, "B": B, "dt": dt, "dA_cumsum": dA_cumsum})
    return dims


@torch.library.custom_op("pt_tvm::chunk_state", mutates_args=())
def chunk_state(B: Tensor, x: Tensor, dt: Tensor, dA_cumsum: Tensor) -> Tensor:
    """The state each chunk leaves behind, ``states [batch, nchunks, heads, headdim, dstate]`` float32
    (mamba_ssm's ``_chunk_state_fwd(B, x, dt, dA_cumsum, states_in_fp32=True)``).

    ``B [batch, seqlen, groups, dstate]`` and ``x [batch, seqlen, heads, headdim]`` float16 or bfloat16, contiguous
    or views read as they lie (unit-strided last dim, other strides whole 16-byte units: columns of a fused
    projection); ``dt`` and ``dA_cumsum [batch, heads, nchunks, chunk]`` float32, contiguous; on one CUDA device.
    """
    dims = _check_state(B, x, dt, dA_cumsum)
    (B, x), strides = _views("pt_tvm.ops.chunk_state", {"B": B, "x": x})
    return launch("chunk_state", {**_problem(dims, x), **strides}, B, x, dt, dA_cumsum)


@chunk_state.register_fake
def _(B, x, dt, dA_cumsum):
    d = _check_state(B, x, dt, dA_cumsum)
    _views("pt_tvm.ops.chunk_state", {"B": B, "x": x})
    return x.new_empty((d["batch"], d["nchunks"], d["heads"], d["headdim"], d["dstate"]), dtype=torch.float32)


def _check_scan(cb: Tensor, x: Tensor, dt: Tensor, dA_cumsum: Tensor, C: Tensor, prev_states: Tensor,
                D: Optional[Tensor]) -> checks.Dims:
    op = "pt_tvm.ops.chunk_scan"
    dims = checks.Dims(op)
    _bind(op, dims, (("x", x, _X, checks.HALF), ("C", C, _BC, checks.HALF)), contiguous=False)
    _bind(op, dims, (("cb", cb, _CB, checks.FLOATS), ("dt", dt, _CHUNKED, checks.FLOAT32),
                     ("dA_cumsum", dA_cumsum, _CHUNKED, checks.FLOAT32),
                     ("prev_states", prev_states, _STATES, checks.HALF)))
    if D is not None:
        _bind(op, dims, (("D", D, ("heads",), checks.FLOAT32),))
    _same_dtype(op, "x", {"x": x, "C": C, "prev_states": prev_states})
    if cb.dtype not in (torch.float32, x.dtype):
        raise ArgumentTypeError(f"{op}: argument 'cb' is {cb.dtype}: it must be torch.float32 (mamba's) or x's "
                                f"dtype {x.dtype}")
    _check_chunks(op, dims, "x")
    checks.kernel_device(op, "x", x)
    checks.same_device(op, {"x": x, "cb": cb, "dt": dt, "dA_cumsum": dA_cumsum, "C": C, "prev_states": prev_states,
                            "D": D})
    return dims


@torch.library.custom_op("pt_tvm::chunk_scan", mutates_args=())
def chunk_scan(cb: Tensor, x: Tensor, dt: Tensor, dA_cumsum: Tensor, C: Tensor, prev_states: Tensor,
               D: Optional[Tensor] = None) -> Tensor:
    """The SSD output ``out [batch, seqlen, heads, headdim]`` in ``x``'s dtype (mamba_ssm's
    ``_chunk_scan_fwd(cb, x, dt, dA_cumsum, C, states, D)``, without ``z``).

    ``cb [batch, nchunks, groups, chunk, chunk]`` float32 or ``x``'s dtype; ``x``, ``dt``, ``dA_cumsum`` as for
    :func:`chunk_state`; ``C [batch, seqlen, groups, dstate]`` and ``prev_states [batch, nchunks, heads,
    headdim, dstate]`` in ``x``'s dtype; ``D [heads]`` float32; contiguous (``x`` and ``C`` also views, as for
    :func:`chunk_state`), on one CUDA device. ``out`` is contiguous.
    """
    dims = _check_scan(cb, x, dt, dA_cumsum, C, prev_states, D)
    (x, C), strides = _views("pt_tvm.ops.chunk_scan", {"x": x, "C": C})
    problem = {**_problem(dims, x), "has_d": D is not None, "cb_dtype": str(cb.dtype).removeprefix("torch."),
               **strides}
    inputs = (cb, x, dt, dA_cumsum, C, prev_states) + (() if D is None else (D,))
    return launch("chunk_scan", problem, *inputs)


@chunk_scan.register_fake
def _(cb, x, dt, dA_cumsum, C, prev_states, D=None):
    _check_scan(cb, x, dt, dA_cumsum, C, prev_states, D)
    _views("pt_tvm.ops.chunk_scan", {"x": x, "C": C})
    return x.new_empty(x.shape)


# ---------------------------------------------------------------- the whole forward
def _check_ssd(x: Tensor, dt: Tensor, A: Tensor, B: Tensor, C: Tensor, chunk_size: int, D: Optional[Tensor],
               z: Optional[Tensor], dt_bias: Optional[Tensor], initial_states: Optional[Tensor], dt_min: float,
               dt_max: Optional[float]) -> None:
    """``x``, ``B``, ``C`` go to the kernels (:func:`_addressable`); the rest is read by PyTorch glue."""
    op = "pt_tvm.ops.ssd_chunk_scan"
    dims = checks.Dims(op)
    _bind(op, dims, (("x", x, _X, checks.HALF), ("B", B, _BC, checks.HALF), ("C", C, _BC, checks.HALF)),
          contiguous=False)
    _same_dtype(op, "x", {"x": x, "B": B, "C": C})
    optional = {"D": D, "z": z, "dt_bias": dt_bias, "initial_states": initial_states}
    if D is not None and D.dim() not in (1, 2):
        raise ArgumentError(f"{op}: argument 'D' must be [heads] or [heads, headdim], "
                            f"got shape {tuple(D.shape)}")
    glue = (("dt", dt, ("batch", "seqlen", "heads"), checks.FLOATS), ("A", A, ("heads",), checks.FLOATS),
            ("D", D, ("heads", "headdim")[:D.dim()] if D is not None else (), checks.FLOATS),
            ("z", z, _X, (x.dtype,)), ("dt_bias", dt_bias, ("heads",), checks.FLOATS),
            ("initial_states", initial_states, ("batch", "heads", "headdim", "dstate"), checks.FLOATS))
    for name, t, layout, dtypes in glue:
        if t is not None:
            checks.tensor(op, name, t, layout, dtypes, contiguous=False)
            dims.bind(name, t, layout)
    if chunk_size < 1:
        raise ArgumentError(f"{op}: argument 'chunk_size' must be a positive int, got {chunk_size}")
    if dims["heads"] % dims["groups"]:
        raise ArgumentError(f"{op}: groups={dims['groups']} of 'B' must divide the heads={dims['heads']} of 'x'")
    if dt_max is not None and not dt_min <= dt_max:
        raise ArgumentError(f"{op}: argument 'dt_limit' must be (min, max) with min <= max, "
                            f"got ({dt_min}, {dt_max})")
    checks.kernel_device(op, "x", x)
    checks.same_device(op, {"x": x, "dt": dt, "A": A, "B": B, "C": C, **optional})


def _addressable(t: Tensor) -> Tensor:
    """``t`` where the kernels can read it as it lies (:func:`_views`), else copied once, contiguous."""
    try:
        checks.tma_view("pt_tvm.ops.ssd_chunk_scan", "x", t)
    except ArgumentError:
        return t.contiguous()
    return t


def _traced(x: Tensor) -> bool:
    """Whether ``torch.compile`` traces this call: Dynamo says so; AOTAutograd, decomposing
    ``pt_tvm::ssd_chunk_scan``, does not, but hands it tensor subclasses (fakes, functional wrappers)."""
    return type(x) is not torch.Tensor or torch.compiler.is_compiling()


def prefix_sum(x: Tensor) -> Tensor:
    """``torch.cumsum(x, dim=-1)``; when traced for ``torch.compile`` (by Dynamo, or by AOTAutograd decomposing
    ``pt_tvm::ssd_chunk_scan``: then ``x`` is a tensor subclass) as log2(n) shifted adds, because Inductor's split
    scan of torch 2.11 fails to generate code for these cumulative sums (InductorError, seen on an H100)."""
    if not _traced(x):
        return torch.cumsum(x, dim=-1)
    shift = 1
    while shift < x.shape[-1]:
        x = x + F.pad(x[..., :-shift], (shift, 0))
        shift *= 2
    return x


def _chunk_cumsum(dt: Tensor, A: Tensor, chunk: int, dt_bias: Optional[Tensor], softplus: bool, dt_min: float,
                  dt_max: Optional[float]) -> tuple[Tensor, Tensor]:
    """``(dt, dA_cumsum)`` float32 ``[batch, heads, nchunks, chunk]`` from ``dt [batch, seqlen, heads]``."""
    batch, seqlen, heads = dt.shape
    nchunks = -(-seqlen // chunk)
    dt = dt.float() if dt_bias is None else dt.float() + dt_bias.float()
    if softplus:
        dt = F.softplus(dt)  # threshold 20: x itself above it, as mamba's kernel
    dt = dt.clamp(min=dt_min, max=dt_max)
    if nchunks * chunk != seqlen:  # positions past the end carry no dt (mamba masks them to 0)
        dt = F.pad(dt, (0, 0, 0, nchunks * chunk - seqlen))
    dt = dt.view(batch, nchunks, chunk, heads).permute(0, 3, 1, 2).contiguous()
    return dt, prefix_sum(dt * A.float()[None, :, None, None])


def _state_passing(states: Tensor, dA_last: Tensor, initial_states: Optional[Tensor]) -> tuple[Tensor, Tensor]:
    """``(prev_states [batch, nchunks, heads, headdim, dstate], final_states [batch, heads, headdim, dstate])``
    in float32: ``s_0 = initial_states`` (or 0), ``s_{c+1} = exp(dA_last[c]) s_c + states[c]``, chunk by chunk
    as mamba_ssm's ``_state_passing_fwd`` runs it: elementwise steps that Inductor fuses into one pass over the
    states (the closed form, a float32 matmul by the decays between every pair of chunks, ran 27-35 us per
    Mamba2-1.3B layer call on an H100 at 512-2048 tokens: a SIMT GEMM, with copies around it)."""
    s = torch.zeros_like(states[:, 0]) if initial_states is None else initial_states.float()
    decay = torch.exp(dA_last)[..., None, None]                                        # [b, h, c, 1, 1]
    entering = []
    for c in range(states.shape[1]):
        entering.append(s)
        s = decay[:, :, c] * s + states[:, c]
    return torch.stack(entering, dim=1), s


def _chunk_products(C: Tensor, B: Tensor) -> Tensor:
    """``C B^T`` of ``[..., length, dstate]`` half-precision tiles in their dtype, accumulated in float32: on a GPU
    one batched half-precision matmul, elsewhere by upcasting first (a float32 matmul there), then rounding."""
    if not C.is_cuda:
        return torch.matmul(C.float(), B.float().transpose(-1, -2)).to(C.dtype)
    *batch, length, dstate = C.shape
    products = torch.bmm(C.reshape(-1, length, dstate), B.reshape(-1, length, dstate).transpose(-1, -2))
    return products.view(*batch, length, length)


def _bmm_chunk(C: Tensor, B: Tensor, chunk: int) -> Tensor:
    """``cb [batch, nchunks, groups, chunk, chunk]`` in ``C``'s dtype: ``C B^T`` within each chunk, zero past the end
    of a partial last chunk (computed apart from the whole chunks: ``C`` and ``B`` are never padded)."""
    batch, seqlen, groups, dstate = C.shape
    full, rest = divmod(seqlen, chunk)

    def chunked(t: Tensor, start: int, n: int, length: int) -> Tensor:
        """Positions ``start .. start + n*length`` as ``[batch, n, groups, length, dstate]``."""
        return t[:, start:start + n * length].reshape(batch, n, length, groups, dstate).transpose(2, 3)

    whole = _chunk_products(chunked(C, 0, full, chunk), chunked(B, 0, full, chunk))
    if not rest:
        return whole
    cb = whole.new_zeros((batch, full + 1, groups, chunk, chunk))
    cb[:, :full] = whole
    tail = full * chunk
    cb[:, full, :, :rest, :rest] = _chunk_products(chunked(C, tail, 1, rest), chunked(B, tail, 1, rest))[:, 0]
    return cb


torch.library.define(
    "pt_tvm::ssd_chunk_scan",
    "(Tensor x, Tensor dt, Tensor A, Tensor B, Tensor C, int chunk_size, Tensor? D=None, Tensor? z=None, "
    "Tensor? dt_bias=None, Tensor? initial_states=None, bool dt_softplus=False, float dt_min=0.0, "
    "float? dt_max=None) -> (Tensor, Tensor)")


def _finish(out: Tensor, x: Tensor, D: Optional[Tensor], z: Optional[Tensor]) -> Tensor:
    """``out`` with the skip term of a ``[heads, headdim]`` ``D`` (a ``[heads]`` one is the kernel's) and the gate
    ``z``."""
    if D is not None and D.dim() == 2:
        out = (out.float() + D.float() * x.float()).to(x.dtype)
    if z is not None:
        out = (out.float() * F.silu(z.float())).to(x.dtype)
    return out


def _between(states: Tensor, dA_cumsum: Tensor, initial_states: Optional[Tensor],
             dtype: torch.dtype) -> tuple[Tensor, Tensor]:
    """The states entering each chunk (in the kernels' dtype, contiguous) and the final one, from the chunks'."""
    prev_states, final_states = _state_passing(states, dA_cumsum[..., -1], initial_states)
    return prev_states.to(dtype).contiguous(), final_states


@functools.cache
def _compiled(fn: Callable) -> Callable:
    """``fn`` compiled by Inductor, for eager calls of the forward (below)."""
    return torch.compile(fn, dynamic=None)


def _glue(x: Tensor) -> Callable[[Callable], Callable]:
    """How the forward runs its glue: compiled where it runs eagerly on CUDA tensors (each elementwise step would
    otherwise be a kernel launch, the chunk-by-chunk state passing two a chunk: the eager forward ran at 0.50-0.56x
    mamba-ssm's speed on an H200); as it is where torch.compile traces the forward (Inductor fuses it with the
    model)."""
    return _compiled if x.is_cuda and not _traced(x) else (lambda fn: fn)


@torch.library.impl("pt_tvm::ssd_chunk_scan", "CompositeImplicitAutograd")
def _ssd_chunk_scan(x: Tensor, dt: Tensor, A: Tensor, B: Tensor, C: Tensor, chunk_size: int,
                    D: Optional[Tensor] = None, z: Optional[Tensor] = None, dt_bias: Optional[Tensor] = None,
                    initial_states: Optional[Tensor] = None, dt_softplus: bool = False, dt_min: float = 0.0,
                    dt_max: Optional[float] = None) -> tuple[Tensor, Tensor]:
    _check_ssd(x, dt, A, B, C, chunk_size, D, z, dt_bias, initial_states, dt_min, dt_max)
    if not x.shape[1]:  # no positions: no kernel, the state as it came in
        batch, _, heads, headdim = x.shape
        final = (initial_states.to(torch.float32, copy=True) if initial_states is not None
                 else x.new_zeros((batch, heads, headdim, B.shape[-1]), dtype=torch.float32))
        return torch.empty_like(x), final
    x, B, C = (_addressable(t) for t in (x, B, C))
    glue = _glue(x)
    dt, dA_cumsum = glue(_chunk_cumsum)(dt, A, chunk_size, dt_bias, dt_softplus, dt_min, dt_max)
    states = chunk_state(B, x, dt, dA_cumsum)
    prev_states, final_states = glue(_between)(states, dA_cumsum, initial_states, x.dtype)
    D_kernel = D.float().contiguous() if D is not None and D.dim() == 1 else None
    out = chunk_scan(_bmm_chunk(C, B, chunk_size), x, dt, dA_cumsum, C, prev_states, D_kernel)
    if z is not None or (D is not None and D.dim() == 2):
        out = glue(_finish)(out, x, D, z)
    return out, final_states


def ssd_chunk_scan(x: Tensor, dt: Tensor, A: Tensor, B: Tensor, C: Tensor, chunk_size: int,
                   D: Optional[Tensor] = None, z: Optional[Tensor] = None, dt_bias: Optional[Tensor] = None,
                   initial_states: Optional[Tensor] = None, dt_softplus: bool = False,
                   dt_limit: tuple[float, float] = (0.0, math.inf),
                   return_final_states: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """Mamba2's SSD forward, as mamba_ssm's ``mamba_chunk_scan_combined`` (no ``seq_idx``/``cu_seqlens``).

    ``x [batch, seqlen, heads, headdim]``, ``B``/``C [batch, seqlen, groups, dstate]`` float16 or bfloat16, read as
    they lie where their rows start on 16-byte boundaries (columns of Mamba2's convolved in-projection), else copied
    once; ``dt [batch, seqlen, heads]``, ``A [heads]``, ``dt_bias [heads]``, ``D [heads]`` or
    ``[heads, headdim]``, ``z`` like ``x``, ``initial_states [batch, heads, headdim, dstate]`` of any float
    dtype and layout; one CUDA device. Returns ``out`` like ``x``, and with ``return_final_states`` also the
    float32 state after the last position ``[batch, heads, headdim, dstate]``.
    """
    dt_min, dt_max = dt_limit
    out, final_states = torch.ops.pt_tvm.ssd_chunk_scan(
        x, dt, A, B, C, chunk_size, D, z, dt_bias, initial_states, dt_softplus, float(dt_min),
        None if math.isinf(dt_max) else float(dt_max))
    return (out, final_states) if return_final_states else out
