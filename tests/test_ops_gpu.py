"""pt_tvm.ops on a GPU: every op against a float32 PyTorch reference on fresh random inputs, a model under
``torch.compile(fullgraph=True)`` against the same model in eager mode, and the second call of a shape doing no
search and no compile (counted and timed). Plans come from the search, into a plan cache of the test's own.
Ragged lengths, a KV cache, another softmax scale and packed variable-length batches included."""
from __future__ import annotations

import math
import os
import time

import pytest
import torch
import torch.nn.functional as F
from _util import ssd_recurrence

import pt_tvm.ops as ops
from pt_tvm import compiler, templates
from pt_tvm.measure import REL_TOL, rel_err
from pt_tvm.ops import kernels
from pt_tvm.ops import ssd as ssd_module

pytestmark = pytest.mark.gpu

F16, BF16, F32 = torch.float16, torch.bfloat16, torch.float32


@pytest.fixture(scope="module", autouse=True)
def store(tmp_path_factory):
    with kernels.using(ops.KernelStore(ops.Config(cache_dir=str(tmp_path_factory.mktemp("plans"))))) as s:
        yield s


@pytest.fixture
def seed():
    return int.from_bytes(os.urandom(4), "little")  # fresh inputs every run (printed on failure)


@pytest.fixture
def gen(seed):
    return torch.Generator(device="cuda").manual_seed(seed)


def randn(gen, *shape, dtype=F16, scale=1.0):
    return (torch.randn(shape, generator=gen, device="cuda") * scale).to(dtype)


def close(out: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype, label: str, tol: float | None = None) -> None:
    """Finite, and ``||out - ref|| / ||ref||`` under ``tol`` (default: REL_TOL of ``dtype``), printed for the log."""
    assert out.shape == ref.shape and torch.isfinite(out).all(), label
    err = rel_err(out.float(), ref.float())
    print(f"REL_ERR {label} {err:.3e}")
    assert err < (tol or REL_TOL[str(dtype).removeprefix("torch.")]), f"{label}: relative error {err:.3e}"


# ---------------------------------------------------------------- attention
def attention_reference(q, k, v, causal=False, scale=None):
    """Float32 attention over BSHD tensors; causal aligned bottom-right (query i sees keys j <= i + sk - sq);
    a query that sees no key gets zeros."""
    sq, sk, d = q.shape[1], k.shape[1], q.shape[3]
    g = q.shape[2] // k.shape[2]
    qf, kf, vf = (t.float().transpose(1, 2) for t in (q, k.repeat_interleave(g, 2), v.repeat_interleave(g, 2)))
    scores = qf @ kf.transpose(-1, -2) * (scale if scale is not None else d ** -0.5)
    if causal:
        seen = torch.ones(sq, sk, dtype=torch.bool, device=q.device).tril(sk - sq)
        scores = scores.masked_fill(~seen, -math.inf)
    return torch.nan_to_num(torch.softmax(scores, -1)) @ vf


@pytest.mark.parametrize("batch, seqlen_q, seqlen_k, heads, kv_heads, dim, causal, dtype, scale", [
    (2, 512, 512, 8, 8, 128, False, F16, None),
    (2, 512, 512, 8, 2, 64, True, BF16, None),
    (1, 1024, 1024, 4, 1, 128, True, F16, 128 ** -0.5),
    (1, 256, 256, 4, 4, 256, False, BF16, None),
    (2, 1000, 1000, 8, 2, 128, True, F16, None),  # ragged
    (2, 128, 1024, 8, 2, 128, True, BF16, None),  # a KV cache: bottom-right causal
    (2, 512, 512, 8, 8, 64, False, F16, 0.3),  # another scale
    (2, 300, 100, 8, 1, 64, True, F16, None),  # more queries than keys: the first 200 see none and give zeros
    (3, 777, 2500, 8, 8, 128, False, BF16, None),  # ragged KV cache
    (2, 700, 700, 32, 32, 80, True, F16, None),  # Phi-2's head dim
    (1, 300, 1000, 32, 8, 96, True, BF16, None),  # Phi-3's head dim, a KV cache
], ids=["d128", "d64-causal-gqa-bf16", "d128-causal-mqa", "d256-bf16", "ragged", "kv-cache", "scale",
        "more-queries", "ragged-kv", "d80", "d96-kv-cache"])
