"""The two layers of the ``layers`` suite as plain PyTorch modules, written once and told which ops to call.

:class:`LlamaLayer` is a LLaMA-3-8B decoder layer in prefill (RMSNorm, fused QKV projection, RoPE, causal GQA
attention, output projection, RMSNorm, SwiGLU over the fused gate/up projection (one op: pt-tvm fuses it into
one kernel), down projection, both residuals);
:class:`Mamba2Block` is a Mamba2-1.3B mixer (in-projection, causal depthwise conv1d, the SSD chunked scan,
gated RMSNorm, out-projection), laid out as mamba_ssm's ``Mamba2`` module's non-fused path. The heavy ops go
through an :class:`Ops` set: :data:`EAGER` is plain PyTorch (SDPA for attention, :func:`ssd_chunked` for the
scan); other sets (pt-tvm's ops, mamba-ssm's kernels) live in :mod:`benchmarks.layers.opsets`. Every set
computes in the module's dtype with float32 accumulation (float64 for a float64 module: the CPU tests'
reference), so the same module run in float32 is the suite's reference.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pt_tvm.ops.ssd import prefix_sum

__all__ = ["LlamaShape", "Mamba2Shape", "Ops", "EAGER", "LlamaLayer", "Mamba2Block", "LAYERS", "twin",
           "rms_norm", "gated_rms_norm", "swiglu", "rope", "sdpa_attention", "ssd_chunked", "accumulator"]


def accumulator(dtype: torch.dtype) -> torch.dtype:
    """The dtype glue computes in: float32 for half and float32 modules, float64 for float64 ones."""
    return torch.promote_types(dtype, torch.float32)


@dataclass(frozen=True)
class LlamaShape:
    """LLaMA-3-8B's decoder layer (defaults); smaller ones for tests."""

    hidden: int = 4096
    heads: int = 32
    kv_heads: int = 8
    head_dim: int = 128
    intermediate: int = 14336
    rope_theta: float = 500000.0
    eps: float = 1e-5

    def __post_init__(self) -> None:
        if min(self.hidden, self.heads, self.kv_heads, self.head_dim, self.intermediate) < 1 or self.head_dim % 2:
            raise ValueError(f"LlamaShape: sizes must be positive and head_dim even, got {self}")
        if self.heads % self.kv_heads:
            raise ValueError(f"LlamaShape: kv_heads={self.kv_heads} must divide heads={self.heads}")


@dataclass(frozen=True)
class Mamba2Shape:
    """Mamba2-1.3B's mixer (defaults: d_model 2048, expand 2, headdim 64, d_state 128, one group, chunk 256)."""

    d_model: int = 2048
    expand: int = 2
    headdim: int = 64
    d_state: int = 128
    ngroups: int = 1
    chunk: int = 256
    d_conv: int = 4
    eps: float = 1e-5

    def __post_init__(self) -> None:
        if min(self.d_model, self.expand, self.headdim, self.d_state, self.ngroups, self.chunk, self.d_conv) < 1:
            raise ValueError(f"Mamba2Shape: sizes must be positive, got {self}")
        if self.d_inner % self.headdim or self.nheads % self.ngroups:
            raise ValueError(f"Mamba2Shape: headdim={self.headdim} must divide d_inner={self.d_inner} and "
                             f"ngroups={self.ngroups} the heads")

    @property
    def d_inner(self) -> int:
        return self.expand * self.d_model

    @property
    def nheads(self) -> int:
        return self.d_inner // self.headdim

    @property
    def conv_dim(self) -> int:
        return self.d_inner + 2 * self.ngroups * self.d_state

    @property
    def d_in_proj(self) -> int:
        """``z``, then ``x B C`` (the conv's channels), then ``dt`` per head."""
        return self.d_inner + self.conv_dim + self.nheads


def swiglu(x: Tensor, weight: Tensor) -> Tensor:
    """A gated MLP's input projection: the fused gate/up projection ``weight [2N, in]``, then ``silu(gate) * up``."""
    gate, up = F.linear(x, weight).chunk(2, dim=-1)
    return F.silu(gate) * up


