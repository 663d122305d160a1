"""The ``layers`` benchmark suite on a CPU: its modules against independent float64 references (a naive
attention with complex-number RoPE; Mamba2's recurrence step by step), the config listing and dry run, and the
report's ratios over a synthetic run. ``@pytest.mark.gpu`` tests run the suite's systems on a GPU."""
from __future__ import annotations

import math

import pytest
import tilelang.testing
import torch
import torch.nn.functional as F

from benchmarks.layers import models
from benchmarks.layers.models import EAGER, LlamaLayer, LlamaShape, Mamba2Block, Mamba2Shape
from pt_tvm.measure import rel_err

F64 = torch.float64
TINY_LLAMA = LlamaShape(hidden=64, heads=4, kv_heads=2, head_dim=16, intermediate=96, rope_theta=10000.0)
TINY_MAMBA = Mamba2Shape(d_model=32, expand=2, headdim=16, d_state=8, ngroups=2, chunk=16)


def _randn(*shape, seed=0, dtype=F64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).to(dtype)


# ---------------------------------------------------------------- independent float64 references
def _llama_naive(layer: LlamaLayer, x: torch.Tensor) -> torch.Tensor:
    """The decoder layer head by head: explicit causal softmax, RoPE as a complex rotation of the paired halves."""
    s, w = layer.shape, {k: v.double() for k, v in layer.state_dict().items()}
    b, n, _ = x.shape
    hd, half = s.head_dim, s.head_dim // 2

    def norm(t, weight):
        return t / torch.sqrt((t * t).mean(-1, keepdim=True) + s.eps) * weight

    def rotate(t):  # [b, n, heads, hd]
        freq = s.rope_theta ** (-torch.arange(half, dtype=F64) * 2 / hd)
        turn = torch.polar(torch.ones(n, half, dtype=F64), torch.arange(n, dtype=F64)[:, None] * freq)
        z = torch.complex(t[..., :half], t[..., half:]) * turn[:, None]
        return torch.cat((z.real, z.imag), dim=-1)

    h = norm(x, w["attn_norm"]) @ w["qkv"].T
    q = rotate(h[..., :s.heads * hd].reshape(b, n, s.heads, hd))
    k = rotate(h[..., s.heads * hd:(s.heads + s.kv_heads) * hd].reshape(b, n, s.kv_heads, hd))
    v = h[..., (s.heads + s.kv_heads) * hd:].reshape(b, n, s.kv_heads, hd)
    out = torch.empty(b, n, s.heads, hd, dtype=F64)
    for head in range(s.heads):
        kv = head // (s.heads // s.kv_heads)
        for i in range(n):
            scores = (k[:, :i + 1, kv] @ q[:, i, head, :, None])[..., 0] / math.sqrt(hd)  # [b, i + 1]
            out[:, i, head] = (torch.softmax(scores, -1)[..., None] * v[:, :i + 1, kv]).sum(1)
    x = x + out.reshape(b, n, -1) @ w["o"].T
    gate, up = (norm(x, w["mlp_norm"]) @ w["gate_up"].T).chunk(2, -1)
    return x + (gate * torch.sigmoid(gate) * up) @ w["down"].T


def _mamba_naive(block: Mamba2Block, u: torch.Tensor) -> torch.Tensor:
    """The mixer with its SSM run one position at a time: h_t = exp(dt_t A) h_{t-1} + dt_t x_t B_t^T."""
    s, w = block.shape, {k: v.double() for k, v in block.state_dict().items()}
    b, n, _ = u.shape
    zxbcdt = u @ w["in_proj"].T
    z, xBC, dt = zxbcdt.split([s.d_inner, s.conv_dim, s.nheads], -1)
    conv = torch.zeros_like(xBC)
    for t in range(n):  # causal: position t sees t - d_conv + 1 .. t
        for j in range(s.d_conv):
            if t - j >= 0:
                conv[:, t] += w["conv_weight"][:, 0, s.d_conv - 1 - j] * xBC[:, t - j]
    xBC = conv + w["conv_bias"]
    xBC = xBC * torch.sigmoid(xBC)
    x, B, C = xBC.split([s.d_inner, s.ngroups * s.d_state, s.ngroups * s.d_state], -1)
    x = x.reshape(b, n, s.nheads, s.headdim)
    B, C = B.reshape(b, n, s.ngroups, s.d_state), C.reshape(b, n, s.ngroups, s.d_state)
    dt = F.softplus(dt + w["dt_bias"])
    A = -torch.exp(w["A_log"])
    state = torch.zeros(b, s.nheads, s.headdim, s.d_state, dtype=F64)
    y = torch.empty_like(x)
    group = torch.arange(s.nheads) // (s.nheads // s.ngroups)
    for t in range(n):
        decay = torch.exp(dt[:, t] * A)[..., None, None]
        state = decay * state + (dt[:, t, :, None] * x[:, t])[..., None] * B[:, t, group, None, :]
        y[:, t] = (state * C[:, t, group, None, :]).sum(-1) + w["D"][:, None] * x[:, t]
    y = y.reshape(b, n, s.d_inner) * (z * torch.sigmoid(z))
    g = y.reshape(b, n, s.ngroups, -1)
    y = (g / torch.sqrt((g * g).mean(-1, keepdim=True) + s.eps)).reshape(b, n, s.d_inner) * w["norm"]
    return y @ w["out_proj"].T


