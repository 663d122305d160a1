"""pt_tvm.ops on a CPU: registration, fake-tensor shapes, torch.compile without graph breaks, argument errors,
and the per-shape dispatch (plan cache, search, compile once) with the compile step replaced by a stand-in
that runs the template's float32 reference, so the ops' plumbing and the SSD glue compute real results."""
from __future__ import annotations

import logging
import math

import pytest
import torch
import torch.nn.functional as F
from _util import ssd_recurrence
from torch._subclasses.fake_tensor import FakeTensorMode

import pt_tvm.ops as ops
from pt_tvm import compiler, hw
from pt_tvm.cache import PlanCache, PlanCacheWarning
from pt_tvm.measure import GRAPH, REL_TOL, rel_err
from pt_tvm.ops import checks, kernels
from pt_tvm.templates.base import bucket
from pt_tvm.tune import Measured, TuneResult

F16, BF16, F32 = torch.float16, torch.bfloat16, torch.float32


def randn(*shape, dtype=F16, device="cpu", seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(device=device, dtype=dtype)


# ---------------------------------------------------------------- registration and shapes
def test_ops_are_registered_under_pt_tvm():
    for name in ("attention", "attention_qkv", "decode_attention", "gemm", "matmul", "linear", "qkv_rope",
                 "causal_conv1d", "chunk_state", "chunk_scan", "ssd_chunk_scan"):
        packet = getattr(torch.ops.pt_tvm, name)
        assert packet.default._schema.name == f"pt_tvm::{name}"
    assert "bool causal=False" in str(torch.ops.pt_tvm.attention.default._schema)
    assert "Tensor? bias=None" in str(torch.ops.pt_tvm.linear.default._schema)


def test_fake_tensors_propagate_shapes_and_dtypes():
    mode = FakeTensorMode()

    def e(*shape, dtype=F16):
        return mode.from_tensor(torch.empty(*shape, dtype=dtype, device="meta"))

    with mode:
        q, kv = e(2, 100, 8, 64, dtype=BF16), e(2, 100, 2, 64, dtype=BF16)
        out = ops.attention(q, kv, kv, causal=True)
        assert (out.shape, out.dtype) == ((2, 100, 8, 64), BF16)
        cu = e(3, dtype=torch.int32)
        out = ops.attention(e(300, 8, 128), e(500, 8, 128), e(500, 8, 128), cu_seqlens_q=cu, cu_seqlens_k=cu,
                            max_seqlen_q=200, max_seqlen_k=300)
        assert out.shape == (300, 8, 128)
        assert ops.linear(e(3, 5, 64), e(32, 64), e(32)).shape == (3, 5, 32)
        assert ops.linear(e(64), e(32, 64)).shape == (32,)
        assert ops.matmul(e(7, 64), e(64, 16)).shape == (7, 16)
        assert torch.ops.pt_tvm.gemm(e(7, 64), e(16, 64), True).shape == (7, 16)
        assert ops.swiglu(e(3, 5, 64), e(32, 64)).shape == (3, 5, 16)
        assert torch.ops.pt_tvm.gemm_swiglu(e(7, 64), e(32, 64)).shape == (7, 16)
        qkv = ops.qkv_rope(e(2, 100, 256), e(6 * 64, 256), e(100, 64), e(100, 64), 1)
        assert (qkv.shape, qkv.dtype) == ((2, 100, 6, 64), F16)
        assert ops.attention_qkv(qkv, 1, causal=True).shape == (2, 100, 4, 64)
        lens = e(2, dtype=torch.int32)
        out = ops.decode_attention(e(2, 4, 32, 128), e(2, 4096, 8, 128), e(2, 4096, 8, 128), lens)
        assert (out.shape, out.dtype) == ((2, 4, 32, 128), F16)
        pages, table = e(64, 256, 8, 128), e(2, 16, dtype=torch.int32)  # paged: 16 pages of 256 per sequence
        assert ops.decode_attention(e(2, 1, 32, 128), pages, pages, lens, table).shape == (2, 1, 32, 128)
        with pytest.raises(ValueError, match="k_cache"):
            ops.decode_attention(e(2, 1, 32, 128), e(2, 4096, 8, 64), e(2, 4096, 8, 64), lens)
        b, s, h, p, g, n, L = 2, 1000, 8, 64, 2, 128, 256  # a partial last chunk
        x, B = e(b, s, h, p), e(b, s, g, n)
        dt, A = e(b, s, h, dtype=F32), e(h, dtype=F32)
        out, final = ops.ssd_chunk_scan(x, dt, A, B, B, L, D=e(h, p, dtype=F32), z=x, return_final_states=True)
        assert (out.shape, out.dtype, final.shape, final.dtype) == ((b, s, h, p), F16, (b, h, p, n), F32)
        c = 4
        states = ops.chunk_state(B, x, e(b, h, c, L, dtype=F32), e(b, h, c, L, dtype=F32))
        assert (states.shape, states.dtype) == ((b, c, h, p, n), F32)
        y = ops.chunk_scan(e(b, c, g, L, L, dtype=F32), x, e(b, h, c, L, dtype=F32), e(b, h, c, L, dtype=F32), B,
                           e(b, c, h, p, n), e(h, dtype=F32))
        assert (y.shape, y.dtype) == ((b, s, h, p), F16)
        assert ops.chunk_scan(e(b, c, g, L, L), x, e(b, h, c, L, dtype=F32), e(b, h, c, L, dtype=F32), B,
                              e(b, c, h, p, n)).shape == (b, s, h, p)  # cb in x's dtype
        with pytest.raises(TypeError, match="'cb'"):
            ops.chunk_scan(e(b, c, g, L, L, dtype=torch.bfloat16), x, e(b, h, c, L, dtype=F32),
                           e(b, h, c, L, dtype=F32), B, e(b, c, h, p, n))


# ---------------------------------------------------------------- torch.compile
class Layer(torch.nn.Module):
    """A transformer-ish block and an SSD call, every heavy op a pt-tvm op."""

    def __init__(self, d: int = 128, heads: int = 2, device: str = "meta"):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(d, 3 * d, device=device, dtype=F16)
        self.out = torch.nn.Linear(d, d, device=device, dtype=F16)
        self.proj = torch.nn.Parameter(torch.empty(d, d, device=device, dtype=F16))

    def forward(self, x, dt, A, B, C):
        b, s, d = x.shape
        q, k, v = ops.linear(x, self.qkv.weight, self.qkv.bias).view(b, s, 3, self.heads, -1).unbind(2)
        o = ops.attention(q, k, v, causal=True)
        y = ops.linear(o.reshape(b, s, d), self.out.weight, self.out.bias)
        y = torch.relu(ops.matmul(y, self.proj)) + ops.linear(y, self.proj.T)  # a weight kept [in, out]
        ssd = ops.ssd_chunk_scan(y.view(b, s, self.heads, -1).contiguous(), dt, A, B, C, 64, D=A)
        return y + ssd.view(b, s, d)


def _layer_inputs(device="meta", b=2, s=256, d=128, heads=2, n=64):
    return (torch.randn(b, s, d, device=device, dtype=F16), torch.rand(b, s, heads, device=device),
            -torch.rand(heads, device=device), torch.randn(b, s, 1, n, device=device, dtype=F16),
            torch.randn(b, s, 1, n, device=device, dtype=F16))


def _pt_tvm_ops(gm: torch.fx.GraphModule) -> set[str]:
    """Names of the pt_tvm ops a traced graph calls (op packets and their overloads alike)."""
    names = {str(n.target).removesuffix(".default") for n in gm.graph.nodes if n.op == "call_function"}
    return {n.removeprefix("pt_tvm.") for n in names if n.startswith("pt_tvm.")}


def test_compile_fullgraph_has_no_graph_break():
    """Dynamo traces the whole layer into one graph holding the pt_tvm ops; AOT then decomposes the composite ops
    down to the kernel ops. Meta tensors: nothing runs, the fake implementations give the shapes."""
    from torch._dynamo.backends.common import aot_autograd

    torch._dynamo.reset()
    layer, inputs = Layer(), _layer_inputs()
    graphs, aot_graphs = [], []

    def record(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    def record_aot(gm, example_inputs):
        aot_graphs.append(gm)
        return gm.forward

    out = torch.compile(layer, backend=record, fullgraph=True)(*inputs)
    assert out.shape == (2, 256, 128) and out.device.type == "meta"
    assert len(graphs) == 1
    assert _pt_tvm_ops(graphs[0]) == {"linear", "attention", "matmul", "ssd_chunk_scan"}
    torch._dynamo.reset()
    with torch.no_grad():  # the ops are forward-only (no autograd formula): an inference graph
        torch.compile(layer, backend=aot_autograd(fw_compiler=record_aot), fullgraph=True)(*inputs)
    assert _pt_tvm_ops(aot_graphs[0]) == {"gemm", "attention", "chunk_state", "chunk_scan"}
    assert "cumsum" not in aot_graphs[0].code  # see the next test
    explained = torch._dynamo.explain(layer)(*inputs)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)


def test_ssd_glue_reaches_inductor_without_a_scan(monkeypatch):
    """The SSD glue's cumulative sums reach Inductor as shifted adds (torch 2.11's split scan failed to generate
    code for them on an H100), also where ``torch.compiler.is_compiling()`` is False while AOTAutograd
    decomposes ``pt_tvm::ssd_chunk_scan`` (as it was there)."""
    from torch._dynamo.backends.common import aot_autograd

    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: False)
    torch._dynamo.reset()
    graphs = []

    def record(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    b, s, h, p, n = 1, 600, 4, 64, 128
    x, B = torch.empty(b, s, h, p, device="meta", dtype=F16), torch.empty(b, s, 1, n, device="meta", dtype=F16)
    dt, A = torch.empty(b, s, h, device="meta"), torch.empty(h, device="meta")
    with torch.no_grad():
        torch.compile(lambda *a: ops.ssd_chunk_scan(*a, B, 256, dt_softplus=True), fullgraph=True,
                      backend=aot_autograd(fw_compiler=record))(x, dt, A, B)
    assert graphs and "chunk_state" in graphs[0].code and "cumsum" not in graphs[0].code
    torch._dynamo.reset()


def test_compile_fullgraph_would_catch_a_graph_break():
    """The control: the same harness refuses a layer with a break, so the test above can fail."""

    class Broken(Layer):
        def forward(self, x, *rest):
            y = ops.linear(x, self.out.weight)
            torch._dynamo.graph_break()
            return ops.linear(y, self.out.weight)

    torch._dynamo.reset()
    with pytest.raises(Exception, match="graph_break|Call to `torch._dynamo.graph_break"):
        torch.compile(Broken(), backend=lambda gm, ex: gm.forward, fullgraph=True)(*_layer_inputs())
    assert torch._dynamo.explain(Broken())(*_layer_inputs()).graph_break_count == 1


# ---------------------------------------------------------------- the dispatch, with a reference stand-in
_OUT_DTYPE = {"chunk_state": F32}


class Calls:
    """Counts of the search and compile steps the dispatch ran."""

    def __init__(self):
        self.search = self.compile = self.tune = 0


@pytest.fixture
def dispatch(monkeypatch, tmp_path):
    """Ops run on CPU tensors through a fresh store (plan cache under tmp_path) on the h100 model; the search is
    the real one, counted; the compile step returns the template's reference, cast as the kernel's output."""
    calls = Calls()
    real_search = compiler.search_tiles

    def search(*args, **kw):
        calls.search += 1
        return real_search(*args, **kw)

    def compile_kernel(template, problem, func, vdev):
        calls.compile += 1
        assert func.attrs is not None and vdev.name == "h100"
        out_dtype = _OUT_DTYPE.get(template.name, getattr(torch, problem["dtype"]))
        return lambda *inputs: template.reference(*inputs, **problem).to(out_dtype)

    monkeypatch.setattr(checks, "KERNEL_DEVICE_TYPES", ("cuda", "meta", "cpu"))
    monkeypatch.setattr(kernels, "chip_of", lambda device: hw.get("h100"))
    monkeypatch.setattr(compiler, "search_tiles", search)
    monkeypatch.setattr(kernels, "compile_kernel", compile_kernel)
    with kernels.using(ops.KernelStore(ops.Config(cache_dir=str(tmp_path)))) as store:
        yield calls, store


def test_second_call_of_a_shape_does_no_search_and_no_compile(dispatch, caplog):
    calls, store = dispatch
    x, w, bias = randn(2, 64, 128), randn(128, 128, seed=1), randn(128, seed=2)
    with caplog.at_level(logging.INFO, logger="pt_tvm.ops"):
        first = ops.linear(x, w, bias)
        assert (calls.search, calls.compile) == (1, 1)
        second = ops.linear(randn(2, 64, 128, seed=3), w, bias)
        assert (calls.search, calls.compile) == (1, 1)
    assert len(store) == 1
    ref = x.float() @ w.float().T + bias.float()
    assert first.shape == (2, 64, 128) and rel_err(first.float(), ref) < REL_TOL["float16"]
    assert not torch.equal(first, second)
    records = [r for r in caplog.records if r.name == "pt_tvm.ops"]
    assert len(records) == 1, "the schedule choice is logged once per shape"
    assert ("gemm {M=128, N=128, K=128, dtype=float16, trans_B=True, dynamic_M=False, lda=0, ldb=0} on h100"
            in records[0].getMessage())
    assert "from search" in records[0].getMessage()
    ops.matmul(randn(128, 64), randn(64, 128))  # another problem (trans_B=False): its own search and compile
    assert (calls.search, calls.compile, len(store)) == (2, 2, 2)


def test_plan_cache_serves_a_new_process(dispatch, tmp_path, caplog):
    """A new store (as in a new process) finds the plan on disk: it compiles but does not search."""
    calls, _ = dispatch
    a, b = randn(128, 64), randn(64, 128, seed=1)
    ops.matmul(a, b)
    assert (calls.search, calls.compile, len(PlanCache(str(tmp_path)))) == (1, 1, 1)
    with kernels.using(ops.KernelStore(ops.Config(cache_dir=str(tmp_path)))), \
            caplog.at_level(logging.INFO, logger="pt_tvm.ops"):
        out = ops.matmul(a, b)
    assert (calls.search, calls.compile) == (1, 2)
    assert "from plan cache (model)" in caplog.records[-1].getMessage()
    assert rel_err(out.float(), a.float() @ b.float()) < REL_TOL["float16"]


def test_a_plan_another_model_chose_is_searched_again(dispatch, monkeypatch, tmp_path, caplog):
    """The model's choice on disk is keyed by the code that chose it (``cache.model_fingerprint``): code that
    chooses differently searches again (and caches its own choice) rather than replaying the old one."""
    calls, _ = dispatch
    a, b = randn(128, 64), randn(64, 128, seed=1)
    ops.matmul(a, b)
    monkeypatch.setattr(kernels, "model_fingerprint", lambda: "another model")
    with kernels.using(ops.KernelStore(ops.Config(cache_dir=str(tmp_path)))), \
            caplog.at_level(logging.INFO, logger="pt_tvm.ops"):
        ops.matmul(a, b)
    assert calls.search == 2 and "from search" in caplog.records[-1].getMessage()
    assert len(PlanCache(str(tmp_path))) == 2


def test_a_plan_cache_entry_that_no_longer_fits_is_searched_again(dispatch, tmp_path):
    calls, _ = dispatch
    ops.matmul(randn(128, 64), randn(64, 128))
    cache = PlanCache(str(tmp_path))
    (path,) = [f for f in cache._entries()]
    key = path.removesuffix(".json")
    other, _, _ = kernels.schedule_template("chunk_state", hw.get("h100"), params={"seqlen": 512})
    cache.put(key, other.best.plan)  # a plan of another kernel under the matmul's key
    with kernels.using(ops.KernelStore(ops.Config(cache_dir=str(tmp_path)))):
        with pytest.warns(PlanCacheWarning, match="no longer fits template 'gemm'"):
            ops.matmul(randn(128, 64), randn(64, 128))
    assert calls.search == 3  # the matmul, the chunk_state above, the matmul again
    assert cache.get(key).graph == "gemm"


def test_tuning_only_when_asked_and_its_plan_is_preferred(dispatch, monkeypatch, tmp_path, caplog):
    calls, store = dispatch
    a, b = randn(128, 64), randn(64, 128, seed=1)

    def tune(name, vdev, *, params, top_k):
        calls.tune += 1
        result, problem, build = kernels.schedule_template(name, vdev, params=params)
        best = Measured(result.best, 0.25, 1e-4)
        kernel = kernels.compile_kernel(kernels.templates.get(name), problem, build(), vdev)
        return TuneResult(best, kernel, (best,), result, problem, GRAPH)

    monkeypatch.setattr(kernels, "tune_template", tune)
    ops.matmul(a, b)
    assert calls.tune == 0
    assert ops.configure(tune=True, top_k=2) == ops.Config(tune=True, top_k=2, cache_dir=str(tmp_path))
    ops.matmul(a, b)
    assert calls.tune == 0, "a compiled shape is not tuned again"
    store.clear()
    with caplog.at_level(logging.INFO, logger="pt_tvm.ops"):
        ops.matmul(a, b)  # the model's plan is on disk, but tuning was asked for
    assert calls.tune == 1 and "from tuning (best of 1, 0.250 ms)" in caplog.records[-1].getMessage()
    with kernels.using(ops.KernelStore(ops.Config(cache_dir=str(tmp_path)))), \
            caplog.at_level(logging.INFO, logger="pt_tvm.ops"):
        searches = calls.search
        ops.matmul(a, b)
    assert calls.search == searches and calls.tune == 1
    assert "from plan cache (tuned)" in caplog.records[-1].getMessage()


def test_configure_rejects_unknown_or_bad_settings():
    with pytest.raises(TypeError, match="no setting 'tunes'"):
        ops.configure(tunes=True)
    with pytest.raises(TypeError, match="'tune' must be a bool"):
        ops.Config(tune="yes")
    with pytest.raises(ValueError, match="'top_k' must be a positive int"):
        ops.Config(top_k=0)


def test_dynamic_tokens_compile_one_kernel_per_bucket(dispatch, caplog):
    """With ``dynamic_tokens`` the GEMM ops key their kernels by the token count's bucket (a symbolic row count
    priced at the next power of two): 300 and 500 rows share one search and compile, 600 gets the next bucket's,
    and each result is the exact one."""
    calls, store = dispatch
    ops.configure(dynamic_tokens=True)
    w = randn(128, 96, seed=1)
    with caplog.at_level(logging.INFO, logger="pt_tvm.ops"):
        for m in (300, 500, 301):
            x = randn(m, 96, seed=m)
            assert rel_err(ops.linear(x, w).float(), x.float() @ w.float().T) < REL_TOL["float16"]
        assert (calls.search, calls.compile, len(store)) == (1, 1, 1)
        ops.linear(randn(600, 96), w)
        ops.swiglu(randn(7, 96), w)  # 7 rows: the bucket's floor, a tile's 64
    assert (calls.search, calls.compile, len(store)) == (3, 3, 3)
    messages = [r.getMessage() for r in caplog.records if r.name == "pt_tvm.ops"]
    assert "gemm {M=512, N=128, K=96, dtype=float16, trans_B=True, dynamic_M=True, lda=0, ldb=0}" in messages[0]
    assert "M=1024" in messages[1] and "gemm_swiglu {M=64, N=64, K=96, dtype=float16, dynamic_M=True}" in messages[2]


def test_dynamic_tokens_ssd_one_kernel_pair_per_bucket(dispatch, caplog):
    """With ``dynamic_tokens`` the SSD ops key their kernels by the sequence length's bucket (at least a chunk):
    lengths 200 and 250 share one chunk_state and one chunk_scan, 300 takes the next bucket's; each result is
    the recurrence's."""
    calls, store = dispatch
    ops.configure(dynamic_tokens=True)
    with caplog.at_level(logging.INFO, logger="pt_tvm.ops"):
        for s in (200, 250, 300):
            x, dt, A, B, C = _ssd_inputs(b=1, s=s)
            out, final = ops.ssd_chunk_scan(x, dt, A, B, C, 64, return_final_states=True)
            ref, ref_final = ssd_recurrence(x, dt, A, B, C)
            assert rel_err(out.float(), ref) < REL_TOL["float16"] and rel_err(final, ref_final) < 1e-5
            assert len(store) == (2 if s < 256 else 4)
    assert (calls.search, calls.compile) == (4, 4)
    messages = [r.getMessage() for r in caplog.records if r.name == "pt_tvm.ops"]
    assert messages[0].startswith("chunk_state {batch=1, seqlen=256,")
    assert "dynamic_seqlen=True, x_strides=()" in messages[0]
    assert messages[3].startswith("chunk_scan {batch=1, seqlen=512,") and "dynamic_seqlen=True" in messages[3]


def test_dynamic_tokens_setting_and_env_var(monkeypatch):
    with pytest.raises(TypeError, match="'dynamic_tokens' must be a bool"):
        ops.Config(dynamic_tokens=1)
    monkeypatch.setenv(kernels.DYNAMIC_ENV, "on")
    assert ops.KernelStore().config.dynamic_tokens
    monkeypatch.delenv(kernels.DYNAMIC_ENV)
    assert not ops.KernelStore().config.dynamic_tokens
    assert [bucket(n, 64) for n in (1, 64, 65, 300, 4096, 4097)] == [64, 64, 128, 512, 4096, 8192]


def test_tune_env_var(monkeypatch):
    monkeypatch.setenv(kernels.TUNE_ENV, "1")
    assert ops.KernelStore().config.tune
    monkeypatch.setenv(kernels.TUNE_ENV, "0")
    assert not ops.KernelStore().config.tune


def test_attention_through_the_dispatch(dispatch):
    calls, _ = dispatch
    q, k, v = randn(1, 128, 4, 64), randn(1, 128, 2, 64, seed=1), randn(1, 128, 2, 64, seed=2)
    out = ops.attention(q, k, v, causal=True, softmax_scale=64 ** -0.5)
    ref = F.scaled_dot_product_attention(q.float().transpose(1, 2), k.float().repeat_interleave(2, 2).transpose(1, 2),
                                         v.float().repeat_interleave(2, 2).transpose(1, 2), is_causal=True)
    assert rel_err(out.float(), ref.transpose(1, 2)) < REL_TOL["float16"]
    assert (calls.search, calls.compile) == (1, 1)


def test_attention_views_through_the_dispatch(dispatch):
    """Views reach the kernel as they lie (the search builds the template at their strides): queries of a
    ``[batch, heads, seqlen, dim]`` tensor transposed, keys and values the heads of one fused projection output;
    a batch of one takes its sequence stride times the sequence length. Every call of a layout shares its kernel."""
    calls, store = dispatch
    bhsd, kv = randn(1, 4, 128, 64), randn(1, 128, 2 * 2, 64, seed=1)
    q, k, v = bhsd.transpose(1, 2), kv[:, :, :2], kv[:, :, 2:]
    out = ops.attention(q, k, v, causal=True)
    assert out.is_contiguous()
    assert rel_err(out.float(), _attention_reference(q, k, v, True)) < REL_TOL["float16"]
    ((name, problem, _),) = store._kernels
    problem = dict(problem)
    assert name == "flash_attention" and problem["q_strides"] == (64 * 128, 64, 128 * 64)
    assert problem["k_strides"] == problem["v_strides"] == (128 * 4 * 64, 4 * 64, 64)
    ops.attention(randn(1, 4, 128, 64, seed=3).transpose(1, 2), k, v, causal=True)
    assert (calls.search, calls.compile) == (1, 1)


def test_qkv_rope_and_packed_attention_through_the_dispatch(dispatch):
    """An attention layer's projection with RoPE and attention over its output (two sequences of 100, GQA 4/2):
    the ``gemm_rope`` problem carries the sequence length the positions wrap at; the result matches the layer's
    F.linear, rope and SDPA in float32."""
    from benchmarks.layers.models import _rope_tables, rope

    calls, store = dispatch
    x, w = randn(2, 100, 128), randn(8 * 64, 128, seed=1) / 128 ** 0.5
    cos, sin = _rope_tables(100, 64, 10000.0, "cpu", torch.float16)
    out = ops.attention_qkv(ops.qkv_rope(x, w, cos, sin, 2), 2, causal=True)
    q, k, v = F.linear(x.float(), w.float()).view(2, 100, 8, 64).split([4, 2, 2], dim=2)
    ref = _attention_reference(rope(q, cos.float(), sin.float()), rope(k, cos.float(), sin.float()), v, True)
    assert rel_err(out.float(), ref) < REL_TOL["float16"]
    problems = {name: dict(problem) for name, problem, _ in store._kernels}
    assert problems["gemm_rope"] == {"M": 200, "K": 128, "heads": 4, "kv_heads": 2, "head_dim": 64, "seqlen": 100,
                                     "dtype": "float16"}
    assert problems["flash_attention_qkv"]["seq_len"] == 100 and (calls.search, calls.compile) == (2, 2)


def test_dynamic_tokens_qkv_rope_and_attention_one_kernel_pair_a_bucket(dispatch):
    """With ``dynamic_tokens`` the attention layer's two ops compile per bucket: the projection with RoPE at a
    symbolic row count and sequence length (its positions wrap at the call's length, not the bucket's), attention
    over its output's heads as views on the varlen kernel; 2 x 100 and 2 x 90 tokens share both kernels, each
    result the layer's F.linear, rope and SDPA in float32."""
    from benchmarks.layers.models import _rope_tables, rope

    calls, store = dispatch
    ops.configure(dynamic_tokens=True)
    w = randn(8 * 64, 128, seed=1) / 128 ** 0.5
    for seqlen in (100, 90):
        x = randn(2, seqlen, 128, seed=seqlen)
        cos, sin = _rope_tables(seqlen, 64, 10000.0, "cpu", torch.float16)
        out = ops.attention_qkv(ops.qkv_rope(x, w, cos, sin, 2), 2, causal=True)
        q, k, v = F.linear(x.float(), w.float()).view(2, seqlen, 8, 64).split([4, 2, 2], dim=2)
        ref = _attention_reference(rope(q, cos.float(), sin.float()), rope(k, cos.float(), sin.float()), v, True)
        assert out.shape == (2, seqlen, 4, 64) and rel_err(out.float(), ref) < REL_TOL["float16"]
    problems = {name: dict(problem) for name, problem, _ in store._kernels}
    assert (problems["gemm_rope"]["M"], problems["gemm_rope"]["seqlen"], problems["gemm_rope"]["dynamic_M"]) == (
        256, 128, True)
    assert problems["flash_attention_varlen"]["q_strides"] == (8 * 64, 64)
    assert (calls.search, calls.compile, len(store)) == (2, 2, 2)


def _attention_reference(q, k, v, causal, scale=None):
    """Float32 ``[batch, sq, heads, dim]`` by SDPA: GQA heads repeated, causal aligned bottom-right, rows that see
    no key 0."""
    sq, sk, groups = q.shape[1], k.shape[1], q.shape[2] // k.shape[2]
    seen = torch.ones(sq, sk, dtype=torch.bool).tril(sk - sq) if causal else None
    k, v = (t.float().repeat_interleave(groups, 2).transpose(1, 2) for t in (k, v))
    out = F.scaled_dot_product_attention(q.float().transpose(1, 2), k, v, attn_mask=seen, scale=scale)
    return out.transpose(1, 2).nan_to_num(0.0)


@pytest.mark.parametrize("sq, sk, scale", [(100, 300, None), (300, 100, 0.2)], ids=["kv-cache", "more-queries"])
def test_attention_kv_cache_through_the_dispatch(dispatch, sq, sk, scale):
    """Queries and keys of other (ragged) lengths and another scale reach the flash_attention template as its
    seq_len/seq_len_k/softmax_scale: searched and run (by the reference stand-in) on those."""
    calls, store = dispatch
    q, k, v = randn(2, sq, 4, 64), randn(2, sk, 1, 64, seed=1), randn(2, sk, 1, 64, seed=2)
    out = ops.attention(q, k, v, causal=True, softmax_scale=scale)
    assert rel_err(out.float(), _attention_reference(q, k, v, True, scale)) < REL_TOL["float16"]
    ((name, problem, _),) = store._kernels
    problem = dict(problem)
    assert name == "flash_attention" and (problem["seq_len"], problem["seq_len_k"]) == (sq, sk)
    assert problem["softmax_scale"] == (scale or 0.0) and (calls.search, calls.compile) == (1, 1)


def test_attention_varlen_through_the_dispatch(dispatch):
    """Packed sequences reach flash_attention_varlen with the longest lengths bucketed to powers of two: another
    batch of lengths under the same buckets reuses the kernel."""
    calls, store = dispatch
    lengths_q, lengths_k = [100, 30, 1], [100, 200, 64]
    cu_q, cu_k = (torch.tensor([0, *torch.tensor(n).cumsum(0).tolist()], dtype=torch.int32)
                  for n in (lengths_q, lengths_k))
    q, k, v = randn(sum(lengths_q), 4, 64), randn(sum(lengths_k), 2, 64, seed=1), randn(sum(lengths_k), 2, 64, seed=2)
    out = ops.attention(q, k, v, causal=True, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, max_seqlen_q=100,
                        max_seqlen_k=200)
    for b in range(3):
        rows, keys = slice(cu_q[b], cu_q[b + 1]), slice(cu_k[b], cu_k[b + 1])
        ref = _attention_reference(q[None, rows], k[None, keys], v[None, keys], True)[0]
        assert rel_err(out[rows].float(), ref) < REL_TOL["float16"]
    ((name, problem, _),) = store._kernels
    assert name == "flash_attention_varlen" and dict(problem)["max_seqlen_q"] == 128
    assert dict(problem)["max_seqlen_k"] == 256
    cu = torch.tensor([0, 120, 250], dtype=torch.int32)
    ops.attention(randn(250, 4, 64), randn(250, 2, 64), randn(250, 2, 64), cu_seqlens_q=cu, cu_seqlens_k=cu,
                  causal=True, max_seqlen_q=130, max_seqlen_k=130)  # another batch size: its own kernel
    assert (calls.search, calls.compile) == (2, 2)
    cu_q, cu_k = torch.tensor([0, 77, 120, 123], dtype=torch.int32), torch.tensor([0, 150, 300, 310], dtype=torch.int32)
    ops.attention(q[:123], k[:310], v[:310], causal=True, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, max_seqlen_q=77,
                  max_seqlen_k=150)  # the first call's batch size and buckets: no search, no compile
    assert (calls.search, calls.compile, len(store)) == (2, 2, 2)


def test_dynamic_tokens_attention_runs_dense_lengths_on_one_varlen_kernel_per_bucket(dispatch):
    """With ``dynamic_tokens`` dense attention runs as a packed batch of equal lengths on the varlen kernel of
    the lengths' buckets: 300 and 500 queries over a KV cache of 400 and 450 keys share one search and compile
    (buckets 512 and 512), 600 queries get their own; each result matches SDPA's (causal, bottom-right)."""
    calls, store = dispatch
    ops.configure(dynamic_tokens=True)
    for sq, sk in ((300, 400), (500, 450), (600, 450)):
        q, k, v = randn(2, sq, 4, 64, seed=sq), randn(2, sk, 2, 64, seed=sk), randn(2, sk, 2, 64, seed=1)
        out = ops.attention(q, k, v, causal=True)
        assert out.shape == q.shape
        assert rel_err(out.float(), _attention_reference(q, k, v, True)) < REL_TOL["float16"]
    assert (calls.search, calls.compile, len(store)) == (2, 2, 2)
    problems = sorted((dict(problem)["max_seqlen_q"], dict(problem)["max_seqlen_k"], name)
                      for name, problem, _ in store._kernels)
    assert problems == [(512, 512, "flash_attention_varlen"), (1024, 512, "flash_attention_varlen")]


def test_packed_views_through_the_dispatch(dispatch):
    """Views of one packed projection output reach the varlen kernel as they lie, with their token and head
    strides; under ``dynamic_tokens`` dense views whose batch and sequence dims merge (heads of a fused projection)
    run packed at those strides, and a transposed ``[batch, heads, seqlen, dim]`` query, which does not merge,
    runs on the dense kernel."""
    calls, store = dispatch
    lengths = [100, 30, 1]
    cu = torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()], dtype=torch.int32)
    qkv = randn(sum(lengths), 4 + 2 * 2, 64)
    q, k, v = qkv[:, :4], qkv[:, 4:6], qkv[:, 6:]
    out = ops.attention(q, k, v, causal=True, cu_seqlens_q=cu, cu_seqlens_k=cu, max_seqlen_q=100, max_seqlen_k=100)
    for b in range(3):
        rows = slice(cu[b], cu[b + 1])
        ref = _attention_reference(q[None, rows], k[None, rows], v[None, rows], True)[0]
        assert rel_err(out[rows].float(), ref) < REL_TOL["float16"]
    ((name, problem, _),) = store._kernels
    problem = dict(problem)
    assert name == "flash_attention_varlen" and problem["q_strides"] == problem["k_strides"] == (8 * 64, 64)
    ops.configure(dynamic_tokens=True)
    dense = randn(2, 300, 8, 64, seed=3)
    bhsd = randn(2, 4, 300, 64, seed=4).transpose(1, 2)
    for q in (dense[:, :, :4], bhsd):
        k, v = dense[:, :, 4:6], dense[:, :, 6:]
        out = ops.attention(q, k, v, causal=True)
        assert rel_err(out.float(), _attention_reference(q, k, v, True)) < REL_TOL["float16"]
    names = sorted(name for name, _, _ in store._kernels)
    assert names == ["flash_attention", "flash_attention_varlen", "flash_attention_varlen"]