def test_attention(gen, batch, seqlen_q, seqlen_k, heads, kv_heads, dim, causal, dtype, scale):
    q = randn(gen, batch, seqlen_q, heads, dim, dtype=dtype)
    k, v = (randn(gen, batch, seqlen_k, kv_heads, dim, dtype=dtype) for _ in range(2))
    out = ops.attention(q, k, v, causal=causal, softmax_scale=scale)
    close(out, attention_reference(q, k, v, causal, scale).transpose(1, 2), dtype, "attention")


@pytest.mark.parametrize("batch, seqlen, heads, kv_heads, dim, causal, dtype", [
    (2, 512, 8, 2, 128, True, F16),
    (1, 1000, 4, 4, 64, False, BF16),  # ragged, a batch of one
    (2, 384, 8, 1, 256, True, BF16),
], ids=["d128-causal-gqa", "ragged-d64-bf16", "d256-mqa"])
def test_attention_on_views(gen, batch, seqlen, heads, kv_heads, dim, causal, dtype):
    """Views read as they lie: queries of a ``[batch, heads, seqlen, dim]`` tensor transposed (as Hugging Face's
    attention layers hold them), keys and values the heads of one fused projection output (as a QKV split)."""
    q = randn(gen, batch, heads, seqlen, dim, dtype=dtype).transpose(1, 2)
    kv = randn(gen, batch, seqlen, 2 * kv_heads, dim, dtype=dtype)
    k, v = kv[:, :, :kv_heads], kv[:, :, kv_heads:]
    assert not (q.is_contiguous() or k.is_contiguous() or v.is_contiguous())
    out = ops.attention(q, k, v, causal=causal)
    close(out, attention_reference(q, k, v, causal).transpose(1, 2), dtype, "attention views")


def test_dynamic_tokens_attention_one_varlen_kernel_a_bucket(gen, tmp_path):
    """``dynamic_tokens``: dense attention at 300 and 500 queries over 400 and 450 keys (GQA 4, causal,
    bottom-right) runs on one varlen kernel (buckets 512 and 512), each result exact."""
    with kernels.using(ops.KernelStore(ops.Config(cache_dir=str(tmp_path), dynamic_tokens=True))) as s:
        for sq, sk in ((300, 400), (500, 450)):
            q = randn(gen, 2, sq, 8, 128)
            k, v = (randn(gen, 2, sk, 2, 128) for _ in range(2))
            close(ops.attention(q, k, v, causal=True), attention_reference(q, k, v, True).transpose(1, 2), F16,
                  f"attention dynamic {sq}x{sk}")
        assert len(s) == 1


def test_attention_varlen(gen):
    lengths_q, lengths_k = [100, 300, 1, 200], [100, 500, 64, 50]  # the last: more queries than keys
    cu_q, cu_k = (torch.tensor([0, *torch.tensor(n).cumsum(0).tolist()], dtype=torch.int32, device="cuda")
                  for n in (lengths_q, lengths_k))
    q = randn(gen, sum(lengths_q), 8, 128)
    k, v = (randn(gen, sum(lengths_k), 2, 128) for _ in range(2))
    out = ops.attention(q, k, v, causal=True, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, max_seqlen_q=max(lengths_q),
                        max_seqlen_k=max(lengths_k))
    ref = torch.cat([attention_reference(q[None, cu_q[i]:cu_q[i + 1]], k[None, cu_k[i]:cu_k[i + 1]],
                                         v[None, cu_k[i]:cu_k[i + 1]], causal=True)[0].transpose(0, 1)
                     for i in range(len(lengths_q))])
    close(out, ref, F16, "attention varlen")