def causal_conv1d_silu(x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    """Mamba's causal depthwise conv1d and SiLU over ``x [batch, seqlen, channels]`` (``weight [channels, 1,
    width]``), as HF transformers' PyTorch path writes it: ``nn.Conv1d`` over the transpose, cut to the length."""
    y = F.conv1d(x.transpose(1, 2), weight, bias, padding=weight.shape[-1] - 1, groups=weight.shape[0])
    return F.silu(y[..., :x.shape[1]]).transpose(1, 2)


@dataclass(frozen=True)
class Ops:
    """Which implementation a layer calls for each heavy op (one set per system)."""

    name: str
    linear: Callable[[Tensor, Tensor], Tensor]  # (x [..., in], weight [out, in]) -> [..., out]
    attention: Callable[[Tensor, Tensor, Tensor], Tensor]  # causal GQA over [batch, seqlen, heads, head_dim]
    ssd: Callable[..., Tensor]  # (x, dt, A, B, C, chunk, D, dt_bias) -> y [batch, seqlen, heads, headdim]
    gated_rms_norm: Callable[..., Tensor]  # (y, z, weight, eps, group_size) -> rmsnorm(y * silu(z)) * weight
    swiglu: Callable[[Tensor, Tensor], Tensor] = swiglu  # (x [..., in], weight [2N, in]) -> [..., N]
    # (x, fused QKV weight, cos, sin, kv_heads) -> causal attention's output [batch, seqlen, heads, head_dim]: the
    # projection, RoPE and attention as one set's kernels fuse them; None: ``linear``, :func:`rope`, ``attention``
    rope_attention: Callable[[Tensor, Tensor, Tensor, Tensor, int], Tensor] | None = None
    conv: Callable[[Tensor, Tensor, Tensor], Tensor] = causal_conv1d_silu  # (x, weight, bias) -> silu(conv)


# ---------------------------------------------------------------- plain PyTorch
def rms_norm(x: Tensor, weight: Tensor, eps: float) -> Tensor:
    """LLaMA's RMSNorm (as HF transformers' ``LlamaRMSNorm``): normalized in the accumulator dtype."""
    h = x.to(accumulator(x.dtype))
    return weight * (h * torch.rsqrt(h.square().mean(-1, keepdim=True) + eps)).to(x.dtype)


def gated_rms_norm(y: Tensor, z: Tensor, weight: Tensor, eps: float, group_size: int) -> Tensor:
    """Mamba2's gated RMSNorm (``norm_before_gate=False``): ``rmsnorm(y * silu(z))`` per group of channels."""
    acc = accumulator(y.dtype)
    h = y.to(acc) * F.silu(z.to(acc))
    g = h.reshape(*h.shape[:-1], -1, group_size)
    h = (g * torch.rsqrt(g.square().mean(-1, keepdim=True) + eps)).reshape(h.shape)
    return (h * weight.to(acc)).to(y.dtype)


def rope(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotary embedding of ``x [batch, seqlen, heads, head_dim]`` with the halves paired (HF's rotate_half)."""
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos[:, None] + torch.cat((-x2, x1), dim=-1) * sin[:, None]


def _rope_tables(seqlen: int, head_dim: int, theta: float, device: torch.device, dtype: torch.dtype
                 ) -> tuple[Tensor, Tensor]:
    """``cos``, ``sin [seqlen, head_dim]`` of the positions 0..seqlen-1, in ``dtype``."""
    acc = accumulator(dtype)
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, device=device, dtype=acc) / head_dim)
    angles = torch.outer(torch.arange(seqlen, device=device, dtype=acc), inv_freq)
    angles = torch.cat((angles, angles), dim=-1)
    return angles.cos().to(dtype), angles.sin().to(dtype)


def sdpa_attention(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """Causal attention over ``[batch, seqlen, heads, head_dim]`` with PyTorch's SDPA. Half precision takes SDPA's
    GQA path (``enable_gqa``); wider dtypes (the float32 reference) repeat the KV heads instead, since SDPA's
    GQA path falls to its math kernel there, whose ``seqlen x seqlen`` scores would not fit at 16 x 4096."""
    q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    groups = q.shape[1] // k.shape[1]
    if q.element_size() >= 4 and groups > 1:
        k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=groups > 1 and q.element_size() < 4)
    return out.transpose(1, 2)


def _pad_seq(t: Tensor, pad: int) -> Tensor:
    """``t [batch, seqlen, ...]`` with ``pad`` zero positions appended."""
    return F.pad(t, (0, 0) * (t.dim() - 2) + (0, pad)) if pad else t


def ssd_chunked(x: Tensor, dt: Tensor, A: Tensor, B: Tensor, C: Tensor, chunk: int, D: Tensor,
                dt_bias: Tensor) -> Tensor:
    """Mamba2's SSD forward (Dao & Gu 2024) in plain PyTorch, chunk by chunk, as ``mamba_chunk_scan_combined``
    with ``dt_softplus=True``: ``h_t = exp(dt_t A) h_{t-1} + dt_t x_t B_t^T``, ``y_t = h_t C_t + D x_t``.

    ``x [batch, seqlen, heads, headdim]``, ``dt [batch, seqlen, heads]``, ``A``/``D``/``dt_bias [heads]``,
    ``B``/``C [batch, seqlen, groups, dstate]``; a partial last chunk is padded (zero ``dt``: no effect).
    Decays and ``dt`` in the accumulator dtype, matmul operands in ``x``'s dtype. Returns ``y`` like ``x``.
    """
    b, s, h, p = x.shape
    g, n = B.shape[-2:]
    r, acc, L = h // g, accumulator(x.dtype), chunk
    c = -(-s // L)
    pad = c * L - s
    dt = _pad_seq(F.softplus(dt.to(acc) + dt_bias.to(acc)), pad)
    x, B, C = (_pad_seq(t, pad) for t in (x, B, C))
    xc = x.reshape(b, c, L, h, p).permute(0, 1, 3, 2, 4)                    # [b, c, h, L, p]
    Bg, Cg = (t.reshape(b, c, L, g, n).permute(0, 1, 3, 2, 4)[:, :, :, None] for t in (B, C))  # [b, c, g, 1, L, n]
    dtc = dt.reshape(b, c, L, h).permute(0, 1, 3, 2)                         # [b, c, h, L]
    cs = prefix_sum(dtc * A.to(acc)[:, None])  # the decay exponent within the chunk (see prefix_sum: Inductor)
    # 1. within each chunk: y_l = sum_{s <= l} (C_l . B_s) exp(cs_l - cs_s) dt_s x_s
    causal = torch.ones(L, L, dtype=torch.bool, device=x.device).tril()
    decay = torch.exp((cs[..., :, None] - cs[..., None, :]).masked_fill(~causal, -math.inf))
    cb = (Cg @ Bg.transpose(-1, -2)).to(acc)                              # [b, c, g, 1, L, L]
    scores = cb * (decay * dtc[..., None, :]).reshape(b, c, g, r, L, L)
    y = (scores.reshape(b, c, h, L, L).to(x.dtype) @ xc).to(acc)
    # 2. the state each chunk leaves behind: sum_s exp(cs_last - cs_s) dt_s x_s B_s^T  [b, c, h, p, n]
    w = torch.exp(cs[..., -1:] - cs) * dtc
    xw = (xc.to(acc) * w[..., None]).to(x.dtype)                           # [b, c, h, L, p]
    states = (xw.reshape(b, c, g, r, L, p).transpose(-1, -2) @ Bg).to(acc).reshape(b, c, h, p, n)
    # 3. the state entering chunk z: sum_{j < z} exp(T_{z-1} - T_j) states_j, T the running sum of chunk decays
    last = cs[..., -1].transpose(1, 2)                                     # [b, h, c]
    total = prefix_sum(last)
    before = torch.ones(c, c, dtype=torch.bool, device=x.device).tril(-1)
    passing = torch.exp(((total - last)[..., :, None] - total[..., None, :]).masked_fill(~before, -math.inf))
    prev = torch.einsum("bhzj,bjhpn->bzhpn", passing, states)
    # 4. what the entering state adds: exp(cs_l) C_l . prev, then the skip term D x
    y_prev = Cg @ prev.to(x.dtype).reshape(b, c, g, r, p, n).transpose(-1, -2)  # [b, c, g, r, L, p]
    y = y + y_prev.reshape(b, c, h, L, p).to(acc) * torch.exp(cs)[..., None] + D.to(acc)[:, None, None] * xc.to(acc)
    return y.permute(0, 1, 3, 2, 4).reshape(b, c * L, h, p)[:, :s].to(x.dtype)


EAGER = Ops("eager", F.linear, sdpa_attention, ssd_chunked, gated_rms_norm)


# ---------------------------------------------------------------- the layers
def _normal_(t: Tensor, std: float, g: torch.Generator, mean: float = 0.0) -> None:
    t.copy_(torch.randn(t.shape, generator=g, device=t.device, dtype=torch.float32) * std + mean)


class LlamaLayer(nn.Module):
    """A LLaMA-3 decoder layer in prefill: ``h = x + o(attn(rope(qkv(norm(x)))))``, ``h + down(swiglu(norm(h)))``.

    QKV and gate/up are fused projections (as serving stacks lay them out); attention is causal GQA. Weights
    from :meth:`reset` are random with projections of unit gain, except Q and K, scaled so that attention
    scores have a standard deviation of ``score_std``: a trained model's attention is peaked, while N(0, 1)
    scores over thousands of keys average V to near zero, where a wrong kernel could hide.
    """

    def __init__(self, shape: LlamaShape = LlamaShape(), ops: Ops = EAGER, *, device: torch.device | str | None = None,
                 dtype: torch.dtype | None = None):
        super().__init__()
        self.shape, self.ops = shape, ops
        s, kw = shape, {"device": device, "dtype": dtype}
        self.attn_norm = nn.Parameter(torch.empty(s.hidden, **kw))
        self.qkv = nn.Parameter(torch.empty((s.heads + 2 * s.kv_heads) * s.head_dim, s.hidden, **kw))
        self.o = nn.Parameter(torch.empty(s.hidden, s.heads * s.head_dim, **kw))
        self.mlp_norm = nn.Parameter(torch.empty(s.hidden, **kw))
        self.gate_up = nn.Parameter(torch.empty(2 * s.intermediate, s.hidden, **kw))
        self.down = nn.Parameter(torch.empty(s.hidden, s.intermediate, **kw))
        self.requires_grad_(False)

    @property
    def width(self) -> int:
        """The model dimension: inputs and outputs are ``[batch, seqlen, width]``."""
        return self.shape.hidden

    @torch.no_grad()
    def reset(self, seed: int, score_std: float = 2.0) -> "LlamaLayer":
        """Fresh random weights from ``seed`` (see the class docstring); returns the layer."""
        s = self.shape
        g = torch.Generator(device=self.qkv.device).manual_seed(seed)
        q_rows = (s.heads + s.kv_heads) * s.head_dim
        for norm in (self.attn_norm, self.mlp_norm):
            _normal_(norm, 0.1, g, mean=1.0)
        _normal_(self.qkv[:q_rows], math.sqrt(score_std / s.hidden), g)
        _normal_(self.qkv[q_rows:], 1 / math.sqrt(s.hidden), g)
        _normal_(self.o, 1 / math.sqrt(s.heads * s.head_dim), g)
        _normal_(self.gate_up, 1 / math.sqrt(s.hidden), g)
        _normal_(self.down, 1 / math.sqrt(s.intermediate), g)
        return self

    def forward(self, x: Tensor) -> Tensor:
        """``x [batch, seqlen, hidden]`` -> the layer's output, same shape."""
        s, ops = self.shape, self.ops
        b, n, _ = x.shape
        h = rms_norm(x, self.attn_norm, s.eps)
        cos, sin = _rope_tables(n, s.head_dim, s.rope_theta, x.device, x.dtype)
        if ops.rope_attention is not None:
            o = ops.rope_attention(h, self.qkv, cos, sin, s.kv_heads)
        else:
            q, k, v = ops.linear(h, self.qkv).split(
                [s.heads * s.head_dim, s.kv_heads * s.head_dim, s.kv_heads * s.head_dim], dim=-1)
            q = rope(q.view(b, n, s.heads, s.head_dim), cos, sin)
            k = rope(k.view(b, n, s.kv_heads, s.head_dim), cos, sin)
            o = ops.attention(q, k, v.view(b, n, s.kv_heads, s.head_dim))
        x = x + ops.linear(o.reshape(b, n, s.heads * s.head_dim), self.o)
        return x + ops.linear(ops.swiglu(rms_norm(x, self.mlp_norm, s.eps), self.gate_up), self.down)


class Mamba2Block(nn.Module):
    """A Mamba2 mixer as mamba_ssm's ``Mamba2`` computes it without its fused path: ``in_proj`` to ``z``,
    ``xBC``, ``dt``; causal depthwise conv1d + SiLU on ``xBC``; the SSD scan with ``D``, ``dt_bias`` and softplus;
    ``rmsnorm(y * silu(z))`` per group; ``out_proj``. No residual (the enclosing block adds it). Weights from
    :meth:`reset` follow mamba_ssm's initialization (``A`` in [1, 16], ``dt`` in [1e-3, 0.1], ``D = 1``)."""

    def __init__(self, shape: Mamba2Shape = Mamba2Shape(), ops: Ops = EAGER, *,
                 device: torch.device | str | None = None, dtype: torch.dtype | None = None):
        super().__init__()
        self.shape, self.ops = shape, ops
        s, kw = shape, {"device": device, "dtype": dtype}
        self.in_proj = nn.Parameter(torch.empty(s.d_in_proj, s.d_model, **kw))
        self.conv_weight = nn.Parameter(torch.empty(s.conv_dim, 1, s.d_conv, **kw))
        self.conv_bias = nn.Parameter(torch.empty(s.conv_dim, **kw))
        self.dt_bias = nn.Parameter(torch.empty(s.nheads, **kw))
        self.A_log = nn.Parameter(torch.empty(s.nheads, **kw))
        self.D = nn.Parameter(torch.empty(s.nheads, **kw))
        self.norm = nn.Parameter(torch.empty(s.d_inner, **kw))
        self.out_proj = nn.Parameter(torch.empty(s.d_model, s.d_inner, **kw))
        self.requires_grad_(False)

    @property
    def width(self) -> int:
        """The model dimension: inputs and outputs are ``[batch, seqlen, width]``."""
        return self.shape.d_model

    @torch.no_grad()
    def reset(self, seed: int) -> "Mamba2Block":
        """Fresh random weights from ``seed``; returns the block."""
        s = self.shape
        g = torch.Generator(device=self.in_proj.device).manual_seed(seed)

        def uniform(lo: float, hi: float, n: int) -> Tensor:
            return torch.rand(n, generator=g, device=self.in_proj.device) * (hi - lo) + lo

        _normal_(self.in_proj, 1 / math.sqrt(s.d_model), g)
        bound = 1 / math.sqrt(s.d_conv)  # nn.Conv1d's default for a depthwise kernel
        self.conv_weight.copy_(uniform(-bound, bound, self.conv_weight.numel()).view(self.conv_weight.shape))
        self.conv_bias.copy_(uniform(-bound, bound, s.conv_dim))
        dt = torch.exp(uniform(math.log(1e-3), math.log(0.1), s.nheads)).clamp(min=1e-4)
        self.dt_bias.copy_(dt + torch.log(-torch.expm1(-dt)))  # softplus^-1
        self.A_log.copy_(torch.log(uniform(1.0, 16.0, s.nheads)))
        self.D.fill_(1.0)
        _normal_(self.norm, 0.1, g, mean=1.0)
        _normal_(self.out_proj, 1 / math.sqrt(s.d_inner), g)
        return self

    def forward(self, u: Tensor) -> Tensor:
        """``u [batch, seqlen, d_model]`` -> the mixer's output, same shape."""
        s, ops = self.shape, self.ops
        b, n, _ = u.shape
        z, xBC, dt = ops.linear(u, self.in_proj).split([s.d_inner, s.conv_dim, s.nheads], dim=-1)
        xBC = ops.conv(xBC, self.conv_weight, self.conv_bias)
        x, B, C = xBC.split([s.d_inner, s.ngroups * s.d_state, s.ngroups * s.d_state], dim=-1)
        A = -torch.exp(self.A_log.to(accumulator(u.dtype)))
        y = ops.ssd(x.reshape(b, n, s.nheads, s.headdim), dt, A, B.reshape(b, n, s.ngroups, s.d_state),
                    C.reshape(b, n, s.ngroups, s.d_state), s.chunk, self.D, self.dt_bias)
        y = ops.gated_rms_norm(y.reshape(b, n, s.d_inner), z, self.norm, s.eps, s.d_inner // s.ngroups)
        return ops.linear(y, self.out_proj)


LAYERS: dict[str, type[nn.Module]] = {"llama3-8b": LlamaLayer, "mamba2-1.3b": Mamba2Block}


def twin(layer: nn.Module, ops: Ops | None = None, dtype: torch.dtype | None = None) -> nn.Module:
    """The same layer calling ``ops`` (default: the layer's), sharing its weight tensors, or with copies of them
    in ``dtype`` when given (the float32 reference of a half-precision layer)."""
    new = type(layer)(layer.shape, ops or layer.ops, device="meta")
    state = layer.state_dict()
    if dtype is not None:
        state = {k: v.to(dtype) for k, v in state.items()}
    new.load_state_dict(state, assign=True)
    return new.requires_grad_(False)