def test_ragged_matmul_and_ssd_through_the_dispatch(dispatch):
    """Shapes that are no tile multiple: M=100 (and N, K), and a sequence of 200 in chunks of 64."""
    calls, _ = dispatch
    a, b = randn(100, 72), randn(72, 136, seed=1)
    assert rel_err(ops.matmul(a, b).float(), a.float() @ b.float()) < REL_TOL["float16"]
    x, dt, A, B, C = _ssd_inputs(b=1, s=200)
    out, final = ops.ssd_chunk_scan(x, dt, A, B, C, 64, return_final_states=True)
    ref, ref_final = ssd_recurrence(x, dt, A, B, C)
    assert rel_err(out.float(), ref) < REL_TOL["float16"] and rel_err(final, ref_final) < 1e-5
    assert (calls.search, calls.compile) == (3, 3)


def test_gemm_operands_lie_as_rows_on_16_byte_boundaries_or_are_copied_to_them(dispatch):
    """A ``K`` of 75 fp16 (150-byte rows, which TMA cannot address) is copied once into rows 80 elements apart and
    its kernel built for that stride (``lda``); a view of 75 columns of a 128-wide tensor (256-byte rows) is read as
    it lies, as is a contiguous B; a view starting 2 bytes into its storage is copied. Every result is checked."""
    from pt_tvm.ops.gemm import _tma_rows

    calls, store = dispatch
    wide, b = randn(100, 128), randn(75, 136, seed=1)
    packed, view, shifted = wide[:, :75].contiguous(), wide[:, :75], wide[:, 1:76]
    assert _tma_rows(view) == (view, 128) and _tma_rows(b) == (b, 0)
    for a, lda in ((packed, 80), (view, 128), (shifted, 80)):
        copied, stride = _tma_rows(a)
        assert stride == lda and copied.stride() == (lda, 1) and copied.storage_offset() == 0
        assert torch.equal(copied, a)
        assert rel_err(ops.matmul(a, b).float(), a.float() @ b.float()) < REL_TOL["float16"]
    weight = randn(136, 75, seed=2)  # linear's weight [out, in]: B's rows (ldb) copied alike
    assert rel_err(ops.linear(view, weight).float(), view.float() @ weight.float().T) < REL_TOL["float16"]
    problems = [dict(key[1]) for key in store._kernels]
    assert sorted((p.get("lda", 0), p.get("ldb", 0), p["trans_B"]) for p in problems) == [
        (80, 0, False), (128, 0, False), (128, 80, True)]
    assert calls.search == 3


