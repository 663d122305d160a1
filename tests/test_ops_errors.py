"""Every argument error of pt_tvm.ops: the right exception class, a message naming the argument, and no search,
no compile and no device probe before it (the dispatch's steps are replaced by ones that fail the test)."""
from __future__ import annotations

import pytest
import torch

import pt_tvm.ops as ops
from pt_tvm import compiler
from pt_tvm.errors import PtTvmError
from pt_tvm.ops import checks, kernels

F16, BF16, F32, I32 = torch.float16, torch.bfloat16, torch.float32, torch.int32


def e(*shape, dtype=F16, device="cpu"):
    return torch.zeros(shape, dtype=dtype, device=device)


@pytest.fixture(autouse=True)
def nothing_runs(monkeypatch):
    def fail(*args, **kw):
        raise AssertionError("the dispatch ran past the argument checks")

    for module, name in ((compiler, "search_tiles"), (kernels, "compile_kernel"), (kernels, "chip_of"),
                         (kernels, "tune_template")):
        monkeypatch.setattr(module, name, fail)


def q(dtype=F16, device="cpu"):
    return e(2, 128, 8, 64, dtype=dtype, device=device)


def kv(heads=2, dtype=F16, device="cpu", seqlen=128):
    return e(2, seqlen, heads, 64, dtype=dtype, device=device)


def ssd_args(**overrides):
    b, s, h, p, g, n = 2, 256, 4, 64, 2, 128
    args = {"x": e(b, s, h, p), "dt": e(b, s, h, dtype=F32), "A": e(h, dtype=F32), "B": e(b, s, g, n),
            "C": e(b, s, g, n), "chunk_size": 64}
    return {**args, **overrides}


def chunk_args(device="cpu", **overrides):
    b, s, h, p, g, n, c, L = 2, 256, 4, 64, 2, 128, 4, 64
    args = {"cb": e(b, c, g, L, L, dtype=F32, device=device), "x": e(b, s, h, p, device=device),
            "dt": e(b, h, c, L, dtype=F32, device=device), "dA_cumsum": e(b, h, c, L, dtype=F32, device=device),
            "C": e(b, s, g, n, device=device), "prev_states": e(b, c, h, p, n, device=device),
            "D": e(h, dtype=F32, device=device)}
    return {**args, **overrides}


def state_args(device="cpu", **overrides):
    a = chunk_args(device)
    return {"B": a["C"], "x": a["x"], "dt": a["dt"], "dA_cumsum": a["dA_cumsum"], **overrides}


