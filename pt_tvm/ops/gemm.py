"""``pt_tvm::gemm`` (the ``gemm`` template's kernel), the ``matmul`` and ``linear`` ops built on it, ``swiglu``
(the ``gemm_swiglu`` template: a gated MLP's fused gate/up projection and its SiLU gating in one kernel) and
``qkv_rope`` (the ``gemm_rope`` template: an attention layer's fused QKV projection and its rotary embedding).

``linear``'s weight ``[out, in]`` is read as it lies: the template's ``trans_B`` variant copies the
``[N, K]`` tiles of ``B`` and multiplies by their transpose in the shared main loop, so no call
transposes or copies the weight. ``matmul`` and ``linear`` are composite ops (their body is traced
by ``torch.compile``): leading dims fold into ``M`` as a view, and ``linear``'s bias is a plain
PyTorch add after the kernel (one more elementwise pass in eager mode; Inductor fuses it with what
follows), since the template has no bias epilogue.
"""
import math
from typing import Callable, Optional

import torch
from torch import Tensor

from ..templates.base import bucket
from . import checks
from .checks import ArgumentError, ArgumentTypeError
from .kernels import launch, rows

__all__ = ["gemm", "matmul", "linear", "gemm_swiglu", "swiglu", "qkv_rope"]

TEMPLATE = "gemm"
SWIGLU_TEMPLATE = "gemm_swiglu"
ROPE_OP, ROPE_TEMPLATE = "pt_tvm.ops.qkv_rope", "gemm_rope"


def _check_gemm(op: str, a: Tensor, b: Tensor, b_dims: tuple, names: tuple = ("a", "b"),
                bias: Optional[Tensor] = None, strided: bool = False) -> checks.Dims:
    """``a [M, K]`` and ``b`` (``b_dims``) as the kernel takes them (contiguous, or with ``strided`` rows of any
    stride: :func:`_tma_rows`), and ``bias [N]`` (any layout) when given; returns the bound sizes."""
    dims = checks.Dims(op)
    for name, t, layout in ((names[0], a, ("M", "K")), (names[1], b, b_dims)):
        checks.tensor(op, name, t, layout, checks.HALF, contiguous=not strided)
        if strided:
            _rows_as_they_lie(op, name, t)
        dims.bind(name, t, layout)
    if b.dtype != a.dtype:
        raise ArgumentTypeError(f"{op}: argument {names[1]!r} is {b.dtype} but {names[0]!r} is {a.dtype}")
    if bias is not None:
        checks.tensor(op, "bias", bias, ("N",), (a.dtype,), contiguous=False)
        dims.bind("bias", bias, ("N",))
    checks.kernel_device(op, names[0], a)
    checks.same_device(op, {names[0]: a, names[1]: b, "bias": bias})
    return dims


def _b_dims(trans_b: bool) -> tuple:
    return ("N", "K") if trans_b else ("K", "N")


def _lies_as_rows(t: Tensor) -> bool:
    """Whether a 2-D tensor's elements lie as rows: unit stride along a row, rows no closer than their length (a
    contiguous tensor, or a view of some columns of a wider one)."""
    rows, cols = t.shape
    return not ((cols > 1 and t.stride(1) != 1) or (rows > 1 and t.stride(0) < cols))


def _rows_as_they_lie(op: str, name: str, t: Tensor) -> None:
    """Refuse a 2-D operand whose elements do not lie as rows (:func:`_lies_as_rows`)."""
    if not _lies_as_rows(t):
        raise ArgumentError(f"{op}: argument {name!r} must be contiguous or rows of a wider tensor (strides "
                            f"{t.stride()} for shape {tuple(t.shape)}); pass {name}.contiguous()")


def _as_columns(t: Tensor) -> bool:
    """Whether a 2-D operand that does not lie as rows is the transpose of one that does (``w.T``, a weight kept
    ``[in, out]``): the kernel then reads ``t.T`` with the other ``trans_B``, no copy."""
    return t.dim() == 2 and not _lies_as_rows(t) and _lies_as_rows(t.T)