def test_attention_varlen_on_views(gen, tmp_path):
    """Packed sequences whose queries, keys and values are the heads of one fused projection output (as vLLM
    splits its QKV), read as they lie; then, under ``dynamic_tokens``, dense heads of a fused output on the
    varlen kernel at their strides. Each against the float32 reference."""
    lengths = [700, 1, 333, 64]
    cu = torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()], dtype=torch.int32, device="cuda")
    qkv = randn(gen, sum(lengths), 8 + 2 * 2, 128, dtype=BF16)
    q, k, v = qkv[:, :8], qkv[:, 8:10], qkv[:, 10:]
    out = ops.attention(q, k, v, causal=True, cu_seqlens_q=cu, cu_seqlens_k=cu, max_seqlen_q=700, max_seqlen_k=700)
    ref = torch.cat([attention_reference(q[None, cu[i]:cu[i + 1]], k[None, cu[i]:cu[i + 1]],
                                         v[None, cu[i]:cu[i + 1]], causal=True)[0].transpose(0, 1)
                     for i in range(len(lengths))])
    close(out, ref, BF16, "attention varlen views")
    with kernels.using(ops.KernelStore(ops.Config(cache_dir=str(tmp_path), dynamic_tokens=True))) as s:
        dense = randn(gen, 2, 500, 8 + 2 * 2, 128)
        q, k, v = dense[:, :, :8], dense[:, :, 8:10], dense[:, :, 10:]
        close(ops.attention(q, k, v, causal=True), attention_reference(q, k, v, True).transpose(1, 2), F16,
              "attention dynamic views")
        assert [name for name, _, _ in s._kernels] == ["flash_attention_varlen"]


# ---------------------------------------------------------------- matmul, linear
@pytest.mark.parametrize("shape, dtype", [((256, 512, 384), F16), ((2, 128, 1024, 256), BF16),
                                          ((1000, 512, 384), F16)], ids=["2d", "3d-bf16", "ragged"])
def test_matmul(gen, shape, dtype):
    *lead, k, n = shape
    a, b = randn(gen, *lead, k, dtype=dtype), randn(gen, k, n, dtype=dtype)
    out = ops.matmul(a, b)
    close(out, a.float() @ b.float(), dtype, "matmul")


@pytest.mark.parametrize("shape, bias, dtype", [((2, 256, 512, 768), True, BF16), ((512, 1024, 256), False, F16),
                                                ((3, 333, 512, 256), True, F16),
                                                ((4, 256, 768, 50257), False, F16), ((2, 300, 512, 1001), True, BF16)],
                         ids=["bias-bf16", "2d", "ragged", "lm-head", "odd-rows"])
def test_linear(gen, shape, bias, dtype):
    """Among the shapes: GPT-2's lm_head (output rows off 16-byte boundaries, 1024 tokens: tiles of rows 16 apart)
    and 600 tokens of 1001 outputs (rows 8 apart)."""
    *lead, k, n = shape
    x, w = randn(gen, *lead, k, dtype=dtype), randn(gen, n, k, dtype=dtype)
    b = randn(gen, n, dtype=dtype) if bias else None
    out = ops.linear(x, w, b)
    close(out, F.linear(x.float(), w.float(), b.float() if bias else None), dtype, "linear")


def test_transposed_weights(gen):
    """``matmul(a, w.T)`` (tied embeddings' logits) and ``linear(x, w.T)`` for a weight kept ``[in, out]``, each
    read as it lies by the other ``trans_B`` kernel."""
    a, w = randn(gen, 2, 300, 512), randn(gen, 1000, 512)
    close(ops.matmul(a, w.T), a.float() @ w.float().T, F16, "matmul w.T")
    w_in_out, bias = randn(gen, 512, 768, dtype=BF16), randn(gen, 768, dtype=BF16)
    x = randn(gen, 300, 512, dtype=BF16)
    close(ops.linear(x, w_in_out.T, bias), x.float() @ w_in_out.float() + bias.float(), BF16, "linear w.T")


