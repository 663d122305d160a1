"""Tests of the Mamba2 SSD chunk templates (``chunk_state``, ``chunk_scan``).

CPU: the float32 references against naive float64 loops over the SSD equations and against the
sequential SSM recurrence they chunk; extraction (GEMMs, the T.Parallel scaling, the loop-carried
accumulator); pt-tvm's search and the emission of its plan for H100 and A100; lowering with
TileLang's own schedule; parameter validation. GPU (``@pytest.mark.gpu``): compiled kernels against
the references.
"""
from __future__ import annotations

import itertools
import math
import re
import shutil

import pytest
import tilelang
import torch
from _util import RACY_LOOP, chunk_scan_plan, compiles_without_spills
from tilelang import tvm
from tvm import tirx

import pt_tvm
from pt_tvm.graph import DepKind, OpKind, Placement
from pt_tvm.measure import REL_TOL
from pt_tvm.plan import Style
from pt_tvm.search import SearchSpace, search
from pt_tvm.templates import TemplateError, get, names
from pt_tvm.verify import violations

SM90 = {"kind": "cuda", "arch": "sm_90a"}
SM80 = {"kind": "cuda", "arch": "sm_80"}

# Small problems that keep every tile of the tile space valid (headdim 128) and the lowering quick.
SMALL = {"batch": 1, "seqlen": 512, "heads": 4, "headdim": 128, "dstate": 128, "chunk": 256}
TINY = {"batch": 1, "seqlen": 32, "heads": 2, "headdim": 8, "dstate": 4, "chunk": 16}

SM80_RUNTIME_TRIP_COUNT_BUG = pytest.mark.xfail(
    strict=True,
    raises=TypeError,
    reason="TileLang 0.1.15: the cp.async pipeline of a loop with a runtime trip count emits "
    "ptx_wait_group(<non-constant>), which CUDA codegen rejects (chunk_scan walks its keys up to "
    "the causal diagonal, as causal FA does; plain num_stages >= 2 on sm_80)",
)


# ---------------------------------------------------------------- naive SSD (float64 loops)
def _ssd_inputs(batch: int, seqlen: int, heads: int, headdim: int, dstate: int, chunk: int, groups: int,
                dtype: torch.dtype = torch.float16, seed: int = 0) -> dict:
    """Everything the SSD layer sees: x, B, C in ``dtype``; per-step ``dt`` > 0 and ``A_h`` < 0;
    the chunked ``dt``/``dA_cumsum`` [b, h, c, l] in float32; states entering each chunk; D."""
    gen = torch.Generator().manual_seed(seed)
    nchunks = seqlen // chunk
    x = torch.randn(batch, seqlen, heads, headdim, generator=gen).to(dtype)
    B = torch.randn(batch, seqlen, groups, dstate, generator=gen).to(dtype)
    C = torch.randn(batch, seqlen, groups, dstate, generator=gen).to(dtype)
    dt_seq = 0.02 + 0.3 * torch.rand(batch, seqlen, heads, generator=gen)            # [b, t, h]
    A = -(0.5 + 2.0 * torch.rand(heads, generator=gen))                               # [h]
    dt = dt_seq.reshape(batch, nchunks, chunk, heads).permute(0, 3, 1, 2).contiguous()  # [b, h, c, l]
    dA_cumsum = torch.cumsum(dt * A[None, :, None, None], dim=-1)
    prev_states = torch.randn(batch, nchunks, heads, headdim, dstate, generator=gen).to(dtype)
    D = torch.randn(heads, generator=gen)
    return {"x": x, "B": B, "C": C, "dt_seq": dt_seq, "A": A, "dt": dt, "dA_cumsum": dA_cumsum,
            "prev_states": prev_states, "D": D}


def _naive_chunk_state(B, x, dt, dA_cumsum) -> torch.Tensor:
    """states[b,c,h] = sum_l dt[l] exp(dA_cs[L-1] - dA_cs[l]) x[t] B[t]^T, one position at a time."""
    batch, _, heads, headdim = x.shape
    groups, dstate = B.shape[2], B.shape[3]
    _, _, nchunks, chunk = dt.shape
    out = torch.zeros(batch, nchunks, heads, headdim, dstate, dtype=torch.float64)
    for b in range(batch):
        for c in range(nchunks):
            for h in range(heads):
                g = h // (heads // groups)
                last = float(dA_cumsum[b, h, c, chunk - 1])
                for pos in range(chunk):
                    t = c * chunk + pos
                    w = float(dt[b, h, c, pos]) * math.exp(last - float(dA_cumsum[b, h, c, pos]))
                    out[b, c, h] += w * torch.outer(x[b, t, h].double(), B[b, t, g].double())
    return out