def test_empty_products_run_no_kernel(dispatch):
    """No tokens, no keys or an empty K give what PyTorch gives (empty results; zeros where K is 0, a bias alone
    through linear; zeros where a query sees no key, pt-tvm's rule for such queries; an SSD over no positions
    ends in the state it started from) with no search and no compile: a mixture of experts' idle expert, an empty
    serving step."""
    calls, _ = dispatch
    F16z = dict(dtype=F16)
    w = randn(128, 64, seed=1)
    assert ops.matmul(torch.zeros(0, 64, **F16z), w.T).shape == (0, 128)
    assert torch.equal(ops.matmul(torch.zeros(8, 0, **F16z), torch.zeros(0, 128, **F16z)), torch.zeros(8, 128, **F16z))
    assert ops.linear(torch.zeros(2, 0, 64, **F16z), w).shape == (2, 0, 128)
    bias = randn(128, seed=2)
    assert torch.equal(ops.linear(torch.zeros(3, 0, **F16z), torch.zeros(128, 0, **F16z), bias), bias.expand(3, 128))
    assert ops.swiglu(torch.zeros(0, 64, **F16z), randn(256, 64, seed=3)).shape == (0, 128)
    qkv = ops.qkv_rope(torch.zeros(2, 0, 256, **F16z), randn(6 * 64, 256), torch.zeros(0, 64, **F16z),
                       torch.zeros(0, 64, **F16z), 1)
    assert qkv.shape == (2, 0, 6, 64) and ops.attention_qkv(qkv, 1).shape == (2, 0, 4, 64)
    q, kv = randn(2, 16, 8, 64), randn(2, 16, 2, 64, seed=4)
    assert ops.attention(q[:, :0], kv, kv).shape == (2, 0, 8, 64)
    assert torch.equal(ops.attention(q, kv[:, :0], kv[:, :0]), torch.zeros_like(q))
    cu_q, cu_k = torch.zeros(3, dtype=torch.int32), torch.tensor([0, 8, 16], dtype=torch.int32)
    assert ops.attention(q[0, :0], kv[0], kv[0], cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, max_seqlen_q=1,
                         max_seqlen_k=8).shape == (0, 8, 64)
    cache = randn(0, 1024, 8, 128)
    assert ops.decode_attention(randn(0, 1, 32, 128), cache, cache, torch.zeros(0, dtype=torch.int32)).shape == (
        0, 1, 32, 128)
    x, dt, A, B, C = _ssd_inputs(s=0)
    state = randn(2, 4, 64, 128, dtype=F32, seed=5)
    out, final = ops.ssd_chunk_scan(x, dt, A, B, C, 64, initial_states=state, return_final_states=True)
    assert out.shape == x.shape and torch.equal(final, state) and final.data_ptr() != state.data_ptr()
    assert torch.equal(ops.ssd_chunk_scan(x, dt, A, B, C, 64, return_final_states=True)[1], torch.zeros_like(state))
    assert (calls.search, calls.compile) == (0, 0)