def _tma_rows(t: Tensor) -> tuple[Tensor, int]:
    """``t [rows, cols]`` as the kernel reads it, and its row stride (0: packed): as it lies where TMA can address
    its rows (each row stride and the start on a 16-byte boundary), else copied once into rows at the next
    16-byte stride, which the kernel loads through TMA where it would load ``t`` as it lies an element at a
    time (an fp16 ``K`` of 4001: 240 against 725 TFLOP/s, benchmarks/results/2026-11-28-h100-tma-rows). The copy
    and the kernel ran 0.85 of the twin's TFLOP/s at K = 4001 and 4004 on one H200, the kernel that loads such rows
    of ``a`` as they lie, in tiles of rows 16 apart, 0.83 and 0.85 (benchmarks/results/2026-11-30-h200-a-row-groups):
    the op keeps the copy."""
    rows, cols = t.shape
    size = t.element_size()
    stride = t.stride(0) if rows > 1 else cols
    if stride * size % checks.ALIGN == 0 and checks.start_bytes(t) % checks.ALIGN == 0:
        return t, (0 if stride == cols else stride)
    padded = -(-cols * size // checks.ALIGN) * checks.ALIGN // size
    aligned = t.new_empty((rows, padded))[:, :cols]
    aligned.copy_(t)
    return aligned, padded


@torch.library.custom_op("pt_tvm::gemm", mutates_args=())
def gemm(a: Tensor, b: Tensor, trans_b: bool = False) -> Tensor:
    """``a @ b`` (``a @ b.T`` with ``trans_b``) with float32 accumulation: ``a [M, K]``, ``b [K, N]``
    (``[N, K]`` with ``trans_b``), float16 or bfloat16, on one CUDA device; returns ``[M, N]``. Each operand is
    contiguous or some columns of a wider tensor (read as it lies where its rows start on 16-byte boundaries, else
    copied once a call into rows that do: :func:`_tma_rows`)."""
    dims = _check_gemm("pt_tvm.ops.gemm", a, b, _b_dims(trans_b), strided=True)
    if not (dims["M"] and dims["N"] and dims["K"]):  # an empty product (an expert no token chose): no kernel
        return a.new_zeros((dims["M"], dims["N"]))
    (a, lda), (b, ldb) = _tma_rows(a), _tma_rows(b)
    strides = {key: stride for key, stride in (("lda", lda), ("ldb", ldb)) if stride}  # packed: the default
    problem = {**rows(dims["M"]), "N": dims["N"], "K": dims["K"], "dtype": str(a.dtype).removeprefix("torch."),
               "trans_B": trans_b, **strides}
    return launch(TEMPLATE, problem, a, b)


@gemm.register_fake
def _(a, b, trans_b=False):
    dims = _check_gemm("pt_tvm.ops.gemm", a, b, _b_dims(trans_b), strided=True)
    return a.new_empty((dims["M"], dims["N"]))


def _over_rows(op: str, name: str, x: Tensor, kernel: Callable[[Tensor], Tensor], strided: bool = False) -> Tensor:
    """``kernel`` (which checks its other arguments) on ``x [..., K]`` with its leading dims folded into M as a
    view, its ``[M, N]`` result unfolded the same way; ``x`` needs at least one dim and to be contiguous, or
    with ``strided`` rows its leading dims fold over (some columns of a wider tensor)."""
    if x.dim() == 0:
        raise ArgumentError(f"{op}: argument {name!r} must have at least one dim [..., K], got a scalar")
    checks.tensor(op, name, x, (*(f"d{i}" for i in range(x.dim() - 1)), "K"), checks.HALF, contiguous=not strided)
    try:
        folded = x.view(math.prod(x.shape[:-1]), x.shape[-1])
    except RuntimeError:  # leading dims that do not fold into one stride
        folded = None
    if folded is None or (x.shape[-1] > 1 and x.stride(-1) != 1):
        raise ArgumentError(f"{op}: argument {name!r} must be contiguous or rows of a wider tensor (strides "
                            f"{x.stride()} for shape {tuple(x.shape)}); pass {name}.contiguous()")
    out = kernel(folded)
    return out.view(*x.shape[:-1], out.shape[-1])


torch.library.define("pt_tvm::matmul", "(Tensor a, Tensor b) -> Tensor")


@torch.library.impl("pt_tvm::matmul", "CompositeImplicitAutograd")
def _matmul(a: Tensor, b: Tensor) -> Tensor:
    def kernel(rows: Tensor) -> Tensor:
        if _as_columns(b):  # b = w.T of a w [N, K] lying as rows: the trans_B kernel reads w
            _check_gemm("pt_tvm.ops.matmul", rows, b.T, ("N", "K"), names=("a", "b.T"), strided=True)
            return gemm(rows, b.T, trans_b=True)
        _check_gemm("pt_tvm.ops.matmul", rows, b, ("K", "N"), strided=True)
        return gemm(rows, b)

    return _over_rows("pt_tvm.ops.matmul", "a", a, kernel, strided=True)


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """``a @ b`` for ``a [..., K]`` and a matrix ``b [K, N]`` (float16 or bfloat16, one CUDA device; contiguous or
    rows of a wider tensor, as :func:`gemm` takes them, or ``b`` the transpose of such a ``[N, K]`` matrix, read as
    it lies by the ``trans_B`` kernel): ``torch.matmul`` with ``b`` 2-D. Returns ``[..., N]``."""
    return torch.ops.pt_tvm.matmul(a, b)


torch.library.define("pt_tvm::linear", "(Tensor x, Tensor weight, Tensor? bias=None) -> Tensor")


@torch.library.impl("pt_tvm::linear", "CompositeImplicitAutograd")
def _linear(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    def kernel(rows: Tensor) -> Tensor:
        if _as_columns(weight):  # weight = w.T of a w [in, out] lying as rows: the plain kernel reads w
            _check_gemm("pt_tvm.ops.linear", rows, weight.T, ("K", "N"), names=("x", "weight.T"), bias=bias,
                        strided=True)
            return gemm(rows, weight.T)
        _check_gemm("pt_tvm.ops.linear", rows, weight, ("N", "K"), names=("x", "weight"), bias=bias, strided=True)
        return gemm(rows, weight, trans_b=True)

    out = _over_rows("pt_tvm.ops.linear", "x", x, kernel, strided=True)
    return out if bias is None else out + bias


def linear(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """``x @ weight.T + bias`` as ``torch.nn.functional.linear``: ``x [..., in]``, ``weight [out, in]``,
    ``bias [out]`` (float16 or bfloat16, one CUDA device; ``x`` and ``weight`` contiguous or rows of a wider tensor,
    as :func:`gemm` takes them, or ``weight`` the transpose of such an ``[in, out]`` matrix, read as it lies).
    Returns ``[..., out]``."""
    return torch.ops.pt_tvm.linear(x, weight, bias)


def _check_swiglu(op: str, a: Tensor, weight: Tensor) -> tuple[int, int, int]:
    """``a [M, K]`` and the fused weight ``[2N, K]``; returns ``(M, N, K)``."""
    dims = _check_gemm(op, a, weight, ("N2", "K"), names=("x", "weight"))
    if dims["N2"] % 2:
        raise ArgumentError(f"{op}: argument 'weight' must stack the gate and up projections ([2N, K]), got "
                            f"{dims['N2']} rows")
    return dims["M"], dims["N2"] // 2, dims["K"]


@torch.library.custom_op("pt_tvm::gemm_swiglu", mutates_args=())
def gemm_swiglu(a: Tensor, weight: Tensor) -> Tensor:
    """``silu(a @ weight[:N].T) * (a @ weight[N:].T)`` with float32 accumulation: ``a [M, K]``, ``weight [2N, K]``
    (the gate rows, then the up rows), float16 or bfloat16, contiguous, on one CUDA device; returns ``[M, N]``."""
    M, N, K = _check_swiglu("pt_tvm.ops.gemm_swiglu", a, weight)
    if not (M and N and K):  # silu(0) * 0 where K is 0
        return a.new_zeros((M, N))
    problem = {**rows(M), "N": N, "K": K, "dtype": str(a.dtype).removeprefix("torch.")}
    return launch(SWIGLU_TEMPLATE, problem, a, weight)


@gemm_swiglu.register_fake
def _(a, weight):
    M, N, _ = _check_swiglu("pt_tvm.ops.gemm_swiglu", a, weight)
    return a.new_empty((M, N))


torch.library.define("pt_tvm::swiglu", "(Tensor x, Tensor weight) -> Tensor")


@torch.library.impl("pt_tvm::swiglu", "CompositeImplicitAutograd")
def _swiglu(x: Tensor, weight: Tensor) -> Tensor:
    def kernel(rows: Tensor) -> Tensor:
        _check_swiglu("pt_tvm.ops.swiglu", rows, weight)
        return gemm_swiglu(rows, weight)

    return _over_rows("pt_tvm.ops.swiglu", "x", x, kernel)


def swiglu(x: Tensor, weight: Tensor) -> Tensor:
    """A gated MLP's SwiGLU input projection in one kernel: ``gate, up = F.linear(x, weight).chunk(2, -1)``, then
    ``F.silu(gate) * up``, without writing the ``[..., 2N]`` projection. ``x [..., in]``, ``weight [2N, in]`` (the
    gate projection's rows, then the up projection's), float16 or bfloat16, contiguous, one CUDA device. Returns
    ``[..., N]``."""
    return torch.ops.pt_tvm.swiglu(x, weight)


def _check_rope(x: Tensor, weight: Tensor, cos: Tensor, sin: Tensor, kv_heads: int) -> dict:
    """``x [batch, seqlen, hidden]``, ``weight [(heads + 2 kv_heads) head_dim, hidden]``, ``cos``/``sin [seqlen,
    head_dim]``; the ``gemm_rope`` problem."""
    checks.tensor(ROPE_OP, "x", x, ("batch", "seqlen", "hidden"), checks.HALF)
    checks.tensor(ROPE_OP, "weight", weight, ("N", "K"), checks.HALF)
    for name, t in (("cos", cos), ("sin", sin)):
        checks.tensor(ROPE_OP, name, t, ("seqlen", "head_dim"), (x.dtype,))
        if t.shape[0] != x.shape[1]:
            raise ArgumentError(f"{ROPE_OP}: argument {name!r} has {t.shape[0]} positions, 'x' {x.shape[1]}")
    if cos.shape != sin.shape:
        raise ArgumentError(f"{ROPE_OP}: arguments 'cos' and 'sin' differ in shape: {tuple(cos.shape)} and "
                            f"{tuple(sin.shape)}")
    rows, head_dim = weight.shape[0], cos.shape[1]
    heads = rows // head_dim - 2 * kv_heads if rows % head_dim == 0 else 0
    if head_dim % 2 or kv_heads < 1 or heads < 1:
        raise ArgumentError(f"{ROPE_OP}: argument 'weight' ({rows} rows) must hold heads + 2 kv_heads heads of "
                            f"head_dim={head_dim} (even) with kv_heads={kv_heads}")
    dims = _check_gemm(ROPE_OP, x.view(-1, x.shape[-1]), weight, ("N", "K"), names=("x", "weight"))
    checks.same_device(ROPE_OP, {"x": x, "cos": cos, "sin": sin})
    return {"M": dims["M"], "K": dims["K"], "heads": heads, "kv_heads": kv_heads, "head_dim": head_dim,
            "seqlen": x.shape[1], "dtype": str(x.dtype).removeprefix("torch.")}


def _rope_problem(checked: dict) -> dict:
    """The ``gemm_rope`` problem of checked arguments; with :attr:`Config.dynamic_tokens` its row count and sequence
    length symbolic, priced at their buckets (the row count's a multiple of the length's: both powers of two)."""
    problem = {**checked, **rows(checked["M"])}
    if problem.get("dynamic_M"):
        problem["seqlen"] = bucket(checked["seqlen"])
    return problem


@torch.library.custom_op("pt_tvm::qkv_rope", mutates_args=())
def qkv_rope(x: Tensor, weight: Tensor, cos: Tensor, sin: Tensor, kv_heads: int) -> Tensor:
    """An attention layer's fused QKV projection and rotary embedding in one kernel: ``F.linear(x, weight)`` viewed
    ``[batch, seqlen, heads + 2 kv_heads, head_dim]``, its query and key heads rotated (``x cos + rotate_half(x)
    sin``, HF's ``apply_rotary_pos_emb``; position ``s`` takes row ``s`` of ``cos``/``sin``), its value heads as
    they are: what :func:`pt_tvm.ops.attention_qkv` reads. ``x [batch, seqlen, hidden]``, ``weight [(heads + 2
    kv_heads) head_dim, hidden]`` (query rows, then key rows, then value rows), ``cos``/``sin [seqlen, head_dim]``
    in ``x``'s dtype (float16 or bfloat16), contiguous, one CUDA device."""
    checked = _check_rope(x, weight, cos, sin, kv_heads)
    if not (checked["M"] and checked["K"]):  # no tokens, or rotations of zeros
        return x.new_zeros((*x.shape[:2], checked["heads"] + 2 * kv_heads, checked["head_dim"]))
    out = launch(ROPE_TEMPLATE, _rope_problem(checked), x.view(checked["M"], checked["K"]), weight, cos, sin)
    return out.view(*x.shape[:2], -1, checked["head_dim"])


@qkv_rope.register_fake
def _(x, weight, cos, sin, kv_heads):
    p = _check_rope(x, weight, cos, sin, kv_heads)
    return x.new_empty((*x.shape[:2], p["heads"] + 2 * kv_heads, p["head_dim"]))