def _naive_chunk_scan(B, C, x, dt, dA_cumsum, prev_states, D=None) -> torch.Tensor:
    """y[t] = sum_{s<=t in chunk} (C_t . B_s) exp(dA_cs[t] - dA_cs[s]) dt[s] x[s]
    + exp(dA_cs[t]) prev_states C_t (+ D x[t]), from B and C (not cb), one pair at a time."""
    batch, seqlen, heads, headdim = x.shape
    groups = C.shape[2]
    _, _, nchunks, chunk = dt.shape
    y = torch.zeros(batch, seqlen, heads, headdim, dtype=torch.float64)
    for b in range(batch):
        for c in range(nchunks):
            for h in range(heads):
                g = h // (heads // groups)
                for pos in range(chunk):
                    t = c * chunk + pos
                    Ct = C[b, t, g].double()
                    acc = math.exp(float(dA_cumsum[b, h, c, pos])) * (prev_states[b, c, h].double() @ Ct)
                    for s in range(pos + 1):
                        u = c * chunk + s
                        w = float(Ct @ B[b, u, g].double()) * math.exp(
                            float(dA_cumsum[b, h, c, pos]) - float(dA_cumsum[b, h, c, s])) * float(dt[b, h, c, s])
                        acc = acc + w * x[b, u, h].double()
                    if D is not None:
                        acc = acc + float(D[h]) * x[b, t, h].double()
                    y[b, t, h] = acc
    return y


def _naive_cb(C, B, chunk: int) -> torch.Tensor:
    """cb[b,c,g,l,s] = C[c*L+l] . B[c*L+s] in float64."""
    batch, seqlen, groups, _ = C.shape
    nchunks = seqlen // chunk
    cb = torch.zeros(batch, nchunks, groups, chunk, chunk, dtype=torch.float64)
    for b in range(batch):
        for c in range(nchunks):
            for g in range(groups):
                for pos in range(chunk):
                    for s in range(chunk):
                        cb[b, c, g, pos, s] = C[b, c * chunk + pos, g].double() @ B[b, c * chunk + s, g].double()
    return cb


def _sequential_ssm(x, B, C, dt_seq, A, D) -> torch.Tensor:
    """The SSM the chunks compute: h_t = exp(dt_t A) h_{t-1} + dt_t x_t B_t^T, y_t = h_t C_t + D x_t."""
    batch, seqlen, heads, headdim = x.shape
    groups, dstate = B.shape[2], B.shape[3]
    y = torch.zeros(batch, seqlen, heads, headdim, dtype=torch.float64)
    for b in range(batch):
        for h in range(heads):
            g = h // (heads // groups)
            state = torch.zeros(headdim, dstate, dtype=torch.float64)
            for t in range(seqlen):
                d = float(dt_seq[b, t, h])
                state = math.exp(d * float(A[h])) * state + d * torch.outer(x[b, t, h].double(), B[b, t, g].double())
                y[b, t, h] = state @ C[b, t, g].double() + float(D[h]) * x[b, t, h].double()
    return y