def test_transposed_weights_are_read_as_they_lie(dispatch):
    """``matmul(a, w.T)`` for a ``w [N, K]`` lying as rows runs the ``trans_B`` kernel on ``w``, and ``linear(x,
    w.T)`` for a weight kept ``[in, out]`` the plain kernel on ``w``: no copy, no ``ldb``. Every result checked."""
    calls, store = dispatch
    a, w = randn(100, 64), randn(136, 64, seed=1)
    assert rel_err(ops.matmul(a, w.T).float(), a.float() @ w.float().T) < REL_TOL["float16"]
    w_in_out, bias = randn(64, 136, seed=2), randn(136, seed=3)
    out = ops.linear(a, w_in_out.T, bias)
    assert rel_err(out.float(), a.float() @ w_in_out.float() + bias.float()) < REL_TOL["float16"]
    problems = sorted((p["trans_B"], p["N"], p["K"], p.get("ldb", 0)) for p in (dict(k[1]) for k in store._kernels))
    assert problems == [(False, 136, 64, 0), (True, 136, 64, 0)] and calls.search == 2


def test_the_real_compile_step_runs_once_per_shape(monkeypatch, tmp_path):
    """Search, plan and TileLang's compile (nvcc) as on a GPU machine; only the launch fails on CPU tensors. The
    compiled kernel is kept: the second call of the shape compiles nothing and fails at the launch again."""
    compiled = []
    real_compile = kernels.compile_kernel

    def compile_kernel(*args):
        compiled.append(args[0].name)
        return real_compile(*args)

    monkeypatch.setattr(checks, "KERNEL_DEVICE_TYPES", ("cuda", "meta", "cpu"))
    monkeypatch.setattr(kernels, "chip_of", lambda device: hw.get("h100"))
    monkeypatch.setattr(kernels, "compile_kernel", compile_kernel)
    a, b = randn(128, 64), randn(64, 128, seed=1)
    with kernels.using(ops.KernelStore(ops.Config(cache_dir=str(tmp_path)))) as store:
        for _ in range(2):
            with pytest.raises(RuntimeError, match="device"):
                ops.matmul(a, b)
            assert compiled == ["gemm"] and len(store) == 1