def test_gemm_rows_as_they_lie_or_copied_to_16_byte_boundaries(gen):
    """K = 1001 fp16 (rows TMA cannot address: copied into rows 1008 apart), 1001 columns of a 1024-wide tensor
    (read as they lie), a view starting one element in (copied), and linear's weight of 1001 columns."""
    wide = randn(gen, 777, 1024)
    b, w = randn(gen, 1001, 520), randn(gen, 520, 1001)
    for label, a in (("packed", wide[:, :1001].contiguous()), ("view", wide[:, :1001]), ("shifted", wide[:, 3:1004])):
        close(ops.matmul(a, b), a.float() @ b.float(), F16, f"matmul K=1001 {label}")
    x = wide[:, :1001].reshape(7, 111, 1001)
    close(ops.linear(x, w), F.linear(x.float(), w.float()), F16, "linear K=1001 view")


def test_dynamic_tokens_one_kernel_a_bucket(gen, tmp_path):
    """``dynamic_tokens``: one symbolic-M kernel serves every token count of its bucket, each result exact; the
    counts 1, 300, 333 and 512 take two kernels (buckets 64 and 512), 5000 a third."""
    with kernels.using(ops.KernelStore(ops.Config(cache_dir=str(tmp_path), dynamic_tokens=True))) as s:
        w = randn(gen, 768, 512, dtype=BF16)
        for m in (1, 300, 333, 512, 5000):
            x = randn(gen, m, 512, dtype=BF16)
            close(ops.linear(x, w), F.linear(x.float(), w.float()), BF16, f"linear dynamic M={m}")
        assert len(s) == 3
        gate_up = (randn(gen, 1024, 512, dtype=F32) / 512 ** 0.5).to(BF16)
        for m in (200, 250):
            x = randn(gen, m, 512, dtype=BF16)
            gate, up = F.linear(x.float(), gate_up.float()).chunk(2, dim=-1)
            close(ops.swiglu(x, gate_up), F.silu(gate) * up, BF16, f"swiglu dynamic M={m}")
        assert len(s) == 4


@pytest.mark.parametrize("shape, dtype", [((2, 256, 512, 768), BF16), ((333, 1024, 320), F16)], ids=["bf16", "ragged"])
def test_swiglu(gen, shape, dtype):
    """Against ``silu(gate) * up`` of float32 ``F.linear``; the weight scaled as a model's (1/sqrt(in)) so the
    gate's pre-activations are O(1)."""
    *lead, k, n = shape
    x = randn(gen, *lead, k, dtype=dtype)
    w = (randn(gen, 2 * n, k, dtype=torch.float32) / k ** 0.5).to(dtype)
    gate, up = F.linear(x.float(), w.float()).chunk(2, dim=-1)
    close(ops.swiglu(x, w), F.silu(gate) * up, dtype, "swiglu")


@pytest.mark.parametrize("batch, seqlen, heads, kv_heads, head_dim, dtype", [
    (2, 777, 32, 8, 128, F16), (1, 300, 8, 2, 64, BF16)], ids=["llama-777", "ragged-bf16"])
def test_qkv_rope_and_packed_attention(gen, batch, seqlen, heads, kv_heads, head_dim, dtype):
    """An attention layer's projection with RoPE (positions wrapping per sequence) and attention over its output,
    against F.linear, HF's rotation and attention in float32."""
    _check_attention_layer(gen, batch, seqlen, heads, kv_heads, head_dim, dtype, "")


def test_dynamic_tokens_qkv_rope_and_attention_one_kernel_pair_a_bucket(gen, tmp_path):
    """``dynamic_tokens``: the projection with RoPE (row count and sequence length kernel arguments) and attention
    over its heads (the varlen kernel, views at the projection's strides) at 2 x 777 and 2 x 600 tokens share one
    kernel each, every result exact."""
    with kernels.using(ops.KernelStore(ops.Config(cache_dir=str(tmp_path), dynamic_tokens=True))) as s:
        for seqlen in (777, 600):
            _check_attention_layer(gen, 2, seqlen, 32, 8, 128, BF16, f" dynamic {seqlen}")
        assert len(s) == 2


