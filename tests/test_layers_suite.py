"""The ``layers`` benchmark suite on a CPU: its modules against independent float64 references (a naive
attention with complex-number RoPE; Mamba2's recurrence step by step), the config listing and dry run, and the
report's ratios over a synthetic run. ``@pytest.mark.gpu`` tests run the suite's systems on a GPU."""
from __future__ import annotations

import json
import math
import os

import pytest
import tilelang.testing
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

import pt_tvm.ops as pt_ops
from benchmarks import cli as bench_cli
from benchmarks.configs import suite_configs
from benchmarks.layers import models, opsets
from benchmarks.layers import report as layers_report
from benchmarks.layers.models import EAGER, LlamaLayer, LlamaShape, Mamba2Block, Mamba2Shape
from benchmarks.layers.suite import LAYER_TOL, layer_flops, run_configs
from benchmarks.layers.warm import Warmer, kernel_calls
from benchmarks.suite import Config
from pt_tvm import hw
from pt_tvm.measure import rel_err
from pt_tvm.ops import checks, kernels

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


# ---------------------------------------------------------------- pt-tvm's op set, kernels stood in by references
@pytest.fixture
def reference_kernels(monkeypatch, tmp_path):
    """pt-tvm's ops on CPU tensors: the real argument checks, problems and search (h100 model, plan cache under
    tmp_path); the compiled kernel replaced by the template's float32 reference, cast as the kernel's output."""
    def compile_kernel(template, problem, func, vdev):
        out = torch.float32 if template.name == "chunk_state" else getattr(torch, problem["dtype"])
        return lambda *inputs: template.reference(*inputs, **problem).to(out)

    monkeypatch.setattr(checks, "KERNEL_DEVICE_TYPES", ("cuda", "meta", "cpu"))
    monkeypatch.setattr(kernels, "chip_of", lambda device: hw.get("h100"))
    monkeypatch.setattr(kernels, "compile_kernel", compile_kernel)
    with kernels.using(pt_ops.KernelStore(pt_ops.Config(cache_dir=str(tmp_path)))) as store:
        yield store


def test_llama_layer_over_pt_tvm_ops_matches_float32(reference_kernels):
    """The pt-tvm op set hands the layer's tensors to the ops as they expect (layouts, GQA, causal): with each
    kernel replaced by its template's reference, the fp16 layer matches the float32 eager one."""
    shape = LlamaShape(hidden=256, heads=4, kv_heads=2, head_dim=64, intermediate=384)
    layer = LlamaLayer(shape, opsets.PT_TVM, dtype=torch.float16).reset(seed=5)
    x = _randn(1, 128, shape.hidden, seed=6, dtype=torch.float16)
    ref = models.twin(layer, EAGER, dtype=torch.float32)(x.float())
    out = layer(x)
    assert out.dtype == torch.float16
    assert rel_err(out.float() - x.float(), ref - x.float()) < LAYER_TOL["float16"]
    assert len(reference_kernels) == 5  # qkv with RoPE, attention, o, gate/up, down: one kernel each


def test_mamba2_scan_over_pt_tvm_ops_matches_float32(reference_kernels):
    """The SSD call of the pt-tvm op set (contiguous x, B, C; D, dt_bias, softplus) against the eager scan in
    float32. The projections stay F.linear: pt-tvm's GEMM refuses the in-projection's N = 2 d_inner + 2 d_state
    + heads until the templates take any shape."""
    shape = Mamba2Shape(d_model=256, expand=2, headdim=64, d_state=128, ngroups=1, chunk=256)
    scan_only = models.Ops("pt-tvm scan", F.linear, EAGER.attention, opsets.PT_TVM.ssd, EAGER.gated_rms_norm)
    block = Mamba2Block(shape, scan_only, dtype=torch.float16).reset(seed=7)
    u = _randn(1, 512, shape.d_model, seed=8, dtype=torch.float16)
    ref = models.twin(block, EAGER, dtype=torch.float32)(u.float())
    assert rel_err(block(u), ref) < LAYER_TOL["float16"]
    assert len(reference_kernels) == 2  # chunk_state, chunk_scan