def test_the_template_refuses_a_shape_before_any_search(dispatch):
    calls, _ = dispatch
    with pytest.raises(ValueError, match="'flash_attention' template does not take this shape: .*'dim' must be a "
                                         "multiple of 16 up to 256, got 40"):
        ops.attention(randn(1, 128, 4, 40), randn(1, 128, 4, 40), randn(1, 128, 4, 40))
    assert (calls.search, calls.compile) == (0, 0)


# ---------------------------------------------------------------- the SSD forward against a recurrence
def _ssd_inputs(b=2, s=256, h=4, p=64, g=2, n=128, dtype=F16):
    x, B, C = randn(b, s, h, p, dtype=dtype), randn(b, s, g, n, dtype=dtype, seed=1), randn(b, s, g, n, dtype=dtype,
                                                                                             seed=2)
    gen = torch.Generator().manual_seed(3)
    dt = torch.exp(math.log(1e-3) + (math.log(1e-1) - math.log(1e-3)) * torch.rand(b, s, h, generator=gen))
    A = -(1.0 + 15.0 * torch.rand(h, generator=gen))
    return x, dt, A, B, C


@pytest.mark.parametrize("extras", [
    {},
    {"D": "heads", "z": True},
    {"D": "heads_headdim", "dt_bias": True, "dt_softplus": True, "initial_states": True, "dt_limit": (0.0, 0.05)},
], ids=["plain", "D-z", "D2-bias-softplus-init-limit"])
def test_ssd_chunk_scan_matches_the_recurrence(dispatch, extras):
    calls, _ = dispatch
    x, dt, A, B, C = _ssd_inputs()
    h, p, n = x.shape[2], x.shape[3], B.shape[3]
    kw = {}
    if "D" in extras:
        kw["D"] = randn(h, dtype=F32, seed=4) if extras["D"] == "heads" else randn(h, p, dtype=F32, seed=4)
    if extras.get("z"):
        kw["z"] = randn(*x.shape, seed=5)
    if extras.get("dt_bias"):
        kw["dt_bias"], dt = randn(h, dtype=F32, seed=6) - 4.0, torch.randn(*dt.shape) - 2.0
    if extras.get("initial_states"):
        kw["initial_states"] = randn(x.shape[0], h, p, n, dtype=F32, seed=7)
    for key in ("dt_softplus", "dt_limit"):
        if key in extras:
            kw[key] = extras[key]
    out, final = ops.ssd_chunk_scan(x, dt, A, B, C, 64, return_final_states=True, **kw)
    ref, ref_final = ssd_recurrence(x, dt, A, B, C, **kw)
    assert out.dtype == F16 and final.dtype == F32
    assert rel_err(out.float(), ref) < REL_TOL["float16"]  # 2e-4 to 4e-4: fp16 rounding of inputs and outputs
    assert rel_err(final, ref_final) < 1e-5  # float32 throughout
    assert (calls.search, calls.compile) == (2, 2)  # chunk_state and chunk_scan