def _check_attention_layer(gen, batch, seqlen, heads, kv_heads, head_dim, dtype, what):
    hidden = heads * head_dim
    x = randn(gen, batch, seqlen, hidden, dtype=dtype)
    w = (randn(gen, (heads + 2 * kv_heads) * head_dim, hidden, dtype=torch.float32) / hidden ** 0.5).to(dtype)
    angles = torch.outer(torch.arange(seqlen, device="cuda", dtype=torch.float32),
                         500000.0 ** -(torch.arange(0, head_dim, 2, device="cuda") / head_dim)).repeat(1, 2)
    cos, sin = angles.cos().to(dtype), angles.sin().to(dtype)
    qkv = ops.qkv_rope(x, w, cos, sin, kv_heads)
    C = F.linear(x.float(), w.float()).view(batch, seqlen, -1, head_dim)
    c, s = cos.float()[:, None], sin.float()[:, None]
    turned = C[:, :, :heads + kv_heads]
    x1, x2 = turned.chunk(2, dim=-1)
    ref = torch.cat((turned * c + torch.cat((-x2, x1), dim=-1) * s, C[:, :, heads + kv_heads:]), dim=2)
    close(qkv, ref, dtype, "qkv_rope" + what)
    q, k, v = ref.split([heads, kv_heads, kv_heads], dim=2)
    close(ops.attention_qkv(qkv, kv_heads, causal=True), attention_reference(q, k, v, causal=True).transpose(1, 2),
          dtype, "attention_qkv" + what)


# ---------------------------------------------------------------- Mamba's causal conv1d
def conv_reference(x, weight, bias, activation):
    """Float32 causal depthwise conv1d of ``x [batch, dim, seqlen]`` (``F.conv1d``, width - 1 zeros before)."""
    y = F.conv1d(x.float(), weight.float()[:, None], None if bias is None else bias.float(),
                 padding=weight.shape[1] - 1, groups=weight.shape[0])[..., :x.shape[2]]
    return F.silu(y) if activation else y


@pytest.mark.parametrize("batch, seqlen, dim, width, dtype, activation, layout", [
    (2, 777, 4352, 4, F16, "silu", "columns"),  # x B C of Mamba2-1.3B's in-projection, read as they lie; ragged
    (1, 4096, 256, 4, BF16, "silu", "rows"),
    (3, 100, 64, 2, F16, None, "channels-first"),  # copied once into rows
    (2, 64, 136, 3, BF16, "swish", "rows"),
    (2, 300, 61, 4, F16, "silu", "rows"),  # rows TMA cannot address: loaded in the aligned chunks around them
    (1, 1000, 100, 3, BF16, None, "columns"),  # a row stride of 8520 bytes: the same
    (3, 1000, 4353, 4, BF16, "silu", "rows"),  # odd rows over many block columns and sequences
])
def test_causal_conv1d(gen, batch, seqlen, dim, width, dtype, activation, layout):
    if layout == "columns":
        x = randn(gen, batch, seqlen, dim + 4160, dtype=dtype)[..., 4096:4096 + dim].transpose(1, 2)
    elif layout == "rows":
        x = randn(gen, batch, seqlen, dim, dtype=dtype).transpose(1, 2)
    else:
        x = randn(gen, batch, dim, seqlen, dtype=dtype)
    weight, bias = randn(gen, dim, width, dtype=dtype, scale=0.5), randn(gen, dim, dtype=dtype, scale=0.5)
    out = ops.causal_conv1d(x, weight, bias if width != 2 else None, activation=activation)
    assert out.shape == x.shape and out.transpose(1, 2).is_contiguous()
    close(out, conv_reference(x, weight, bias if width != 2 else None, activation), dtype,
          f"causal_conv1d {layout} {batch}x{seqlen}x{dim}")