CASES = [
    # attention
    ("q-float32", lambda: ops.attention(q(F32), kv(), kv()), TypeError,
     "argument 'q' must be float16 or bfloat16, got torch.float32"),
    ("k-dtype", lambda: ops.attention(q(), kv(dtype=BF16), kv()), TypeError,
     "argument 'k' is torch.bfloat16 but 'q' is torch.float16"),
    ("q-3d", lambda: ops.attention(e(128, 8, 64), kv(), kv()), ValueError,
     r"argument 'q' must have 4 dims \[batch, seqlen_q, heads, head_dim\], got shape \(128, 8, 64\)"),
    ("q-unaligned", lambda: ops.attention(e(2 * 128 * 8 * 64 + 4)[4:].view(2, 128, 8, 64), kv(), kv()), ValueError,
     "argument 'q' starts 8 bytes into its storage, not on a 16-byte boundary"),
    ("q-last-dim-strided", lambda: ops.attention(e(2, 128, 64, 8).transpose(2, 3), kv(), kv()), ValueError,
     "argument 'q' must have a unit stride in its last dim .*pass q.contiguous()"),
    ("q-stride-unaligned", lambda: ops.attention(e(2, 128, 8, 68)[..., :64], kv(), kv()), ValueError,
     r"argument 'q' has stride 68 in dim 2 .* positive multiples of 16 bytes; pass q.contiguous\(\)"),
    ("q-varlen-stride-unaligned", lambda: ops.attention(e(256, 8, 68)[..., :64], e(256, 2, 64), e(256, 2, 64),
                                                        cu_seqlens_q=e(3, dtype=I32), cu_seqlens_k=e(3, dtype=I32),
                                                        max_seqlen_q=128, max_seqlen_k=128), ValueError,
     "argument 'q' has stride 68 in dim 1"),
    ("k-batch", lambda: ops.attention(q(), e(3, 128, 2, 64), kv()), ValueError,
     r"argument 'k' has batch=3 \(dim 0 of \[batch, seqlen_k, kv_heads, head_dim\]\), but 'q' has batch=2"),
    ("v-seqlen", lambda: ops.attention(q(), kv(), kv(seqlen=64)), ValueError,
     "argument 'v' has seqlen_k=64 .* but 'k' has seqlen_k=128"),
    ("v-head-dim", lambda: ops.attention(q(), kv(), e(2, 128, 2, 128)), ValueError,
     "argument 'v' has head_dim=128 .* but 'q' has head_dim=64"),
    ("kv-heads", lambda: ops.attention(q(), kv(3), kv(3)), ValueError, "'k' has kv_heads=3, which must divide"),
    ("scale", lambda: ops.attention(q(), kv(), kv(), softmax_scale=-1.0), ValueError,
     "argument 'softmax_scale' must be a positive finite number"),
    ("cpu", lambda: ops.attention(q(), kv(), kv()), ValueError,
     "argument 'q' is on cpu: pt-tvm's kernels need a CUDA device"),
    ("k-device", lambda: ops.attention(q(device="meta"), kv(), kv(device="meta")), ValueError,
     "argument 'k' is on cpu but 'q' is on meta"),
    ("max-seqlen-alone", lambda: ops.attention(q(device="meta"), kv(device="meta"), kv(device="meta"), max_seqlen_q=9),
     ValueError, "argument 'max_seqlen_q' is for variable-length batches"),
    ("varlen-one-cu", lambda: ops.attention(e(300, 8, 64, device="meta"), e(300, 2, 64, device="meta"),
                                            e(300, 2, 64, device="meta"), cu_seqlens_q=e(3, dtype=I32, device="meta"),
                                            max_seqlen_q=200, max_seqlen_k=200),
     ValueError, "argument 'cu_seqlens_k' is None"),
    ("varlen-int64", lambda: ops.attention(e(300, 8, 64, device="meta"), e(300, 2, 64, device="meta"),
                                           e(300, 2, 64, device="meta"), cu_seqlens_q=e(3, dtype=I32, device="meta"),
                                           cu_seqlens_k=e(3, dtype=torch.int64, device="meta"), max_seqlen_q=200,
                                           max_seqlen_k=200),
     TypeError, "argument 'cu_seqlens_k' must be int32, got torch.int64"),
    ("varlen-lengths", lambda: ops.attention(e(300, 8, 64, device="meta"), e(300, 2, 64, device="meta"),
                                             e(300, 2, 64, device="meta"), cu_seqlens_q=e(3, dtype=I32, device="meta"),
                                             cu_seqlens_k=e(4, dtype=I32, device="meta"), max_seqlen_q=200,
                                             max_seqlen_k=200),
     ValueError, "'cu_seqlens_q' and 'cu_seqlens_k' must both have batch \\+ 1 >= 2 entries"),
    ("varlen-max", lambda: ops.attention(e(300, 8, 64, device="meta"), e(300, 2, 64, device="meta"),
                                         e(300, 2, 64, device="meta"), cu_seqlens_q=e(3, dtype=I32, device="meta"),
                                         cu_seqlens_k=e(3, dtype=I32, device="meta"), max_seqlen_q=200),
     ValueError, "argument 'max_seqlen_k' must be the longest sequence's length"),
    # gemm, matmul, linear
    ("gemm-cpu", lambda: torch.ops.pt_tvm.gemm(e(128, 64), e(64, 128)), ValueError, "'a' is on cpu"),
    ("gemm-k", lambda: torch.ops.pt_tvm.gemm(e(128, 64), e(128, 32), True), ValueError,
     r"argument 'b' has K=32 \(dim 1 of \[N, K\]\), but 'a' has K=64"),
    ("matmul-b-3d", lambda: ops.matmul(e(4, 128, 64), e(2, 64, 128)), ValueError,
     r"argument 'b' must have 2 dims \[K, N\]"),
    ("matmul-a-float32", lambda: ops.matmul(e(128, 64, dtype=F32), e(64, 128)), TypeError,
     "argument 'a' must be float16 or bfloat16"),
    ("matmul-b-dtype", lambda: ops.matmul(e(128, 64), e(64, 128, dtype=BF16)), TypeError,
     "argument 'b' is torch.bfloat16 but 'a' is torch.float16"),
    ("matmul-b-strided", lambda: ops.matmul(e(128, 64), e(128, 128)[::2, ::2]), ValueError,
     r"argument 'b' must be contiguous or rows of a wider tensor \(strides \(256, 2\)"),
    ("matmul-b-transposed-k", lambda: ops.matmul(e(128, 64), e(128, 32).T), ValueError,
     r"argument 'b.T' has K=32 \(dim 1 of \[N, K\]\), but 'a' has K=64"),
    ("matmul-b-unaligned", lambda: ops.matmul(e(128, 64), e(64 * 128 + 1)[1:].view(64, 128)), ValueError,
     "argument 'a' is on cpu"),  # GEMM operands off 16-byte boundaries are copied to them: on to the device check
    ("matmul-b-overlapping-rows", lambda: ops.matmul(e(128, 64), e(64 * 128).as_strided((64, 128), (64, 1))),
     ValueError, r"argument 'b' must be contiguous or rows of a wider tensor \(strides \(64, 1\)"),
    ("linear-x-unfoldable", lambda: ops.linear(e(4, 8, 128)[:, :, :64].transpose(0, 1), e(32, 64)), ValueError,
     "argument 'x' must be contiguous or rows of a wider tensor"),
    ("matmul-cpu", lambda: ops.matmul(e(128, 64), e(64, 128)), ValueError, "argument 'a' is on cpu"),
    ("linear-scalar", lambda: ops.linear(e(), e(128, 64)), ValueError, "argument 'x' must have at least one dim"),
    ("linear-in-features", lambda: ops.linear(e(4, 64), e(128, 32)), ValueError,
     r"argument 'weight' has K=32 \(dim 1 of \[N, K\]\), but 'x' has K=64"),
    ("linear-x-noncontiguous", lambda: ops.linear(e(64, 4).T, e(128, 64)), ValueError,
     "argument 'x' must be contiguous"),
    ("linear-bias-size", lambda: ops.linear(e(4, 64), e(128, 64), e(64)), ValueError,
     r"argument 'bias' has N=64 \(dim 0 of \[N\]\), but 'weight' has N=128"),
    ("linear-bias-dtype", lambda: ops.linear(e(4, 64), e(128, 64), e(128, dtype=F32)), TypeError,
     "argument 'bias' must be float16, got torch.float32"),
    ("linear-weight-device", lambda: ops.linear(e(4, 64, device="meta"), e(128, 64)), ValueError,
     "argument 'weight' is on cpu but 'x' is on meta"),
    ("linear-cpu", lambda: ops.linear(e(4, 64), e(128, 64)), ValueError, "argument 'x' is on cpu"),
    ("swiglu-odd-weight", lambda: ops.swiglu(e(4, 64, device="meta"), e(127, 64, device="meta")), ValueError,
     r"argument 'weight' must stack the gate and up projections \(\[2N, K\]\), got 127 rows"),
    ("swiglu-in-features", lambda: ops.swiglu(e(4, 64), e(128, 32)), ValueError,
     r"argument 'weight' has K=32 \(dim 1 of \[N2, K\]\), but 'x' has K=64"),
    ("swiglu-weight-dtype", lambda: ops.swiglu(e(4, 64), e(128, 64, dtype=BF16)), TypeError,
     "argument 'weight' is torch.bfloat16 but 'x' is torch.float16"),
    ("swiglu-cpu", lambda: ops.swiglu(e(4, 64), e(128, 64)), ValueError, "argument 'x' is on cpu"),
    # chunk_state, chunk_scan
    ("state-nchunks", lambda: ops.chunk_state(**state_args(dt=e(2, 4, 3, 64, dtype=F32),
                                                          dA_cumsum=e(2, 4, 3, 64, dtype=F32))), ValueError,
     "argument 'dt' has nchunks=3, but seqlen=256 in chunks of 64 makes 4"),
    ("state-dt-dtype", lambda: ops.chunk_state(**state_args(dt=e(2, 4, 4, 64))), TypeError,
     "argument 'dt' must be float32, got torch.float16"),
    ("state-B-dtype", lambda: ops.chunk_state(**state_args(B=e(2, 256, 2, 128, dtype=BF16))), TypeError,
     "argument 'B' is torch.bfloat16 but 'x' is torch.float16"),
    ("state-cpu", lambda: ops.chunk_state(**state_args()), ValueError, "argument 'x' is on cpu"),
    ("state-x-last-dim-strided", lambda: ops.chunk_state(**state_args(
        "meta", x=e(2, 256, 64, 4, device="meta").transpose(2, 3))),
     ValueError, "argument 'x' must have a unit stride in its last dim .*pass x.contiguous()"),
    ("state-x-stride-unaligned", lambda: ops.chunk_state(**state_args(
        "meta", x=e(2, 256, 4, 68, device="meta")[..., :64])),
     ValueError, r"argument 'x' has stride 68 in dim 2 .* positive multiples of 16 bytes; pass x.contiguous\(\)"),
    ("scan-prev-dtype", lambda: ops.chunk_scan(**chunk_args(prev_states=e(2, 4, 4, 64, 128, dtype=BF16))), TypeError,
     "argument 'prev_states' is torch.bfloat16 but 'x' is torch.float16"),
    ("scan-cb-chunk", lambda: ops.chunk_scan(**chunk_args(cb=e(2, 4, 2, 64, 32, dtype=F32))), ValueError,
     r"argument 'cb' has chunk=32 \(dim 4 of \[batch, nchunks, groups, chunk, chunk\]\), but 'cb' has chunk=64"),
    ("scan-D", lambda: ops.chunk_scan(**chunk_args(D=e(8, dtype=F32))), ValueError,
     "argument 'D' has heads=8 .* but 'x' has heads=4"),
    ("scan-groups", lambda: ops.chunk_scan(**chunk_args(cb=e(2, 4, 3, 64, 64, dtype=F32), C=e(2, 256, 3, 128))),
     ValueError, "groups=3 must divide the heads=4 of 'x'"),
    ("scan-C-3d", lambda: ops.chunk_scan(**chunk_args(C=e(2, 256, 128))), ValueError,
     r"argument 'C' must have 4 dims \[batch, seqlen, groups, dstate\]"),
    # ssd_chunk_scan
    ("ssd-C-dtype", lambda: ops.ssd_chunk_scan(**ssd_args(C=e(2, 256, 2, 128, dtype=BF16))), TypeError,
     "argument 'C' is torch.bfloat16 but 'x' is torch.float16"),
    ("ssd-dt-shape", lambda: ops.ssd_chunk_scan(**ssd_args(dt=e(2, 256, 8, dtype=F32))), ValueError,
     "argument 'dt' has heads=8 .* but 'x' has heads=4"),
    ("ssd-A-int", lambda: ops.ssd_chunk_scan(**ssd_args(A=e(4, dtype=I32))), TypeError,
     "argument 'A' must be float32 or float16 or bfloat16"),
    ("ssd-D-3d", lambda: ops.ssd_chunk_scan(**ssd_args(D=e(4, 64, 1, dtype=F32))), ValueError,
     r"argument 'D' must be \[heads\] or \[heads, headdim\]"),
    ("ssd-D-headdim", lambda: ops.ssd_chunk_scan(**ssd_args(D=e(4, 32, dtype=F32))), ValueError,
     "argument 'D' has headdim=32"),
    ("ssd-z", lambda: ops.ssd_chunk_scan(**ssd_args(z=e(2, 256, 4, 32))), ValueError, "argument 'z' has headdim=32"),
    ("ssd-initial", lambda: ops.ssd_chunk_scan(**ssd_args(initial_states=e(2, 4, 64, 64, dtype=F32))), ValueError,
     "argument 'initial_states' has dstate=64 .* but 'B' has dstate=128"),
    ("ssd-groups", lambda: ops.ssd_chunk_scan(**ssd_args(B=e(2, 256, 3, 128), C=e(2, 256, 3, 128))), ValueError,
     "groups=3 of 'B' must divide the heads=4 of 'x'"),
    ("ssd-chunk", lambda: ops.ssd_chunk_scan(**ssd_args(chunk_size=0)), ValueError,
     "argument 'chunk_size' must be a positive int"),
    ("ssd-limit", lambda: ops.ssd_chunk_scan(**ssd_args(), dt_limit=(0.1, 0.01)), ValueError,
     r"argument 'dt_limit' must be \(min, max\) with min <= max"),
    ("ssd-cpu", lambda: ops.ssd_chunk_scan(**ssd_args()), ValueError, "argument 'x' is on cpu"),
    # qkv_rope, attention_qkv
    ("rope-x-2d", lambda: ops.qkv_rope(e(100, 256), e(384, 256), e(100, 64), e(100, 64), 1), ValueError,
     r"argument 'x' must have 3 dims \[batch, seqlen, hidden\]"),
    ("rope-cos-positions", lambda: ops.qkv_rope(e(2, 100, 256), e(384, 256), e(99, 64), e(99, 64), 1), ValueError,
     "argument 'cos' has 99 positions, 'x' 100"),
    ("rope-sin-dtype", lambda: ops.qkv_rope(e(2, 100, 256), e(384, 256), e(100, 64), e(100, 64, dtype=F32), 1),
     TypeError, "argument 'sin' must be float16"),
    ("rope-heads", lambda: ops.qkv_rope(e(2, 100, 256), e(384, 256), e(100, 64), e(100, 64), 3), ValueError,
     r"argument 'weight' \(384 rows\) must hold heads \+ 2 kv_heads heads of head_dim=64"),
    ("rope-hidden", lambda: ops.qkv_rope(e(2, 100, 256), e(384, 128), e(100, 64), e(100, 64), 1), ValueError,
     "argument 'weight' has K=128"),
    ("rope-cpu", lambda: ops.qkv_rope(e(2, 100, 256), e(384, 256), e(100, 64), e(100, 64), 1), ValueError,
     "argument 'x' is on cpu"),
    ("qkv-kv-heads", lambda: ops.attention_qkv(e(2, 100, 6, 64), 3), ValueError,
     r"argument 'kv_heads'=3 must be positive and leave 'qkv' \(6 heads\) query heads that it divides"),
    ("qkv-3d", lambda: ops.attention_qkv(e(200, 6, 64), 1), ValueError, "argument 'qkv' must have 4 dims"),
    ("qkv-scale", lambda: ops.attention_qkv(e(2, 100, 6, 64), 1, softmax_scale=-1.0), ValueError,
     "argument 'softmax_scale' must be a positive finite number"),
    ("conv-x-float32", lambda: ops.causal_conv1d(e(2, 64, 100, dtype=F32), e(64, 4)), TypeError,
     "argument 'x' must be float16 or bfloat16, got torch.float32"),
    ("conv-weight-dtype", lambda: ops.causal_conv1d(e(2, 64, 100), e(64, 4, dtype=BF16)), TypeError,
     "argument 'weight' must be float16, got torch.bfloat16"),
    ("conv-weight-dim", lambda: ops.causal_conv1d(e(2, 64, 100), e(32, 4)), ValueError,
     r"argument 'weight' has dim=32 \(dim 0 of \[dim, width\]\), but 'x' has dim=64"),
    ("conv-weight-3d", lambda: ops.causal_conv1d(e(2, 64, 100), e(64, 1, 4)), ValueError,
     r"argument 'weight' must have 2 dims \[dim, width\]"),
    ("conv-bias-size", lambda: ops.causal_conv1d(e(2, 64, 100), e(64, 4), e(65)), ValueError,
     r"argument 'bias' has dim=65"),
    ("conv-activation", lambda: ops.causal_conv1d(e(2, 64, 100), e(64, 4), activation="relu"), ValueError,
     "argument 'activation' must be None, 'silu' or 'swish', got 'relu'"),
    ("conv-cpu", lambda: ops.causal_conv1d(e(2, 64, 100), e(64, 4)), ValueError, "argument 'x' is on cpu"),
]