def test_ssd_reads_the_projection_columns_as_they_lie(dispatch):
    """Mamba2's ``x``, ``B`` and ``C``, columns of its convolved in-projection ``[batch, seqlen, heads * headdim +
    2 * groups * dstate]``, reach both kernels as views (each problem built at their strides, no copy); columns
    starting off a 16-byte boundary are copied once, packed; every result matches the recurrence."""
    _, store = dispatch
    b, s, h, p, g, n = 2, 200, 4, 64, 2, 128
    width = h * p + 2 * g * n
    xBC = randn(b, s, width + 8, seed=8)
    _, dt, A, _, _ = _ssd_inputs(b=b, s=s, h=h, p=p, g=g, n=n)
    for start, strided in ((0, True), (1, False)):
        cols = xBC[..., start:start + width]
        x, B, C = (t.unflatten(-1, (-1, size)) for t, size in zip(cols.split([h * p, g * n, g * n], -1), (p, n, n)))
        out, final = ops.ssd_chunk_scan(x, dt, A, B, C, 64, return_final_states=True)
        ref, ref_final = ssd_recurrence(x, dt, A, B, C)
        assert rel_err(out.float(), ref) < REL_TOL["float16"] and rel_err(final, ref_final) < 1e-5
        problems = {name: dict(problem) for name, problem, _ in store._kernels}
        rows = (s * (width + 8), width + 8)
        views = {"x_strides": (*rows, p), "B_strides": (*rows, n), "C_strides": (*rows, n)} if strided else {}
        assert {k: v for k, v in problems["chunk_state"].items() if k.endswith("_strides") and v} == \
            {k: views[k] for k in ("x_strides", "B_strides") if k in views}
        assert {k: v for k, v in problems["chunk_scan"].items() if k.endswith("_strides") and v} == \
            {k: views[k] for k in ("x_strides", "C_strides") if k in views}
        store._kernels.clear()