# ---------------------------------------------------------------- Mamba2 SSD
SSD = {"batch": 2, "seqlen": 512, "heads": 8, "headdim": 64, "dstate": 128, "chunk": 256, "groups": 2}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_chunk_state(gen, dtype):
    template = templates.get("chunk_state")
    problem, _ = template.resolve(**SSD, dtype=dtype)
    B, x, dt, dA_cumsum = template.make_inputs(problem, "cuda", gen)
    close(ops.chunk_state(B, x, dt, dA_cumsum), template.reference(B, x, dt, dA_cumsum, **problem),
          getattr(torch, dtype), "chunk_state")


@pytest.mark.parametrize("has_d, cb_dtype", [(True, "float32"), (False, "float32"), (True, "float16")])
def test_chunk_scan(gen, has_d, cb_dtype):
    """mamba's float32 ``cb``, or ``cb`` in ``x``'s dtype (what the SSD forward passes)."""
    template = templates.get("chunk_scan")
    problem, _ = template.resolve(**SSD, dtype="float16", has_d=has_d, cb_dtype=cb_dtype)
    inputs = template.make_inputs(problem, "cuda", gen)
    close(ops.chunk_scan(*inputs), template.reference(*inputs, **problem), F16, f"chunk_scan cb {cb_dtype}")


def test_dynamic_tokens_ssd_one_kernel_pair_a_bucket(gen, tmp_path):
    """``dynamic_tokens``: the SSD forward at 300, 500 and 512 positions (partial last chunks, then whole) runs on
    one chunk_state and one chunk_scan kernel (bucket 512), at 1000 on the next pair; each result exact."""
    b, h, p, g, n = 2, 8, 64, 2, 128
    with kernels.using(ops.KernelStore(ops.Config(cache_dir=str(tmp_path), dynamic_tokens=True))) as s:
        for seqlen in (300, 500, 512, 1000):
            x, B, C = randn(gen, b, seqlen, h, p), randn(gen, b, seqlen, g, n), randn(gen, b, seqlen, g, n)
            A = -(1.0 + 15.0 * torch.rand(h, generator=gen, device="cuda"))
            dt = randn(gen, b, seqlen, h, dtype=F32) - 3.0
            kw = {"D": randn(gen, h, dtype=F32), "dt_bias": randn(gen, h, dtype=F32, scale=0.5), "dt_softplus": True}
            out, final = ops.ssd_chunk_scan(x, dt, A, B, C, 256, return_final_states=True, **kw)
            ref, ref_final = ssd_recurrence(x, dt, A, B, C, **kw)
            close(out, ref, F16, f"ssd_chunk_scan dynamic seqlen={seqlen}")
            close(final, ref_final, F16, f"ssd_chunk_scan dynamic seqlen={seqlen} final state")
            assert len(s) == (2 if seqlen <= 512 else 4)


@pytest.mark.parametrize("seqlen, dtype, extras", [
    (512, F16, False), (512, BF16, True), (1000, F16, True),
], ids=["plain", "bf16-D-z-bias-init", "ragged"])
def test_ssd_chunk_scan(gen, seqlen, dtype, extras):
    b, h, p, g, n = 2, 8, 64, 2, 128
    x, B, C = randn(gen, b, seqlen, h, p, dtype=dtype), randn(gen, b, seqlen, g, n, dtype=dtype), \
        randn(gen, b, seqlen, g, n, dtype=dtype)
    A = -(1.0 + 15.0 * torch.rand(h, generator=gen, device="cuda"))
    kw = {}
    if extras:
        dt = randn(gen, b, seqlen, h, dtype=F32) - 3.0
        kw = {"D": randn(gen, h, dtype=F32), "z": randn(gen, b, seqlen, h, p, dtype=dtype),
              "dt_bias": randn(gen, h, dtype=F32, scale=0.5), "initial_states": randn(gen, b, h, p, n, dtype=F32),
              "dt_softplus": True}
    else:
        dt = torch.exp(math.log(1e-3) + (math.log(1e-1) - math.log(1e-3))
                       * torch.rand(b, seqlen, h, generator=gen, device="cuda"))
    out, final = ops.ssd_chunk_scan(x, dt, A, B, C, 256, return_final_states=True, **kw)
    ref, ref_final = ssd_recurrence(x, dt, A, B, C, **kw)
    close(out, ref, dtype, "ssd_chunk_scan")
    close(final, ref_final, dtype, "ssd_chunk_scan final state")
    assert ssd_module._compiled.cache_info().currsize >= 2  # called eagerly: its glue ran compiled