# ---------------------------------------------------------------- references
@pytest.mark.parametrize("groups", [1, 2])
@pytest.mark.parametrize("batch", [1, 2])
def test_chunk_state_reference(groups: int, batch: int) -> None:
    shape = {**TINY, "batch": batch, "groups": groups}
    inp = _ssd_inputs(**shape)
    ref = get("chunk_state").reference(inp["B"], inp["x"], inp["dt"], inp["dA_cumsum"], **shape)
    assert ref.dtype == torch.float32 and ref.shape == (batch, 2, 2, 8, 4)
    naive = _naive_chunk_state(inp["B"], inp["x"], inp["dt"], inp["dA_cumsum"])
    torch.testing.assert_close(ref.double(), naive, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("has_d", [True, False])
@pytest.mark.parametrize("groups", [1, 2])
def test_chunk_scan_reference(groups: int, has_d: bool) -> None:
    shape = {**TINY, "groups": groups, "has_d": has_d}
    inp = _ssd_inputs(**{k: v for k, v in shape.items() if k != "has_d"})
    cb = _naive_cb(inp["C"], inp["B"], TINY["chunk"]).float()
    args = (cb, inp["x"], inp["dt"], inp["dA_cumsum"], inp["C"], inp["prev_states"])
    D = inp["D"] if has_d else None
    ref = get("chunk_scan").reference(*args, *((D,) if has_d else ()), **shape)
    assert ref.dtype == torch.float32 and ref.shape == inp["x"].shape
    naive = _naive_chunk_scan(inp["B"], inp["C"], inp["x"], inp["dt"], inp["dA_cumsum"], inp["prev_states"], D)
    torch.testing.assert_close(ref.double(), naive, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("groups", [1, 2])
def test_chunks_compose_to_the_sequential_ssm(groups: int) -> None:
    """chunk_state -> state passing (prev[c] = exp(dA_cs[c-1, last]) prev[c-1] + states[c-1]) ->
    chunk_scan reproduces the recurrence over the whole sequence (3 chunks)."""
    shape = {**TINY, "seqlen": 48, "groups": groups}
    inp = _ssd_inputs(**shape)
    states = get("chunk_state").reference(inp["B"], inp["x"], inp["dt"], inp["dA_cumsum"], **shape)
    prev = torch.zeros_like(states)
    for c in range(1, states.shape[1]):
        decay = torch.exp(inp["dA_cumsum"][:, :, c - 1, -1])[:, :, None, None]       # [b, h, 1, 1]
        prev[:, c] = decay * prev[:, c - 1] + states[:, c - 1]
    cb = _naive_cb(inp["C"], inp["B"], shape["chunk"]).float()
    y = get("chunk_scan").reference(cb, inp["x"], inp["dt"], inp["dA_cumsum"], inp["C"], prev, inp["D"],
                                    **shape, has_d=True)
    want = _sequential_ssm(inp["x"], inp["B"], inp["C"], inp["dt_seq"], inp["A"], inp["D"])
    torch.testing.assert_close(y.double(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_make_inputs(dtype: str) -> None:
    """Argument order, shapes and dtypes of mamba_ssm's _chunk_state_fwd / _chunk_scan_fwd."""
    problem = {**get("chunk_state").problem, **TINY, "groups": 2, "dtype": dtype}
    gen = torch.Generator().manual_seed(0)
    B, x, dt, dA_cumsum = get("chunk_state").make_inputs(problem, "cpu", gen)
    dt_ = getattr(torch, dtype)
    assert B.shape == (1, 32, 2, 4) and B.dtype == dt_ and x.shape == (1, 32, 2, 8) and x.dtype == dt_
    assert dt.shape == dA_cumsum.shape == (1, 2, 2, 16) and dt.dtype == dA_cumsum.dtype == torch.float32
    assert (dt > 0).all() and (dA_cumsum.diff(dim=-1) <= 0).all() and (dA_cumsum < 0).all()
    for has_d in (True, False):
        inputs = get("chunk_scan").make_inputs({**problem, "has_d": has_d}, "cpu", gen)
        assert len(inputs) == (7 if has_d else 6)
        cb, x, dt, dA_cumsum, C, prev_states = inputs[:6]
        assert cb.shape == (1, 2, 2, 16, 16) and cb.dtype == torch.float32
        assert C.shape == (1, 32, 2, 4) and C.dtype == dt_ and prev_states.shape == (1, 2, 2, 8, 4)
        assert prev_states.dtype == dt_
        if has_d:
            assert inputs[6].shape == (2,) and inputs[6].dtype == torch.float32
        assert get("chunk_scan").reference(*inputs, **problem, has_d=has_d).shape == x.shape


def test_flops() -> None:
    p = {**get("chunk_scan").problem}
    b, L, h, hd, n, chunk = p["batch"], p["seqlen"], p["heads"], p["headdim"], p["dstate"], p["chunk"]
    assert get("chunk_state").flops(p) == 2 * b * L * h * hd * n
    causal_pairs = chunk * (chunk + 1) / 2
    assert get("chunk_scan").flops(p) == 2 * b * L * h * hd * n + 2 * b * (L // chunk) * h * hd * causal_pairs


# ---------------------------------------------------------------- the kernels as written
def _pipelined_loops(func) -> list:
    loops: list = []
    tirx.stmt_functor.post_order_visit(
        func.body, lambda n: loops.append(n) if isinstance(n, tirx.For) and "num_stages" in n.annotations else None)
    return loops


@pytest.mark.parametrize("name", ["chunk_state", "chunk_scan"])
def test_registry_and_no_hand_schedule(name: str) -> None:
    assert name in names() and get(name).doc
    (loop,) = _pipelined_loops(get(name).build(num_stages=3, **SMALL))
    assert set(loop.annotations) == {"num_stages"} and int(loop.annotations["num_stages"]) == 3


@pytest.mark.parametrize("name", ["chunk_state", "chunk_scan"])
def test_no_lets_in_kernel_body(name: str) -> None:
    """Indices are inline expressions: pt-tvm's plan rewriting drops let statements of the kernel body."""
    lets: list = []
    tirx.stmt_functor.post_order_visit(
        get(name).build(**SMALL, groups=2).body, lambda n: lets.append(n) if isinstance(n, tirx.Bind) else None)
    assert not [s for s in lets if s.var.name not in ("tx", "ty", "tz")]


def _lower(name: str, target: dict, num_stages: int = 2, **overrides) -> str:
    t = get(name)
    func = t.build(num_stages=num_stages, **{**SMALL, **overrides})
    tgt = tvm.target.Target(target)
    with tilelang.transform.PassContext(config=dict(t.pass_configs)), tgt:
        return tilelang.lower(func, target=tgt).kernel_source


@pytest.mark.parametrize(
    "name, target, num_stages, overrides",
    [
        pytest.param("chunk_state", SM90, 2, {}, id="state-sm90"),
        pytest.param("chunk_state", SM90, 2, {"dtype": "bfloat16", "groups": 2, "block_M": 128},
                     id="state-sm90-bf16-g2"),
        pytest.param("chunk_state", SM80, 2, {}, id="state-sm80"),
        pytest.param("chunk_scan", SM90, 2, {}, id="scan-sm90"),
        pytest.param("chunk_scan", SM90, 2, {"has_d": False, "groups": 2, "dtype": "bfloat16"},
                     id="scan-sm90-noD-g2-bf16"),
        pytest.param("chunk_scan", SM80, 1, {}, id="scan-sm80-1stage"),
        pytest.param("chunk_scan", SM80, 2, {}, id="scan-sm80-2stage", marks=SM80_RUNTIME_TRIP_COUNT_BUG),
    ],
)
def test_lowers_with_tilelang_schedule(name: str, target: dict, num_stages: int, overrides: dict) -> None:
    src = _lower(name, target, num_stages, **overrides)
    assert "__global__" in src
    if target is SM90:
        assert "tma_load" in src and "wgmma" in src


@pytest.mark.parametrize("num_stages, overrides", [(2, {}), (3, {}), (2, {"block_M": 128}), (3, {"block_M": 128})])
def test_tilelang_schedule_of_chunk_scan_reads_row_decays_after_their_load(num_stages: int, overrides: dict) -> None:
    """TileLang's own Hopper schedule makes the copy of ``dA_m_shared`` (read in the loop) a one-shot TMA load
    whose only wait sits in the loop (``k == 0``); every read of the buffer must come after that wait. A read
    before the loop raced the load and made the output non-finite on the GPU (docs/NOTES-parity.md)."""
    src = _lower("chunk_scan", SM90, num_stages, **overrides)
    load = re.search(r"tma_load\(\(&\(\(\(float\*\)dA_m_shared\)\[0\]\)\), [^;]*?(mbarrier\[\d+\]), \d+\);", src)
    assert load, "the rows' dA_cumsum is no longer a TMA load: check what orders its reads"
    wait = src.index(f"{load.group(1)}.wait(")
    reads = [r.start() for r in re.finditer(r"(?<!&\()\(\(float\*\)dA_m_shared\)\[", src)]
    assert reads and min(reads) > wait


# ---------------------------------------------------------------- pt-tvm: extraction, search, emission
def _loop_gemm(graph):
    (gemm,) = [t for t in graph.loop_stasks if t.op == OpKind.GEMM]
    return gemm


def test_extract_chunk_state() -> None:
    graph = pt_tvm.extract(get("chunk_state").build(**SMALL), "h100")
    assert graph.loop.trip_count == 256 / 64
    gemm = _loop_gemm(graph)
    assert [t.op for t in graph.stasks].count(OpKind.GEMM) == 1
    assert {a.buffer for a in gemm.reads} >= {"xw", "B_shared"} and {a.buffer for a in gemm.writes} == {"acc"}
    scale = {t.writes[0].buffer: t for t in graph.loop_stasks if t.op == OpKind.ELEMENTWISE}
    assert set(scale) == {"weight", "xw"} and scale["weight"].sfu_ops > 0       # one exp per position
    loads = {t.writes[0].buffer for t in graph.loop_stasks if t.op == OpKind.COPY}
    assert loads == {"x_shared", "B_shared", "dt_shared", "dA_shared"}
    assert graph.find_edges(src=gemm.id, dst=gemm.id, kind=DepKind.RAW, buffer="acc", distance=1)
    assert graph.find_edges(src=scale["xw"].id, dst=gemm.id, kind=DepKind.RAW, buffer="xw", distance=0)
    assert graph.find_edges(src=scale["weight"].id, dst=scale["xw"].id, kind=DepKind.RAW, distance=0)


@pytest.mark.parametrize("has_d", [True, False])
def test_extract_chunk_scan(has_d: bool) -> None:
    graph = pt_tvm.extract(get("chunk_scan").build(**SMALL, has_d=has_d), "h100")
    assert graph.loop.trip_count == (1 + 2 + 3 + 4) / 4                       # up to the causal diagonal
    gemm = _loop_gemm(graph)
    (inter,) = graph.placed(Placement.PROLOGUE)[3:4]
    assert inter.op == OpKind.GEMM and {a.buffer for a in inter.reads} >= {"C_shared", "S_shared"}
    assert {a.buffer for a in gemm.reads} >= {"scores", "x_shared", "acc"}
    (scores,) = [t for t in graph.loop_stasks if t.op == OpKind.ELEMENTWISE]
    assert scores.writes[0].buffer == "scores" and scores.sfu_ops > 0
    assert {a.buffer for a in scores.reads} == {"cb_shared", "dt_k_shared", "dA_m_shared", "dA_k_shared"}
    assert graph.find_edges(src=gemm.id, dst=gemm.id, kind=DepKind.RAW, buffer="acc", distance=1)
    assert graph.find_edges(src=scores.id, dst=gemm.id, kind=DepKind.RAW, buffer="scores", distance=0)
    epi = graph.placed(Placement.EPILOGUE)
    d_term = [t for t in epi if t.op == OpKind.ELEMENTWISE]
    assert len(d_term) == (1 if has_d else 0)
    if has_d:
        assert "D" in {a.buffer for a in d_term[0].reads}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_chunk_scan_reads_cb_in_the_input_dtype(dtype: str) -> None:
    """``cb_dtype`` the input dtype: the kernel takes ``cb`` as that type, its key step loads half the ``cb`` bytes
    (a float32 tile otherwise) and the model prices the kernel faster; the scores are float32 arithmetic either way."""
    vdev = pt_tvm.hw.get("h200")
    graphs = {c: pt_tvm.extract(get("chunk_scan").build(**{**SMALL, "dtype": dtype, "cb_dtype": c}), vdev)
              for c in ("float32", dtype)}
    cb = {c: next(t for t in g.loop_stasks if t.op == OpKind.COPY and t.writes[0].buffer == "cb_shared")
          for c, g in graphs.items()}
    assert cb[dtype].bytes * 2 == cb["float32"].bytes
    src = _lower("chunk_scan", SM90, 2, dtype=dtype, cb_dtype=dtype)
    ctype = {"float16": "half_t", "bfloat16": "bfloat16_t"}[dtype]
    assert re.search(rf"tma_load\(cb_desc, .*\(\({ctype}\*\)cb_shared\)", src)
    assert re.search(rf"\(float\)\(\({ctype}\*\)cb_shared\)\[", src)  # the scores in float32
    space = SearchSpace(consumer_wgs=(1,), random_orders=0, row_split=False, carry_gemms=False)
    price = {c: search([g], vdev, space=space).best.seconds for c, g in graphs.items()}
    assert price[dtype] < price["float32"]
    inputs = get("chunk_scan").make_inputs({**get("chunk_scan").problem, **SMALL, "dtype": dtype, "cb_dtype": dtype},
                                           "cpu", torch.Generator().manual_seed(0))
    assert inputs[0].dtype == getattr(torch, dtype)


def test_extract_chunk_scan_with_heads_packed() -> None:
    """Two heads of one group a block: one ``cb`` load a key block for both, each head its own decays, scores,
    ``x`` tile and GEMM (accumulating its own ``acc``), one ``C`` tile before the loop for both."""
    graph = pt_tvm.extract(get("chunk_scan").build(**{**SMALL, "block_H": 2}), "h100")
    loads = [t.writes[0].buffer for t in graph.loop_stasks if t.op == OpKind.COPY]
    assert sorted(loads) == sorted(["cb_shared", *(f"{b}_{j}" for j in (0, 1)
                                                   for b in ("dA_k_shared", "dt_k_shared", "x_shared"))])
    gemms = [t for t in graph.loop_stasks if t.op == OpKind.GEMM]
    scores = [t for t in graph.loop_stasks if t.op == OpKind.ELEMENTWISE]
    for j, (gemm, score) in enumerate(zip(gemms, scores)):
        assert {a.buffer for a in score.reads} == {"cb_shared", f"dt_k_shared_{j}", f"dA_m_shared_{j}",
                                                   f"dA_k_shared_{j}"}
        assert {a.buffer for a in gemm.reads} >= {f"scores_{j}", f"x_shared_{j}", f"acc_{j}"}
        assert graph.find_edges(src=gemm.id, dst=gemm.id, kind=DepKind.RAW, buffer=f"acc_{j}", distance=1)
    prologue = [t.writes[0].buffer for t in graph.placed(Placement.PROLOGUE) if t.op == OpKind.COPY]
    assert prologue.count("C_shared") == 1 and {"S_shared_0", "S_shared_1"} <= set(prologue)
    one_head = pt_tvm.extract(get("chunk_scan").build(**SMALL), "h100")
    assert math.prod(graph.grid.values()) * 2 == math.prod(one_head.grid.values())


def test_extract_chunk_state_with_heads_packed() -> None:
    """Two heads of one group a block: one ``B`` load a step for both, each head its own ``x``, ``dt`` and
    ``dA_cumsum`` tiles, weights and GEMM into its own ``acc`` (a loop-carried RAW each), their state tiles stored
    one after the other through one staging tile; half the blocks of one head a block."""
    graph = pt_tvm.extract(get("chunk_state").build(**{**SMALL, "block_H": 2}), "h100")
    loads = [t.writes[0].buffer for t in graph.loop_stasks if t.op == OpKind.COPY]
    assert sorted(loads) == sorted(["B_shared", *(f"{b}_{j}" for j in (0, 1)
                                                  for b in ("x_shared", "dt_shared", "dA_shared"))])
    for j, gemm in enumerate(t for t in graph.loop_stasks if t.op == OpKind.GEMM):
        assert {a.buffer for a in gemm.reads} == {f"xw_{j}", "B_shared", f"acc_{j}"}
        assert graph.find_edges(src=gemm.id, dst=gemm.id, kind=DepKind.RAW, buffer=f"acc_{j}", distance=1)
    stores = [t for t in graph.placed(Placement.EPILOGUE) if t.writes[0].buffer == "states"]
    assert len(stores) == 2 and stores[0].writes[0].offsets != stores[1].writes[0].offsets
    # the second head's staging waits for the first head's store to have read the tile
    staged = [t for t in graph.placed(Placement.EPILOGUE) if t.writes[0].buffer == "acc_shared"]
    assert graph.find_edges(src=stores[0].id, dst=staged[1].id, kind=DepKind.WAR, buffer="acc_shared")
    one_head = pt_tvm.extract(get("chunk_state").build(**SMALL), "h100")
    assert math.prod(graph.grid.values()) * 2 == math.prod(one_head.grid.values())


def test_reader_stages_are_the_stage_choices_that_plan() -> None:
    """The search's reader-stage choices give exactly the plans a choice per loaded buffer gives (chunk_scan
    with two heads a block: 7 loaded buffers, 128 choices per buffer, 8 per class of pipelines read together,
    some of them admitting no order)."""
    from pt_tvm import hw
    from pt_tvm.space import Priority, reader_stages, warp_specialized

    vdev = hw.get("h100")
    graph = pt_tvm.extract(get("chunk_scan").build(**{**SMALL, "block_H": 2}), vdev)
    loaded = sorted({t.writes[0].buffer for t in graph.loop_stasks if t.op == OpKind.COPY})

    def plans(choices):
        return {p.steps for ps in choices if (p := warp_specialized(
            graph, vdev, consumer_wgs=1, depth=2, pipeline_stage=ps, priority=Priority.PROGRAM)) is not None}

    every = [dict(zip(loaded, st)) for st in itertools.product((0, 1), repeat=len(loaded))]
    choices = reader_stages(graph, 1)
    assert len(every) == 128 and len(choices) == 8
    assert plans(choices) == plans(every) and len(plans(choices)) > 1


@pytest.mark.parametrize("chip", ["h100", "a100"])
@pytest.mark.parametrize("name", ["chunk_state", "chunk_scan"])
def test_search_and_emit(name: str, chip: str, tmp_path) -> None:
    """The two-level search finds a plan over the tile space; its kernel lowers (no GPU needed) and,
    where nvcc is installed, compiles."""
    from pt_tvm.compiler import lower, schedule_template

    t = get(name)
    params = {"seqlen": 1024, "heads": 8}
    result, problem, build = schedule_template(name, chip, params=params)
    assert problem["seqlen"] == 1024 and result.best.seconds > 0
    tile = dict(result.best.plan.tile)
    t.resolve(**problem, **tile)  # the winning tile is one the template accepts
    src = lower(build(), chip, plan=result.best.plan, pass_configs=t.pass_configs).kernel_source
    assert "__global__" in src
    if chip == "h100":  # a warp-specialized plan streams with TMA; a software-pipelined one does without
        assert "wgmma" in src
        assert ("tma_load" in src) == (result.best.plan.style == Style.WARP_SPECIALIZED)
    if shutil.which("nvcc") is not None:  # the emitted CUDA compiles, without register spills
        compiles_without_spills(src, tmp_path, arch={"h100": "90a", "a100": "80"}[chip])


@pytest.mark.parametrize("name, view", [("chunk_state", "B_strides"), ("chunk_scan", "C_strides")])
def test_views_of_a_projection_are_priced_and_read_where_they_lie(name: str, view: str) -> None:
    """``x`` and ``B``/``C`` as columns of Mamba2's 4352-wide convolved in-projection: the search prices the same
    bytes as packed tensors (the same pick at the same price) and the kernel loads their rows 4352 apart, 16
    bytes a load."""
    from pt_tvm.compiler import lower, schedule_template

    L, width = 512, 4352
    params = {"batch": 2, "seqlen": L, "heads": 8}
    views = {"x_strides": (L * width, width, 64), view: (L * width, width, 128)}
    packed, _, _ = schedule_template(name, "h100", params=params)
    result, problem, build = schedule_template(name, "h100", params={**params, **views})
    assert problem["x_strides"] == views["x_strides"] and problem[view] == views[view]
    assert result.best.plan.tile == packed.best.plan.tile and result.best.seconds == packed.best.seconds
    src = lower(build(), "h100", plan=result.best.plan, pass_configs=get(name).pass_configs).kernel_source
    loads = [line for line in src.splitlines() if "cp_async_gs<16>" in line or "*(uint4*)" in line]
    assert loads and all("* 4352)" in line for line in loads if "(x[" in line or "(x +" in line)
    assert any("* 4352)" in line for line in loads if "(x[" in line or "(x +" in line)


def test_cp_async_reader_ahead_of_split_loads_is_rejected() -> None:
    """The measured race is an emission violation; the same reader ahead of adjacent loads (one cp.async
    group, emitted with ``cp_async_wait<0>``) and program orders are not."""
    from pt_tvm import hw

    vdev = hw.get("h200")
    plan, graph = chunk_scan_plan(RACY_LOOP)
    found = [str(v) for v in violations(plan, graph, vdev)]
    assert len(found) == 1 and "[emission] par_1 comes ahead of its cp.async loads" in found[0], found
    for loop, stages in ((("par_1", "gemm_1", "copy_6", "copy_5", "copy_4", "copy_3"), 2),
                         (("copy_3", "copy_4", "copy_5", "par_1", "copy_6", "gemm_1"), 2),
                         (("copy_3", "copy_4", "copy_5", "copy_6", "par_1", "gemm_1"), 1)):
        plan, graph = chunk_scan_plan(loop, stages)
        assert not violations(plan, graph, vdev), (loop, stages)


def test_search_emits_no_racy_cp_async_order() -> None:
    """No plan the search ranks for chunk_scan on Hopper has the rejected order."""
    from pt_tvm import hw
    from pt_tvm.compiler import schedule_template

    result, _, _ = schedule_template("chunk_scan", "h200", params={"seqlen": 1024})
    vdev = hw.get("h200")
    assert result.ranked and not any(
        v.rule == "emission" for c in result.ranked for v in violations(c.plan, c.graph, vdev))


# ---------------------------------------------------------------- parameters
@pytest.mark.parametrize(
    "name, overrides, param",
    [
        ("chunk_state", {"dtype": "float32"}, "dtype"),
        ("chunk_scan", {"dtype": "float8"}, "dtype"),
        ("chunk_state", {"seqlen": 0}, "seqlen"),
        ("chunk_scan", {"groups": 3}, "groups"),
        ("chunk_state", {"chunk": 48}, "block_K"),
        ("chunk_scan", {"chunk": 32, "block_M": 64, "block_K": 32}, "block_M"),
        ("chunk_state", {"block_K": 48}, "block_K"),
        ("chunk_scan", {"block_M": 96}, "block_M"),
        ("chunk_scan", {"chunk": 64, "seqlen": 4096, "block_K": 128}, "block_K"),
        ("chunk_scan", {"dstate": 512}, "dstate"),
        ("chunk_scan", {"dstate": 72}, "dstate"),
        ("chunk_scan", {"has_d": "maybe"}, "has_d"),
        ("chunk_scan", {"has_d": 1}, "has_d"),
        ("chunk_state", {"threads": 96}, "threads"),
        ("chunk_state", {"batch": 0}, "batch"),
        ("chunk_scan", {"heads": True}, "heads"),
        ("chunk_state", {"block_N": 40, "dstate": 40}, "block_N"),
        ("chunk_state", {"no_such": 1}, "no_such"),
        ("chunk_scan", {"block_H": 3}, "block_H"),
        ("chunk_scan", {"block_H": 0}, "block_H"),
        ("chunk_scan", {"groups": 8, "heads": 16, "block_H": 4}, "block_H"),
        ("chunk_state", {"block_H": 3}, "block_H"),
        ("chunk_state", {"groups": 8, "heads": 16, "block_H": 4}, "block_H"),
        ("chunk_scan", {"cb_dtype": "bfloat16"}, "cb_dtype"),
        ("chunk_scan", {"cb_dtype": "float64"}, "cb_dtype"),
        ("chunk_state", {"x_strides": (4096, 64)}, "x_strides"),
        ("chunk_state", {"B_strides": (4352, 4352, 130)}, "B_strides"),
        ("chunk_scan", {"C_strides": [0, 4352, 128]}, "C_strides"),
        ("chunk_scan", {"x_strides": "packed"}, "x_strides"),
    ],
)
def test_bad_parameters_raise(name: str, overrides: dict, param: str) -> None:
    with pytest.raises(TemplateError, match=f"'{param}'"):
        get(name).resolve(**overrides)


def test_defaults_are_mamba2_1p3b() -> None:
    for name in ("chunk_state", "chunk_scan"):
        p = get(name).problem
        assert (p["heads"], p["headdim"], p["dstate"], p["chunk"], p["groups"], p["dtype"]) == \
            (64, 64, 128, 256, 1, "float16")
        get(name).resolve()


# ---------------------------------------------------------------- GPU
GPU_CASES = [
    ("chunk_state", {}),
    ("chunk_state", {"dtype": "bfloat16"}),
    ("chunk_state", {"groups": 8, "batch": 2, "seqlen": 2048}),
    ("chunk_state", {"block_N": 64, "block_K": 128}),
    ("chunk_state", {"block_H": 2, "groups": 8, "batch": 2, "seqlen": 2048}),
    ("chunk_scan", {}),
    ("chunk_scan", {"has_d": False}),
    ("chunk_scan", {"dtype": "bfloat16"}),
    ("chunk_scan", {"groups": 8, "batch": 2, "seqlen": 2048}),
    ("chunk_scan", {"block_M": 128, "block_K": 64}),
    ("chunk_scan", {"block_M": 64, "block_K": 128}),
    ("chunk_scan", {"block_H": 2}),
    ("chunk_scan", {"block_H": 4, "groups": 8, "batch": 2, "seqlen": 2048, "block_K": 32}),
    ("chunk_scan", {"cb_dtype": "float16"}),
    ("chunk_scan", {"cb_dtype": "bfloat16", "dtype": "bfloat16", "seqlen": 1000}),
]


def _rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    out = out.float()
    assert out.shape == ref.shape and torch.isfinite(out).all()
    return (torch.linalg.vector_norm(out - ref) / torch.linalg.vector_norm(ref)).item()


def _check_on_gpu(label: str, name: str, problem: dict, kernel, zero_states: bool = False) -> None:
    t = get(name)
    inputs = list(t.make_inputs(problem, "cuda", torch.Generator(device="cuda").manual_seed(0)))
    if zero_states:  # the intra-chunk term alone
        inputs[5] = torch.zeros_like(inputs[5])
    out = kernel(*inputs)
    err = _rel_err(out, t.reference(*inputs, **problem))
    print(f"REL_ERR {label} {err:.3e}")
    assert err < REL_TOL[problem["dtype"]], f"{label}: relative error {err:.3e}"


@pytest.mark.gpu
@pytest.mark.parametrize("name, overrides", GPU_CASES)
def test_gpu_tilelang_schedule(name: str, overrides: dict) -> None:
    """TileLang's own schedule (T.Pipelined num_stages=2) against the float32 reference."""
    t = get(name)
    problem, tile = t.resolve(**overrides)
    kernel = tilelang.compile(t.builder(**problem, **tile, num_stages=2), out_idx=list(t.out_idx), target="cuda",
                              pass_configs=dict(t.pass_configs))
    label = f"{name}_{'_'.join(f'{k}{v}' for k, v in overrides.items()) or 'default'}"
    _check_on_gpu(label, name, problem, kernel)
    if name == "chunk_scan":
        _check_on_gpu(label + "_zero_states", name, problem, kernel, zero_states=True)


@pytest.mark.gpu
@pytest.mark.parametrize("name, params", [("chunk_state", {}), ("chunk_scan", {}),
                                          ("chunk_state", {"block_H": 2}),
                                          ("chunk_scan", {"block_H": 2, "block_M": 64, "block_K": 32}),
                                          ("chunk_scan", {"block_H": 4, "block_M": 64, "block_N": 64, "block_K": 32,
                                                          "seqlen": 1024}),
                                          ("chunk_scan", {"cb_dtype": "float16"})])
def test_gpu_pt_tvm_plan(name: str, params: dict) -> None:
    """pt-tvm's searched plan for the local GPU computes the same result (heads packed a block too)."""
    from pt_tvm import hw
    from pt_tvm.compiler import schedule_template

    t = get(name)
    vdev = hw.from_device()
    result, problem, build = schedule_template(name, vdev, params=params)
    kernel = t.compile(build(), vdev.tvm_target())  # the plan's own pass configs, as the benchmarks compile it
    _check_on_gpu(f"{name}_pt_tvm[{result.best.note}]", name, problem, kernel)


@pytest.mark.parametrize("name", ["chunk_state", "chunk_scan"])
def test_grid_fits_cuda_limits_at_batch_64(name: str) -> None:
    """blockIdx.y/z stop at 65535: Mamba2-1.3B at batch 64, 16 chunks, 64 heads must still launch."""
    import pt_tvm

    graph = pt_tvm.extract(get(name).build(batch=64, seqlen=4096), "h100")
    x, y, z = graph.grid.values()
    assert y <= 65535 and z <= 65535 and x < 2**31


def test_ragged_chunk_scan_clamps_its_rows_instead_of_guarding_each_load() -> None:
    """At a length that is no chunk multiple, the rows of ``C`` and ``x`` loaded before and after the loop past the
    sequence's end read its last row (a branch a vector load made the warps wait on each, 6% slower at 4000
    tokens on one H200); the extraction reads those nests as the copies they are (LSU, the tile's bytes and
    region), so the model prices the ragged length as the tile multiple, as they measured (389.7 against 388.1 us),
    and such a kernel gets no producer warp (its 32 threads would issue those loads alone)."""
    vdev = pt_tvm.hw.get("h200")
    rag, whole = (get("chunk_scan").build(**{**SMALL, "seqlen": n}) for n in (SMALL["seqlen"] - 56, SMALL["seqlen"]))
    graphs = [pt_tvm.extract(f, vdev) for f in (rag, whole)]
    loads = [{t.writes[0].buffer: t for t in g.stasks if t.op == OpKind.COPY and t.placement != Placement.LOOP
              and t.reads[0].scope == "global"} for g in graphs]
    for name, region in (("C_shared", (1, 64, 1, SMALL["dstate"])), ("out_shared", (1, 64, 1, 64))):
        assert loads[0][name].seu.value == "lsu" and loads[0][name].reads[0].extents == region
        assert loads[0][name].bytes == loads[1][name].bytes
    assert not any("min" in str(t.reads[0].offsets) for t in loads[1].values())  # the tile multiple: plain copies
    prices = [pt_tvm.schedule(f, vdev).best for f in (rag, whole)]
    assert prices[0].seconds == pytest.approx(prices[1].seconds, rel=1e-3)
    assert prices[0].plan.style == Style.SOFTWARE_PIPELINE
    source = pt_tvm.lower(rag, vdev, plan=prices[0].plan).kernel_source
    assert "min(" in source and not re.search(r"condval\w* = \*\(uint4\*\)\((C|x) \+", source)