def test_chunk_ops_refuse_views_tma_cannot_read(dispatch):
    """The kernel ops take views whose strides TMA can address and name the argument otherwise."""
    B, dt = _ssd_inputs(s=64)[3], torch.rand(2, 4, 1, 64)
    x = randn(2, 64, 4, 68)[..., :64]  # heads 136 bytes apart
    with pytest.raises(checks.ArgumentError, match="argument 'x' has stride 68 in dim 2"):
        ops.chunk_state(B, x, dt, dt)
    with pytest.raises(checks.ArgumentError, match="argument 'C' has stride 68 in dim 2"):
        ops.chunk_scan(torch.rand(2, 1, 2, 64, 64), x.contiguous(), dt, dt, randn(2, 64, 2, 68)[..., :64],
                       randn(2, 1, 4, 64, 64))


def test_ssd_glue_with_a_partial_last_chunk():
    """The glue's padding for seqlen not a multiple of the chunk (mamba's convention: dt is zero past the end,
    so the last chunk's state and dA_cumsum stop there), checked through a float32 chunked forward."""
    from pt_tvm.ops import ssd

    x, dt, A, B, C = (t.float() for t in _ssd_inputs(b=1, s=200))
    chunk = 64
    dtc, dA = ssd._chunk_cumsum(dt, A, chunk, None, False, 0.0, None)
    assert dtc.shape == (1, 4, 4, 64) and torch.all(dtc[:, :, -1, 200 - 192:] == 0)
    pad = lambda t: F.pad(t, (0, 0, 0, 0, 0, 256 - 200))  # noqa: E731 -- the kernels' zero-filled reads
    r = x.shape[2] // B.shape[2]
    xc, Bc, Cc = (pad(t).view(1, 4, chunk, *t.shape[2:]) for t in (x, B, C))
    Bh, Ch = Bc.repeat_interleave(r, 3), Cc.repeat_interleave(r, 3)
    decay_out = torch.exp(dA[..., -1:] - dA)                                            # [b, h, c, l]
    states = torch.einsum("bclhp,bhcl,bclhn->bchpn", xc, dtc * decay_out, Bh)
    prev, final = ssd._state_passing(states, dA[..., -1], None)
    cb = ssd._bmm_chunk(C, B, chunk)
    assert cb.shape == (1, 4, 2, 64, 64) and cb.is_contiguous()
    seg = torch.exp((dA[..., :, None] - dA[..., None, :]).clamp(max=0)) * torch.ones(64, 64).tril()
    y = []
    for c in range(4):
        cbh = cb[:, c].repeat_interleave(r, 1)                                            # [b, h, l, s]
        scores = cbh * seg[:, :, c] * dtc[:, :, c, None, :]
        decay_in = torch.exp(dA[:, :, c]).transpose(1, 2)[..., None]                      # [b, l, h, 1]
        inter = torch.einsum("blhn,bhpn->blhp", Ch[:, c], prev[:, c]) * decay_in
        y.append(torch.einsum("bhls,bshp->blhp", scores, xc[:, c]) + inter)
    y = torch.cat(y, 1)[:, :200]
    ref, ref_final = ssd_recurrence(x, dt, A, B, C)
    assert rel_err(y, ref) < 1e-5 and rel_err(final, ref_final) < 1e-5