# ---------------------------------------------------------------- grid, listing, dry run, FLOPs
def test_grids_cover_the_issue_s_shapes():
    default = suite_configs("layers")
    shapes = {(c.kernel, c.problem["batch"], c.problem["seqlen"]) for c in default}
    for layer in models.LAYERS:
        assert {(layer, 1, 512), (layer, 16, 4096), (layer, 1, 777), (layer, 1, 2500)} <= shapes
    assert all(c.note == "ragged" for c in default if c.problem["seqlen"] in (777, 2500))
    assert {c.kernel for c in default if "mamba-ssm" in c.systems} == {"mamba2-1.3b"}
    assert {(c.problem["batch"], c.problem["seqlen"]) for c in default
            if "torch-compile-max-autotune" in c.systems} == {(4, 2048), (16, 4096)}
    full = suite_configs("layers-full")
    assert len(full) == 2 * (12 + 4) and all("torch-compile-max-autotune" in c.systems for c in full)


def test_list_and_dry_run(tmp_path, capsys):
    assert bench_cli.main(["list", "--suite", "layers"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[-1] == "14 configs, 67 rows" and any("llama3-8b" in ln and "fp16 b16 s4096" in ln for ln in listed)
    assert bench_cli.main(["list", "--suite", "layers", "--where", "kernel=mamba2-1.3b,batch=4|16"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [ln.split()[3] for ln in listed[:-1]] == ["b4", "b16"] and all("mamba2-1.3b" in ln for ln in listed[:-1])
    out = str(tmp_path / "dry.json")
    assert bench_cli.main(["run", "--suite", "layers", "--dry-run", "--where", "seqlen=777", "--out", out]) == 0
    run = json.load(open(out))
    assert run["header"]["suite"] == "layers" and run["header"]["dry_run"] is True
    rows = {(r["kernel"], r["system"]): r for r in run["rows"]}
    assert len(rows) == 9 and all(r["valid"] is None and r["ms"] is None for r in rows.values())
    llama = rows[("llama3-8b", "pt-tvm+compile")]["kernels"]
    assert llama == ["qkv_rope(1x777x4096 float16, 6144x4096 float16, 777x128 float16, 777x128 float16, 8)",
                     "attention_qkv(1x777x48x128 float16, 8, True)",
                     "gemm(777x4096 float16, 4096x4096 float16, True)",
                     "gemm_swiglu(777x4096 float16, 28672x4096 float16)",
                     "gemm(777x14336 float16, 4096x14336 float16, True)"]
    mamba = rows[("mamba2-1.3b", "pt-tvm")]["kernels"]
    assert [k.split("(")[0] for k in mamba] == ["gemm", "causal_conv1d", "chunk_state", "chunk_scan", "gemm"]
    assert mamba[0] == "gemm(777x2048 float16, 8512x2048 float16, True)" and "1x4x1x256x256 float16" in mamba[3]
    assert mamba[1].startswith("causal_conv1d(1x4352x777 float16 strides (6613824, 1, 8512), 4352x4 float16")
    assert bench_cli.main(["report", out, "--out-dir", str(tmp_path / "rep")]) == 0
    assert "**dry run**" in open(tmp_path / "rep" / "table.md").read()


def test_refusals_are_skips_and_other_failures_are_not():
    from benchmarks.layers.suite import _refusal
    from pt_tvm.templates import TemplateError

    refused = TemplateError("gemm: parameter 'block_N'=128 must divide N=8512")
    try:  # as torch.compile hands it back: wrapped, the original as its cause
        raise RuntimeError("compiled graph failed") from refused
    except RuntimeError as e:
        wrapped = e
    assert _refusal("pt-tvm+compile", wrapped) == ("pt-tvm refuses: TemplateError: gemm: parameter 'block_N'=128 "
                                                  "must divide N=8512")
    assert _refusal("mamba-ssm", ModuleNotFoundError("No module named 'mamba_ssm'")).startswith("not installed")
    assert _refusal("eager", ModuleNotFoundError("No module named 'x'")) is None
    assert _refusal("pt-tvm", RuntimeError("CUDA error: an illegal memory access")) is None


def test_layers_run_refuses_a_tracker(tmp_path, capsys):
    code = bench_cli.main(["run", "--suite", "layers", "--tracker", "h:1", "--target", "h100",
                           "--out", str(tmp_path / "x.json")])
    assert code == 2 and "runs on the local GPU only" in capsys.readouterr().err


def test_kernel_calls_follow_the_shapes():
    calls = kernel_calls("mamba2-1.3b", {"batch": 2, "seqlen": 4096, "dtype": "float16"})
    # the conv reads the in-projection's x B C columns where they lie: the warmer replays that view, not a copy
    assert str(calls[1]) == ("causal_conv1d(2x4352x4096 float16 strides (34865152, 1, 8512), 4352x4 float16, "
                             "4352 float16, 'silu')")
    view = calls[1].args[0].zeros("cpu")
    assert view.stride() == (34865152, 1, 8512) and not view.any()
    # and so do the SSD ops: B, x (then C, x) as columns of the convolved projection, [batch, seqlen, 4352] packed
    assert str(calls[2]) == ("chunk_state(2x4096x1x128 float16 strides (17825792, 4352, 128, 1), 2x4096x64x64 float16 "
                             "strides (17825792, 4352, 64, 1), 2x64x16x256 float32, 2x64x16x256 float32)")
    scan = next(str(c) for c in calls if c.op == "chunk_scan")
    assert "2x4096x64x64 float16 strides (17825792, 4352, 64, 1)" in scan, scan
    assert "2x4096x1x128 float16 strides (17825792, 4352, 128, 1)" in scan, scan


def test_warmer_replays_each_distinct_call_once_in_worker_processes():
    """The pool's plumbing on a CPU: every call of each config is accounted for, a config sharing calls with an
    earlier one waits for nothing new, and a call that fails (here: no CUDA) comes back as that call's error."""
    calls = kernel_calls("llama3-8b", {"batch": 1, "seqlen": 512, "dtype": "float16"})
    with Warmer([calls, calls[:2]], workers=2) as warmer:
        first, second = warmer.wait(0, timeout_s=300), warmer.wait(1, timeout_s=300)
    assert (first["warm_kernels"], first["warm_missing"], second["warm_kernels"]) == (5, 0, 2)
    assert sorted(first["warm_errors"]) == sorted(map(str, calls))
    assert all("CUDA" in e for e in first["warm_errors"].values()), first["warm_errors"]


def test_llama_flops_are_the_module_s_matmuls_with_causal_attention_halved():
    layer = LlamaLayer(device="meta", dtype=torch.float16)
    b, n, s = 2, 512, layer.shape
    with FlopCounterMode(display=False) as counter:
        layer(torch.empty(b, n, s.hidden, device="meta", dtype=torch.float16))
    full_attention = 4 * b * s.heads * n * n * s.head_dim
    assert layer_flops("llama3-8b", {"batch": b, "seqlen": n}) == counter.get_total_flops() - full_attention / 2


def test_mamba2_flops_count_the_ssd_as_the_templates_do():
    s = Mamba2Shape()
    b, n = 1, 4096
    proj = 2 * b * n * s.d_model * (s.d_in_proj + s.d_inner)
    state = 2 * b * n * s.nheads * s.headdim * s.d_state  # chunk_state; chunk_scan's inter-chunk GEMM alike
    causal = 2 * b * (n // s.chunk) * s.chunk * (s.chunk + 1) / 2 * (s.nheads * s.headdim + s.d_state)
    assert layer_flops("mamba2-1.3b", {"batch": b, "seqlen": n}) == pytest.approx(proj + 2 * state + causal)


# ---------------------------------------------------------------- the report over a synthetic run
# ms per (layer, config, system); None: skipped (refused); "bad": invalid
SYNTHETIC = {
    ("llama3-8b", 1, 512): {"eager": 10.0, "torch-compile": 5.0, "pt-tvm": 4.0, "pt-tvm+compile": 2.5},
    ("llama3-8b", 16, 4096): {"eager": 100.0, "torch-compile": 50.0, "torch-compile-max-autotune": 40.0,
                              "pt-tvm": 50.0, "pt-tvm+compile": 32.0},
    ("llama3-8b", 1, 777): {"eager": 12.0, "torch-compile": 6.0, "pt-tvm": None, "pt-tvm+compile": None},
    ("mamba2-1.3b", 1, 512): {"eager": 8.0, "torch-compile": 4.0, "mamba-ssm": 2.0, "pt-tvm": 2.5,
                              "pt-tvm+compile": "bad"},
    ("mamba2-1.3b", 4, 2048): {"eager": 40.0, "torch-compile": 20.0, "mamba-ssm": 10.0, "pt-tvm": 8.0,
                               "pt-tvm+compile": 5.0},
}


def _synthetic_layers_run() -> dict:
    rows = []
    for (layer, b, n), systems in SYNTHETIC.items():
        for system, ms in systems.items():
            row = {"suite": "layers", "kernel": layer, "config": {"batch": b, "seqlen": n, "dtype": "float16"},
                   "system": system, "ms": None, "tflops": None, "rel_err": None, "valid": False}
            if n == 777:
                row["note"] = "ragged"
            if ms is None:
                row.update(valid=None, skipped="pt-tvm refuses: TemplateError: gemm: parameter 'block_M'=128 "
                                               "must divide M=777")
            elif ms == "bad":
                row.update(rel_err=0.5, error="output 0 of 1: relative error 0.5 over the tolerance 0.005")
            else:
                row.update(valid=True, ms=ms, tflops=1000.0 / ms, rel_err=1e-3, timing="cuda-graph")
            rows.append(row)
    return {"header": {"suite": "layers", "device": "NVIDIA H100 80GB HBM3 (synthetic)", "command": "synthetic"},
            "rows": rows}


def test_report_ratios_against_peers_and_the_paper(tmp_path, capsys):
    run = _synthetic_layers_run()
    text = layers_report.markdown(run)
    # llama pt-tvm: over torch-compile 5/4, 50/50; max-autotune 40/50 only; eager 10/4, 100/50; best 5/4, 40/50
    assert "| llama3-8b | pt-tvm | 1.12x (2) | 0.80x (1) | 2.24x (2) | 1.00x (2) | 1.79x |" in text
    assert "| llama3-8b | pt-tvm+compile | 1.77x (2) | 1.25x (1) | 3.54x (2) | 1.58x (2) | 1.79x |" in text
    # mamba pt-tvm: over torch-compile 4/2.5, 20/8; best peer is mamba-ssm: 2/2.5, 10/8; +compile's first is invalid
    assert "| mamba2-1.3b | pt-tvm | 2.00x (2) | — | 4.00x (2) | 1.00x (2) | 1.92x |" in text
    assert "| mamba2-1.3b | pt-tvm+compile | 4.00x (1) | — | 8.00x (1) | 2.00x (1) | 1.92x |" in text
    assert "| fp16 b16 s4096 | 100.000 | 50.000 | 40.000 | 50.000 | 32.000 | torch-compile-max-autotune (40.000) |" \
        in text
    assert "| fp16 b1 s777 (ragged) | 12.000 | 6.000 | — | skipped | skipped | torch-compile (6.000) |" in text
    assert "must divide M=777" in text.split("## Skipped rows")[1]
    assert "relative error 0.5" in text.split("## Invalid rows")[1]
    by = {(r["kernel"], r["config"]["batch"], r["system"]): r for r in run["rows"]}
    group = {s: by[("mamba2-1.3b", 1, s)] for s in SYNTHETIC[("mamba2-1.3b", 1, 512)]}
    assert layers_report.best_peer_ms(group) == ("mamba-ssm", 2.0)
    assert layers_report.speedup(group, "pt-tvm+compile", None) is None  # invalid: no ratio
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run))
    assert bench_cli.main(["report", str(path), "--out-dir", str(tmp_path / "rep")]) == 0
    assert open(tmp_path / "rep" / "table.md").read() == text + "\n"
    assert sorted(os.listdir(tmp_path / "rep")) == ["llama3-8b_float16.png", "mamba2-1.3b_float16.png", "table.md"]


# ---------------------------------------------------------------- on a GPU
@pytest.mark.gpu
@pytest.mark.parametrize("layer", list(models.LAYERS))
def test_every_system_of_a_small_config_runs_checked(layer):
    """Each system at 1 x 512 against the float32 reference: the eager and compiled peers must pass; pt-tvm must
    pass too, or (Mamba2's in-projection, before the templates take any shape) be a refusal with its reason."""
    systems = ("eager", "torch-compile", "mamba-ssm", "pt-tvm", "pt-tvm+compile")
    cfg = Config("layers", layer, {"batch": 1, "seqlen": 512, "dtype": "float16"},
                 tuple(s for s in systems if s != "mamba-ssm" or layer == "mamba2-1.3b"))
    rows = {r["system"]: r for r in run_configs([cfg], hw.from_device(), rep_ms=50.0)}
    for system in ("eager", "torch-compile"):
        assert rows[system]["valid"] is True and rows[system]["ms"] > 0, rows[system]
        assert rows[system]["rel_err"] < LAYER_TOL["float16"] and rows[system]["prefill"] == ["nan"]
    if layer == "mamba2-1.3b":
        assert rows["mamba-ssm"]["valid"] is True or "not installed" in rows["mamba-ssm"]["skipped"], rows["mamba-ssm"]
    for system in ("pt-tvm", "pt-tvm+compile"):
        row = rows[system]
        if layer == "llama3-8b":
            assert row["valid"] is True and row["ms"] > 0, row
        else:
            assert row["valid"] is True or row.get("skipped", "").startswith("pt-tvm refuses"), row


if __name__ == "__main__":
    tilelang.testing.main()