@pytest.mark.parametrize("seqlen", [512, 777])
def test_ssd_chunk_scan_on_projection_columns(gen, seqlen):
    """Mamba2's ``x``, ``B``, ``C`` as columns of one ``[batch, seqlen, heads * headdim + 2 * groups * dstate]``
    tensor (its convolved in-projection), which both kernels read where they lie; ``chunk_state`` and
    ``chunk_scan`` called on such views match their references too."""
    b, h, p, g, n = 2, 8, 64, 2, 128
    xBC = randn(gen, b, seqlen, h * p + 2 * g * n)
    x, B, C = (t.unflatten(-1, (-1, size)) for t, size in zip(xBC.split([h * p, g * n, g * n], -1), (p, n, n)))
    assert not x.is_contiguous()
    dt = randn(gen, b, seqlen, h, dtype=F32) - 3.0
    A = -(1.0 + 15.0 * torch.rand(h, generator=gen, device="cuda"))
    kw = {"D": randn(gen, h, dtype=F32), "dt_bias": randn(gen, h, dtype=F32, scale=0.5), "dt_softplus": True}
    out, final = ops.ssd_chunk_scan(x, dt, A, B, C, 256, return_final_states=True, **kw)
    ref, ref_final = ssd_recurrence(x, dt, A, B, C, **kw)
    close(out, ref, F16, f"ssd_chunk_scan on projection columns, seqlen={seqlen}")
    close(final, ref_final, F16, f"ssd_chunk_scan on projection columns, seqlen={seqlen}, final state")
    for name in ("chunk_state", "chunk_scan"):
        template = templates.get(name)
        problem, _ = template.resolve(**{**SSD, "seqlen": seqlen}, dtype="float16")
        inputs = list(template.make_inputs(problem, "cuda", gen))
        views = {"chunk_state": {0: B, 1: x}, "chunk_scan": {1: x, 4: C}}[name]
        for i, view in views.items():
            inputs[i] = view.copy_(inputs[i])  # the inputs' values at the projection's strides
        close(getattr(ops, name)(*inputs), template.reference(*inputs, **problem), F16, f"{name} on views")


# ---------------------------------------------------------------- a model under torch.compile
class Block(torch.nn.Module):
    """Attention and an SSD mixer, every heavy op a pt-tvm op (``torch_ops=True``: the same in plain PyTorch)."""

    def __init__(self, d=512, heads=4, dstate=128, torch_ops=False):
        super().__init__()
        self.heads, self.dstate, self.torch_ops = heads, dstate, torch_ops
        self.qkv, self.out = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.bc = torch.nn.Linear(d, 2 * dstate, bias=False)
        self.A = torch.nn.Parameter(-(1.0 + 15.0 * torch.rand(heads)))
        self.D = torch.nn.Parameter(torch.randn(heads))

    def forward(self, x, dt):
        b, s, d = x.shape
        lin = F.linear if self.torch_ops else ops.linear
        q, k, v = lin(x, self.qkv.weight, self.qkv.bias).view(b, s, 3, self.heads, -1).unbind(2)
        if self.torch_ops:
            o = F.scaled_dot_product_attention(*(t.transpose(1, 2) for t in (q, k, v)), is_causal=True).transpose(1, 2)
        else:
            o = ops.attention(q, k, v, causal=True)
        y = lin(o.reshape(b, s, d), self.out.weight, self.out.bias)
        B, C = lin(y, self.bc.weight).view(b, s, 1, 2 * self.dstate).chunk(2, dim=-1)
        xs = y.view(b, s, self.heads, -1)
        if self.torch_ops:
            ssd, _ = ssd_recurrence(xs, dt, self.A.float(), B, C, D=self.D.float())
        else:
            ssd = ops.ssd_chunk_scan(xs, dt, self.A.float(), B.contiguous(), C.contiguous(), 256, D=self.D.float())
        return y + ssd.reshape(b, s, d).to(y.dtype)