@pytest.mark.parametrize("dtype,tol", [(F64, 1e-12), (torch.float32, 1e-5)])
def test_llama_layer_matches_a_naive_float64_reference(dtype, tol):
    layer = LlamaLayer(TINY_LLAMA, dtype=F64).reset(seed=1)
    x = _randn(2, 11, TINY_LLAMA.hidden, seed=2)
    ref = _llama_naive(layer, x)
    out = models.twin(layer, dtype=dtype)(x.to(dtype))
    assert out.dtype == dtype and out.shape == x.shape
    # the layer's update (out - x) is what the attention and the MLP compute; x itself would dominate the norm
    assert rel_err(out.double() - x, ref - x) < tol


@pytest.mark.parametrize("seqlen", [37, 48, 5])  # a partial last chunk, whole chunks, less than one chunk
@pytest.mark.parametrize("dtype,tol", [(F64, 1e-12), (torch.float32, 1e-5)])
def test_mamba2_block_matches_its_recurrence_in_float64(seqlen, dtype, tol):
    block = Mamba2Block(TINY_MAMBA, dtype=F64).reset(seed=3)
    u = _randn(2, seqlen, TINY_MAMBA.d_model, seed=4)
    ref = _mamba_naive(block, u)
    out = models.twin(block, dtype=dtype)(u.to(dtype))
    assert out.dtype == dtype and out.shape == u.shape
    assert rel_err(out, ref) < tol


def test_the_references_can_fail(monkeypatch):
    """Controls: a missing RoPE, a wrong decay and a wrong group map are each far outside the tolerance."""
    layer = LlamaLayer(TINY_LLAMA, dtype=F64).reset(seed=1)
    x = _randn(1, 9, TINY_LLAMA.hidden, seed=2)
    ref = _llama_naive(layer, x)
    assert rel_err(layer(x) - x, ref - x) < 1e-12
    monkeypatch.setattr(models, "rope", lambda t, cos, sin: t)
    assert rel_err(layer(x) - x, ref - x) > 1e-2
    block = Mamba2Block(TINY_MAMBA, dtype=F64).reset(seed=3)
    u = _randn(1, 37, TINY_MAMBA.d_model, seed=4)
    ref = _mamba_naive(block, u)
    slow = models.Ops("half decay", F.linear, EAGER.attention,
                      lambda x, dt, A, *rest: EAGER.ssd(x, dt, A / 2, *rest), EAGER.gated_rms_norm)
    assert rel_err(models.twin(block, slow)(u), ref) > 1e-2
    shuffled = models.Ops("swapped groups", F.linear, EAGER.attention,
                          lambda x, dt, A, B, C, *rest: EAGER.ssd(x, dt, A, B.flip(2), C.flip(2), *rest),
                          EAGER.gated_rms_norm)
    assert rel_err(models.twin(block, shuffled)(u), ref) > 1e-2


def test_twin_shares_weights_and_casts_on_request():
    layer = Mamba2Block(TINY_MAMBA, dtype=torch.float16).reset(seed=0)
    same = models.twin(layer)
    assert same.in_proj.data_ptr() == layer.in_proj.data_ptr() and same.ops is layer.ops
    wide = models.twin(layer, dtype=torch.float32)
    assert wide.in_proj.dtype == torch.float32 and torch.equal(wide.in_proj, layer.in_proj.float())
    assert not any(p.requires_grad for p in wide.parameters())


def test_shapes_default_to_the_papers_models_and_refuse_bad_ones():
    s = Mamba2Shape()
    assert (s.d_inner, s.nheads, s.conv_dim, s.d_in_proj) == (4096, 64, 4352, 8512)
    assert LlamaShape().heads * LlamaShape().head_dim == 4096
    with pytest.raises(ValueError, match="kv_heads=5 must divide heads=32"):
        LlamaShape(kv_heads=5)
    with pytest.raises(ValueError, match="headdim=48 must divide d_inner=4096"):
        Mamba2Shape(headdim=48)


if __name__ == "__main__":
    tilelang.testing.main()