@pytest.mark.parametrize("call, error, message", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_argument_errors(call, error, message):
    with pytest.raises(error, match=message) as caught:
        call()
    assert isinstance(caught.value, PtTvmError)


def test_an_argument_that_is_no_tensor_is_refused_by_the_schema():
    with pytest.raises(RuntimeError, match="Expected a value of type 'Tensor' for argument 'q'"):
        ops.attention([1.0], kv(), kv())
    with pytest.raises(RuntimeError, match="Expected a value of type 'Tensor' for argument 'weight'"):
        ops.linear(e(4, 64), "weight")


# What the attention templates take (issue 14 items 1-2): a KV cache, another scale, packed sequences pass the
# checks and reach the dispatch (here: the device probe, which fails the test's way).
TAKEN = [
    ("kv-cache", lambda: ops.attention(q(), kv(seqlen=256), kv(seqlen=256))),
    ("more-queries", lambda: ops.attention(q(), kv(seqlen=100), kv(seqlen=100), causal=True)),
    ("scale", lambda: ops.attention(q(), kv(), kv(), softmax_scale=0.3)),
    ("default-scale", lambda: ops.attention(q(), kv(), kv(), softmax_scale=64 ** -0.5)),
    ("varlen", lambda: ops.attention(e(300, 8, 64), e(300, 2, 64), e(300, 2, 64), cu_seqlens_q=e(3, dtype=I32),
                                     cu_seqlens_k=e(3, dtype=I32), max_seqlen_q=200, max_seqlen_k=200)),
]


@pytest.mark.parametrize("call", [c[1] for c in TAKEN], ids=[c[0] for c in TAKEN])
def test_what_the_templates_take_reaches_the_dispatch(monkeypatch, call):
    monkeypatch.setattr(checks, "KERNEL_DEVICE_TYPES", ("cuda", "meta", "cpu"))
    with pytest.raises(AssertionError, match="ran past the argument checks"):
        call()