def test_model_under_torch_compile_matches_eager(gen, seed):
    torch.manual_seed(seed)
    block = Block().cuda().half()
    block.A.data, block.D.data = block.A.data.float(), block.D.data.float()
    reference = Block(torch_ops=True).cuda().half()
    reference.load_state_dict(block.state_dict())
    reference.A.data, reference.D.data = block.A.data, block.D.data
    x = randn(gen, 2, 512, 512, scale=0.5)
    dt = torch.exp(math.log(1e-3) + (math.log(1e-1) - math.log(1e-3))
                   * torch.rand(2, 512, 4, generator=gen, device="cuda"))
    torch._dynamo.reset()
    with torch.no_grad():
        eager = block(x, dt)
        compiled = torch.compile(block, fullgraph=True)(x, dt)
        plain = reference(x, dt)
    close(compiled, eager, F16, "compiled vs eager")  # the same kernels; Inductor only fuses the glue
    close(eager, plain, F16, "pt-tvm ops vs plain PyTorch", tol=5e-3)  # five fp16 ops deep, each rounding


# ---------------------------------------------------------------- the second call of a shape
def test_second_call_of_a_shape_does_no_search_and_no_compile(monkeypatch, gen, tmp_path):
    counts = {"search": 0, "compile": 0}

    def counted(name, real):
        def call(*args, **kw):
            counts[name] += 1
            return real(*args, **kw)
        return call

    monkeypatch.setattr(compiler, "search_tiles", counted("search", compiler.search_tiles))
    monkeypatch.setattr(kernels, "compile_kernel", counted("compile", kernels.compile_kernel))
    x, w = randn(gen, 4, 256, 768), randn(gen, 1024, 768)
    with kernels.using(ops.KernelStore(ops.Config(cache_dir=str(tmp_path)))):
        seconds = []
        for _ in range(3):
            torch.cuda.synchronize()
            start = time.perf_counter()
            out = ops.linear(x, w)
            torch.cuda.synchronize()
            seconds.append(time.perf_counter() - start)
            assert counts == {"search": 1, "compile": 1}
    print(f"TIMES first {seconds[0]:.3f} s, then {seconds[1] * 1e3:.3f} ms and {seconds[2] * 1e3:.3f} ms")
    assert max(seconds[1:]) < min(0.05, seconds[0] / 20), seconds
    close(out, F.linear(x.float(), w.float()), F16, "linear")


@pytest.mark.parametrize("page_size", [0, 64])
def test_decode_attention_op_in_a_compiled_decoding_step(page_size, gen):
    """``ops.decode_attention`` inside ``torch.compile(fullgraph=True)``: every step of a growing cache
    matches the float32 reference (contiguous and paged caches, ragged lengths, GQA 32/8)."""
    T = templates.get("decode_attention")
    problem, _ = T.resolve(batch=3, q_len=2, heads=32, kv_heads=8, kv_len=4096, page_size=page_size, ragged=True)
    q, k, v, seqlens, *table = T.make_inputs(problem, "cuda", gen)
    step = torch.compile(lambda q, k, v, n, *t: ops.decode_attention(q, k, v, n, *t) * 1.0, fullgraph=True)
    for grow in (0, 7, 300):
        lengths = torch.clamp(seqlens + grow, max=problem["kv_len"])
        close(step(q, k, v, lengths, *table), T.reference(q, k, v, lengths, *table, **problem), F16,
              f"decode page_size={page_size} +{grow}")
