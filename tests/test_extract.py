"""CPU tests of sTask-graph extraction on the real templates: the tile ops it finds, the sEUs it
maps them to, the dependences (with loop distances) between them, and the graph's serializations."""
from __future__ import annotations

import copy
import dataclasses
import json
import re

import pytest
from tilelang import tvm

import pt_tvm
import pt_tvm.passes
from pt_tvm import hw, templates
from pt_tvm.graph import DepKind, OpKind, Placement, STask, STaskGraph
from pt_tvm.hw import SEUKind

FA_SMALL = {"batch": 1, "heads": 2, "kv_heads": 2, "seq_len": 256, "dim": 64}
GEMM_SMALL = {"M": 256, "N": 256, "K": 256}


def _build(name: str, **overrides):
    small = FA_SMALL if name == "flash_attention" else GEMM_SMALL
    return templates.get(name).build(**{**small, **overrides})


@pytest.fixture(scope="module")
def fa_func():
    return _build("flash_attention")


@pytest.fixture(scope="module")
def fa(fa_func) -> STaskGraph:
    return pt_tvm.extract(fa_func, "h100")


@pytest.fixture(scope="module")
def gemm_func():
    return _build("gemm")


@pytest.fixture(scope="module")
def gemm(gemm_func) -> STaskGraph:
    return pt_tvm.extract(gemm_func, "h100")


def one(g: STaskGraph, op: OpKind, reads: tuple = (), writes: tuple = (), placement: Placement | None = None,
        **attrs: str) -> STask:
    """The single sTask of kind ``op`` reading and writing (at least) the given buffers."""
    found = [t for t in g.stasks
             if t.op == op and set(reads) <= t.read_buffers() and set(writes) <= t.write_buffers()
             and (placement is None or t.placement == placement)
             and all(t.attrs.get(k) == v for k, v in attrs.items())]
    assert len(found) == 1, f"{op.value} reads {reads} writes {writes}: {[t.id for t in found]}"
    return found[0]


def has_edge(g: STaskGraph, src: STask, dst: STask, kind: DepKind, buffer: str, distance: int) -> bool:
    return bool(g.find_edges(src=src.id, dst=dst.id, kind=kind, buffer=buffer, distance=distance))


# ------------------------------------------------------------------ FlashAttention: the sTasks
def test_fa_shape_of_graph(fa: STaskGraph) -> None:
    assert fa.name == "flash_attention" and fa.target == "h100"
    assert [t.placement for t in fa.stasks] == sorted((t.placement for t in fa.stasks),
                                                      key=list(Placement).index)
    assert len(fa.placed(Placement.PROLOGUE)) == 4  # Q copy, three fills
    assert len(fa.loop_stasks) == 14  # the template's fixed loop body (tile-multiple keys: no mask)
    assert len(fa.placed(Placement.EPILOGUE)) == 3
    for placement in Placement:
        assert [t.index for t in fa.placed(placement)] == list(range(len(fa.placed(placement))))
    assert len({t.id for t in fa.stasks}) == len(fa.stasks)
    assert fa.loop.var == "k" and fa.loop.trip_count == 2 and fa.loop.annotations == {"num_stages": "2"}
    assert dict(fa.grid) == {"bx": 2, "by": 2, "bz": 1} and fa.grid_blocks() == 4
    assert fa.threads == 256
    assert fa.buffers["acc_s"].shape == (128, 128) and fa.buffers["acc_s"].scope == "fragment"
    assert fa.buffers["K_shared"].scope == "shared" and fa.buffers["Q"].scope == "global"
    assert fa.buffers["K_shared"].nbytes == 128 * 64 * 2


def test_fa_qk_gemm(fa: STaskGraph) -> None:
    qk = one(fa, OpKind.GEMM, reads=("Q_shared", "K_shared"), writes=("acc_s",))
    assert qk.placement == Placement.LOOP and qk.seu == SEUKind.TENSOR_CORE
    assert qk.tile_shape == (128, 128, 64)  # (block_M, block_N, dim)
    assert qk.flops == 2 * 128 * 128 * 64
    assert qk.bytes == (128 * 64 + 128 * 64) * 2  # both operands from shared memory, fp16
    assert qk.attrs["trans_b"] == "True" and qk.attrs["trans_a"] == "False" and qk.attrs["a_scope"] == "shared"
    assert qk.dtype == "float16"


def test_fa_pv_gemm(fa: STaskGraph) -> None:
    pv = one(fa, OpKind.GEMM, reads=("acc_s_cast", "V_shared"), writes=("acc_o",))
    assert pv.placement == Placement.LOOP and pv.seu == SEUKind.TENSOR_CORE
    assert pv.tile_shape == (128, 64, 128)  # (block_M, dim, block_N)
    assert pv.flops == 2 * 128 * 64 * 128
    assert pv.bytes == 128 * 64 * 2  # only V comes from shared memory; P is a register fragment
    assert pv.attrs["a_scope"] == "fragment"
    assert "acc_o" in pv.read_buffers()  # accumulates


def test_fa_softmax_chain(fa: STaskGraph) -> None:
    rmax = one(fa, OpKind.REDUCE, reads=("acc_s",), writes=("scores_max",), reduce="max")
    rsum = one(fa, OpKind.REDUCE, reads=("acc_s",), writes=("scores_sum",), reduce="sum")
    assert rmax.attrs["dim"] == "1" and rmax.attrs["clear"] == "False" and rsum.attrs["clear"] == "True"
    assert rmax.seu == rsum.seu == SEUKind.CUDA_CORE
    assert rmax.tile_shape == (128, 128) and rmax.flops == 128 * 128
    exp = one(fa, OpKind.ELEMENTWISE, reads=("acc_s", "scores_max"), writes=("acc_s",))
    assert exp.seu == SEUKind.SFU  # exp2 on Hopper's MUFU
    assert exp.sfu_ops == 128 * 128 and exp.tile_shape == (128, 128) and exp.flops > 0
    scale = one(fa, OpKind.ELEMENTWISE, writes=("scores_scale",))
    assert scale.seu == SEUKind.SFU and scale.sfu_ops == 128
    # program order: QK gemm, reduce max, exp, reduce sum, PV gemm
    qk = one(fa, OpKind.GEMM, writes=("acc_s",))
    pv = one(fa, OpKind.GEMM, writes=("acc_o",))
    assert qk.index < rmax.index < exp.index < rsum.index < pv.index
    # the QK gemm starts from zero (reads no scores); the rescale is a plain CUDA-core nest
    assert "acc_s" not in qk.read_buffers() and qk.attrs.get("full_writes", "acc_s") == "acc_s"
    rescale = one(fa, OpKind.ELEMENTWISE, reads=("acc_o", "scores_scale"), writes=("acc_o",),
                  placement=Placement.LOOP)
    assert rescale.seu == SEUKind.CUDA_CORE and rescale.flops == 128 * 64


def test_fa_copies(fa: STaskGraph) -> None:
    for src, dst, placement in (("Q", "Q_shared", Placement.PROLOGUE), ("K", "K_shared", Placement.LOOP),
                                ("V", "V_shared", Placement.LOOP), ("Q_shared", "O", Placement.EPILOGUE)):
        t = one(fa, OpKind.COPY, reads=(src,), writes=(dst,))
        assert t.placement == placement and t.seu == SEUKind.TMA, t.id
        assert t.bytes == 128 * 64 * 2 and t.tile_shape == (128, 64) and t.flops == 0
    k = one(fa, OpKind.COPY, reads=("K",))
    (acc,) = k.reads
    assert acc.scope == "global" and acc.extents == (1, 128, 1, 64) and set(acc.block_vars) == {"by", "bz"}
    cast = one(fa, OpKind.COPY, reads=("acc_s",), writes=("acc_s_cast",))
    assert cast.seu == SEUKind.CUDA_CORE and cast.bytes == 128 * 128 * 4 and cast.flops == 128 * 128
    out = one(fa, OpKind.COPY, reads=("acc_o",), writes=("Q_shared",))
    assert out.seu == SEUKind.LSU and out.placement == Placement.EPILOGUE


# ------------------------------------------------------------------ FlashAttention: the edges
def test_fa_raw_edges(fa: STaskGraph) -> None:
    q = one(fa, OpKind.COPY, reads=("Q",), writes=("Q_shared",))
    k = one(fa, OpKind.COPY, writes=("K_shared",))
    v = one(fa, OpKind.COPY, writes=("V_shared",))
    qk = one(fa, OpKind.GEMM, writes=("acc_s",))
    pv = one(fa, OpKind.GEMM, writes=("acc_o",))
    rmax = one(fa, OpKind.REDUCE, reduce="max")
    rsum = one(fa, OpKind.REDUCE, reduce="sum")
    exp = one(fa, OpKind.ELEMENTWISE, reads=("acc_s", "scores_max"), writes=("acc_s",))
    cast = one(fa, OpKind.COPY, writes=("acc_s_cast",))
    rescale = one(fa, OpKind.ELEMENTWISE, reads=("acc_o", "scores_scale"), writes=("acc_o",),
                  placement=Placement.LOOP)
    final = one(fa, OpKind.ELEMENTWISE, reads=("acc_o", "logsum"), placement=Placement.EPILOGUE)
    store = one(fa, OpKind.COPY, reads=("acc_o",), writes=("Q_shared",))
    out = one(fa, OpKind.COPY, writes=("O",))
    for src, dst, buf in ((q, qk, "Q_shared"), (k, qk, "K_shared"),
                          (qk, rmax, "acc_s"), (rmax, exp, "scores_max"), (exp, rsum, "acc_s"),
                          (exp, cast, "acc_s"), (cast, pv, "acc_s_cast"), (v, pv, "V_shared"),
                          (rescale, pv, "acc_o"), (pv, final, "acc_o"), (final, store, "acc_o"),
                          (store, out, "Q_shared")):
        assert has_edge(fa, src, dst, DepKind.RAW, buf, 0), (src.id, dst.id, buf)
    # the prologue copy of Q reaches the gemm in every iteration without a carried edge
    assert not fa.find_edges(src=q.id, distance=1)


def test_fa_loop_carried_edges(fa: STaskGraph) -> None:
    pv = one(fa, OpKind.GEMM, writes=("acc_o",))
    qk = one(fa, OpKind.GEMM, writes=("acc_s",))
    rescale = one(fa, OpKind.ELEMENTWISE, reads=("acc_o", "scores_scale"), writes=("acc_o",),
                  placement=Placement.LOOP)
    max_prev = one(fa, OpKind.COPY, reads=("scores_max",), writes=("scores_max_prev",))
    new_max = one(fa, OpKind.ELEMENTWISE, reads=("scores_max", "scores_max_prev"), writes=("scores_max",))
    logsum = one(fa, OpKind.ELEMENTWISE, reads=("logsum",), writes=("logsum",), placement=Placement.LOOP)
    k = one(fa, OpKind.COPY, writes=("K_shared",))
    # running max: this iteration's max becomes the next iteration's previous max
    assert has_edge(fa, new_max, max_prev, DepKind.RAW, "scores_max", 1)
    assert max_prev.index < new_max.index
    # output accumulator: rescaled and accumulated into across iterations
    assert has_edge(fa, pv, rescale, DepKind.RAW, "acc_o", 1)
    assert has_edge(fa, pv, pv, DepKind.RAW, "acc_o", 1)
    assert has_edge(fa, rescale, pv, DepKind.RAW, "acc_o", 0)
    # running sum
    assert has_edge(fa, logsum, logsum, DepKind.RAW, "logsum", 1)
    fill_logsum = one(fa, OpKind.FILL, writes=("logsum",))
    assert has_edge(fa, fill_logsum, logsum, DepKind.RAW, "logsum", 0)
    # the next K tile must not overwrite K_shared before this iteration's QK gemm read it
    assert has_edge(fa, qk, k, DepKind.WAR, "K_shared", 1)
    # the QK gemm overwrites the scores every iteration: only the last one's readers reach it around the back
    # edge (WAR and WAW), nothing it reads
    cast = one(fa, OpKind.COPY, writes=("acc_s_cast",))
    assert has_edge(fa, cast, qk, DepKind.WAR, "acc_s", 1)
    assert not fa.find_edges(dst=qk.id, kind=DepKind.RAW, distance=1)
    # carried edges stay inside the loop, and distances are 0 or 1
    for e in fa.edges:
        assert e.distance in (0, 1)
        if e.loop_carried:
            assert fa.stask(e.src).placement == fa.stask(e.dst).placement == Placement.LOOP


# ------------------------------------------------------------------ GEMM
def test_gemm_graph(gemm: STaskGraph) -> None:
    assert gemm.name == "gemm" and gemm.loop.trip_count == 256 / 64
    assert dict(gemm.grid) == {"bx": 2, "by": 2} and gemm.threads == 128
    fill = one(gemm, OpKind.FILL, writes=("C_l",))
    a = one(gemm, OpKind.COPY, reads=("A",), writes=("A_s",))
    b = one(gemm, OpKind.COPY, reads=("B",), writes=("B_s",))
    mm = one(gemm, OpKind.GEMM, reads=("A_s", "B_s"), writes=("C_l",))
    assert fill.placement == Placement.PROLOGUE and fill.flops == 128 * 128
    assert [t.id for t in gemm.loop_stasks] == [a.id, b.id, mm.id]
    assert mm.tile_shape == (128, 128, 64) and mm.flops == 2 * 128 * 128 * 64
    assert mm.bytes == (128 * 64 + 64 * 128) * 2
    assert a.bytes == b.bytes == 128 * 64 * 2
    assert a.tile_shape == (128, 64) and b.tile_shape == (64, 128)
    assert a.reads[0].block_vars == ("by",) and b.reads[0].block_vars == ("bx",)
    assert a.seu == b.seu == SEUKind.TMA and mm.seu == SEUKind.TENSOR_CORE


def test_gemm_edges(gemm: STaskGraph) -> None:
    fill = one(gemm, OpKind.FILL, writes=("C_l",))
    a = one(gemm, OpKind.COPY, writes=("A_s",))
    b = one(gemm, OpKind.COPY, writes=("B_s",))
    mm = one(gemm, OpKind.GEMM)
    store = one(gemm, OpKind.COPY, writes=("C_s",))
    out = one(gemm, OpKind.COPY, writes=("C",))
    for copy_, buf in ((a, "A_s"), (b, "B_s")):
        assert has_edge(gemm, copy_, mm, DepKind.RAW, buf, 0)
        assert has_edge(gemm, mm, copy_, DepKind.WAR, buf, 1)  # don't overwrite before the gemm read it
        assert has_edge(gemm, copy_, copy_, DepKind.WAW, buf, 1)  # the next iteration's copy
        assert not gemm.find_edges(src=copy_.id, dst=mm.id, distance=1)  # each tile is read where written
    assert has_edge(gemm, mm, mm, DepKind.RAW, "C_l", 1)
    assert has_edge(gemm, fill, mm, DepKind.RAW, "C_l", 0)
    assert has_edge(gemm, mm, store, DepKind.RAW, "C_l", 0)
    assert has_edge(gemm, store, out, DepKind.RAW, "C_s", 0)
    assert {(e.src, e.dst) for e in gemm.edges_into(a.id)} == {(mm.id, a.id), (a.id, a.id)}


def test_gemm_rowsum_atomic() -> None:
    g = pt_tvm.extract(_build("gemm_rowsum"), "h100")
    atomic = one(g, OpKind.ATOMIC, reads=("S_s",), writes=("S",))
    assert atomic.placement == Placement.EPILOGUE and atomic.seu == SEUKind.LSU
    assert atomic.bytes == 128 * 4
    rsum = one(g, OpKind.REDUCE, reads=("C_l",), writes=("S_l",), reduce="sum")
    assert rsum.placement == Placement.EPILOGUE
    to_smem = one(g, OpKind.COPY, writes=("S_s",))
    assert has_edge(g, to_smem, atomic, DepKind.RAW, "S_s", 0)


# ------------------------------------------------------------------ targets
@pytest.mark.parametrize("target, copy_seu", [("h100", SEUKind.TMA), ("h200", SEUKind.TMA),
                                              ("a100", SEUKind.LSU), ("mi300x", SEUKind.LSU)])
def test_seu_kinds_per_target(fa_func, gemm_func, target: str, copy_seu: SEUKind) -> None:
    for func in (fa_func, gemm_func):
        g = pt_tvm.extract(func, target)
        assert g.target == target
        for t in g.stasks:
            if t.op == OpKind.COPY and "global" in {a.scope for a in (*t.reads, *t.writes)}:
                assert t.seu == copy_seu, (target, t.id)
            if t.op == OpKind.GEMM:
                assert t.seu == SEUKind.TENSOR_CORE
            if t.op in (OpKind.FILL, OpKind.REDUCE):
                assert t.seu == SEUKind.CUDA_CORE
            assert hw.get(target).eu.has(t.seu)
    fa_g = pt_tvm.extract(fa_func, target)
    assert one(fa_g, OpKind.ELEMENTWISE, reads=("acc_s", "scores_max"), writes=("acc_s",)).seu == SEUKind.SFU


def test_same_graph_modulo_seus_across_targets(fa_func) -> None:
    h100, a100 = pt_tvm.extract(fa_func, "h100"), pt_tvm.extract(fa_func, "a100")
    assert h100.edges == a100.edges
    assert [(t.id, t.flops, t.bytes) for t in h100.stasks] == [(t.id, t.flops, t.bytes) for t in a100.stasks]


def test_target_forms(gemm_func) -> None:
    by_name = pt_tvm.extract(gemm_func, "a100")
    assert pt_tvm.extract(gemm_func, {"kind": "cuda", "arch": "sm_80"}) == by_name
    assert pt_tvm.extract(gemm_func, tvm.target.Target({"kind": "cuda", "arch": "sm_80"})) == by_name
    assert pt_tvm.extract(gemm_func, hw.A100) == by_name
    with tvm.target.Target({"kind": "cuda", "arch": "sm_80"}):
        assert pt_tvm.extract(gemm_func) == by_name
    h200 = pt_tvm.extract(gemm_func, tvm.target.Target({"kind": "cuda", "arch": "sm_90a", "model": "h200"}))
    assert h200.target == "h200"


def test_chip_without_sfu_or_tma_falls_back(fa_func) -> None:
    """A custom chip without an SFU runs exp on the CUDA cores; without TMA, copies on the LSU."""
    eu = hw.H100.eu
    plain = dataclasses.replace(hw.H100, name="no-sfu-no-tma", eu=dataclasses.replace(
        eu, seus=tuple(s for s in eu.seus if s.kind not in (SEUKind.SFU, SEUKind.TMA))),
        features=hw.H100.features - {"warp_specialization", "tma"})  # warp specialization needs TMA
    g = pt_tvm.extract(fa_func, plain)
    assert g.target == "no-sfu-no-tma"
    assert all(t.seu in (SEUKind.LSU, SEUKind.CUDA_CORE, SEUKind.TENSOR_CORE) for t in g.stasks)
    exp = one(g, OpKind.ELEMENTWISE, reads=("acc_s", "scores_max"), writes=("acc_s",))
    assert exp.seu == SEUKind.CUDA_CORE and exp.sfu_ops == 128 * 128  # the work is still counted
    assert one(g, OpKind.COPY, writes=("K_shared",)).seu == SEUKind.LSU


# ------------------------------------------------------------------ variants
def test_causal_trip_count_is_averaged() -> None:
    shape = {"seq_len": 1024}
    full = pt_tvm.extract(_build("flash_attention", **shape), "h100")
    causal = pt_tvm.extract(_build("flash_attention", causal=True, **shape), "h100")
    assert full.loop.trip_count == 8 and full.loop.extent == "8"
    # query block bx visits min(8, bx + 1) key blocks: the mean over bx = 0..7 is 4.5
    assert causal.loop.trip_count == pytest.approx(4.5)
    assert "bx" in causal.loop.extent
    assert causal.loop.trip_count / full.loop.trip_count == pytest.approx(0.5, abs=0.1)
    # the same statements, and the causal mask after the QK gemm, on the diagonal's blocks only: one step of
    # each query block's (128-row query and key blocks), 8 of the 36 steps
    mask = one(causal, OpKind.ELEMENTWISE, reads=("acc_s",), writes=("acc_s",), full_writes="")
    assert [t.label for t in causal.stasks if t is not mask] == [t.label for t in full.stasks]
    assert float(mask.attrs["branch_share"]) == pytest.approx(8 / 36, abs=1e-4)


def test_gqa_variant() -> None:
    g = pt_tvm.extract(_build("flash_attention", heads=8, kv_heads=2, causal=True), "h100")
    k = one(g, OpKind.COPY, reads=("K",), writes=("K_shared",))
    assert k.reads[0].offsets[2] == "by // 4"  # query head by reads key head by // (heads // kv_heads)
    assert g.buffers["K"].shape == (1, 256, 2, 64) and g.buffers["Q"].shape == (1, 256, 8, 64)
    assert dict(g.grid) == {"bx": 2, "by": 8, "bz": 1}
    assert len(g.loop_stasks) == 15


def test_dim256_variant() -> None:
    g = pt_tvm.extract(_build("flash_attention", dim=256, block_M=64, block_N=64, threads=128), "h100")
    qk = one(g, OpKind.GEMM, writes=("acc_s",))
    pv = one(g, OpKind.GEMM, writes=("acc_o",))
    assert qk.tile_shape == (64, 64, 256) and pv.tile_shape == (64, 256, 64)
    assert qk.flops == pv.flops == 2 * 64 * 64 * 256
    assert one(g, OpKind.COPY, writes=("K_shared",)).bytes == 64 * 256 * 2
    assert g.threads == 128 and g.loop.trip_count == 256 / 64


def test_bf16_dtype() -> None:
    g = pt_tvm.extract(_build("gemm", dtype="bfloat16"), "h100")
    assert one(g, OpKind.GEMM).dtype == "bfloat16"
    assert one(g, OpKind.COPY, writes=("A_s",)).bytes == 128 * 64 * 2


def test_num_stages_is_recorded() -> None:
    g = pt_tvm.extract(templates.get("gemm").build(num_stages=3, **GEMM_SMALL), "h100")
    assert g.loop.annotations == {"num_stages": "3"}


# ------------------------------------------------------------------ serialization
@pytest.mark.parametrize("which", ["fa", "gemm"])
def test_json_round_trip(request, which: str) -> None:
    g = request.getfixturevalue(which)
    text = g.to_json()
    assert json.loads(text)["format"] == "pt-tvm.stask-graph/1"
    back = STaskGraph.from_json(text)
    assert back == g
    assert STaskGraph.from_json(g.to_json(indent=None)) == g
    assert STaskGraph.from_dict(g.to_dict()) == g
    assert back.to_json() == text
    assert all(isinstance(t.seu, SEUKind) and isinstance(t.op, OpKind) for t in back.stasks)
    assert all(isinstance(e.kind, DepKind) for e in back.edges)


def test_dot_output(fa: STaskGraph) -> None:
    dot = fa.to_dot()
    assert dot.startswith('digraph "flash_attention" {') and dot.rstrip().endswith("}")
    for t in fa.stasks:
        assert f'"{t.id}" [label=' in dot
    for placement in Placement:
        assert f'"cluster_{placement.value}"' in dot
    edge_lines = [line for line in dot.splitlines() if re.match(r'\s*"[^"]+" -> "[^"]+"', line)]
    assert len(edge_lines) == len(fa.edges)
    carried = [line for line in edge_lines if "style=dashed" in line]
    assert len(carried) == sum(e.loop_carried for e in fa.edges) > 0
    assert all("d=1" in line for line in carried)
    pv, qk = one(fa, OpKind.GEMM, writes=("acc_o",)), one(fa, OpKind.GEMM, writes=("acc_s",))
    k = one(fa, OpKind.COPY, writes=("K_shared",))
    assert f'"{pv.id}" -> "{pv.id}" [label="RAW acc_o d=1", style=dashed' in dot
    assert f'"{k.id}" -> "{qk.id}" [label="RAW K_shared"]' in dot
    assert "loop k (x2)" in dot
    assert dot.count("{") == dot.count("}")


def test_summary(fa: STaskGraph) -> None:
    text = fa.summary()
    assert text.splitlines()[0].startswith("sTask-graph flash_attention for h100: 21 sTasks")
    for t in fa.stasks:
        assert t.id in text


def test_deepcopy_and_equality(fa: STaskGraph, gemm: STaskGraph) -> None:
    clone = copy.deepcopy(fa)
    assert clone == fa and clone is not fa
    assert all(clone.stask(t.id) == t for t in fa.stasks)
    assert copy.copy(gemm) == gemm
    assert fa != gemm
    # plain Python strings throughout (no TVM objects leak into the graph)
    for t in fa.stasks:
        assert type(t.id) is str and type(t.label) is str and type(t.dtype) is str
        assert all(type(k) is str and type(v) is str for k, v in t.attrs.items())
        assert all(type(o) is str for a in (*t.reads, *t.writes) for o in a.offsets)
        assert all(type(a.buffer) is str and type(a.scope) is str and all(type(v) is str for v in a.block_vars)
                   for a in (*t.reads, *t.writes))
    assert type(fa.loop.extent) is str and type(fa.loop.var) is str and all(type(k) is str for k in fa.grid)
    assert all(type(k) is str and type(b.name) is str for k, b in fa.buffers.items())
    assert all(type(e.buffer) is str for e in fa.edges)


def test_extraction_is_deterministic(fa_func, fa: STaskGraph) -> None:
    assert pt_tvm.extract(fa_func, "h100") == fa
    assert pt_tvm.extract(fa_func, "h100").to_json() == fa.to_json()


def test_graph_queries(gemm: STaskGraph) -> None:
    mm = one(gemm, OpKind.GEMM)
    assert gemm.stask(mm.id) is mm
    with pytest.raises(KeyError, match="nope"):
        gemm.stask("nope")
    assert [t.id for t in gemm.writers_of("C_l")] == [one(gemm, OpKind.FILL).id, mm.id]
    assert set(gemm.edges_from(mm.id)) == set(gemm.find_edges(src=mm.id))
    assert set(gemm.edges_into(mm.id)) == set(gemm.find_edges(dst=mm.id))


# ------------------------------------------------------------------ the pass form
def test_pass_in_sequential(gemm_func, gemm: STaskGraph) -> None:
    graphs: list = []
    mod = tvm.IRModule({"main": gemm_func})
    seq = tvm.transform.Sequential([pt_tvm.passes.ExtractSTaskGraph("h100", sink=graphs.append)])
    with tvm.transform.PassContext():
        out = seq(mod)
    assert graphs == [gemm]
    func = out["main"]
    assert pt_tvm.passes.GRAPH_ATTR == "pt.stask_graph"
    assert "pt.stask_graph" in func.attrs
    assert STaskGraph.from_json(str(func.attrs["pt.stask_graph"])) == gemm
    assert pt_tvm.passes.graph_of(func) == gemm
    assert pt_tvm.passes.graph_of(gemm_func) is None  # the input is left untouched
    # the analysis pass changes nothing but the attribute
    tvm.ir.assert_structural_equal(func.body, gemm_func.body)


def test_pass_uses_the_current_target(fa_func) -> None:
    graphs: list = []
    mod = tvm.IRModule({"main": fa_func})
    with tvm.transform.PassContext(), tvm.target.Target({"kind": "hip", "mcpu": "gfx942"}):
        out = pt_tvm.passes.ExtractSTaskGraph(sink=graphs.append)(mod)
    (g,) = graphs
    assert g.target == "mi300x"
    assert pt_tvm.passes.graph_of(out["main"]) == g


def test_pass_without_sink(gemm_func, gemm: STaskGraph) -> None:
    out = pt_tvm.passes.ExtractSTaskGraph("h100")(tvm.IRModule({"main": gemm_func}))
    assert pt_tvm.passes.graph_of(out["main"]) == gemm


# ------------------------------------------------------------------ a branch between two nests
def _two_nests(condition: str):
    """A pipelined loop of 16 steps whose tile is either doubled (cheap) or exponentiated (an SFU op a element),
    chosen by ``condition``: ``"step"`` (the first 4 steps double) or ``"flag"`` (a value read at run time)."""
    import tilelang.language as T

    @T.prim_func
    def main(A: T.Tensor((128, 1024), "float32"), Flag: T.Tensor((1,), "int32"), Out: T.Tensor((128, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((128, 64), "float32")
            S = T.alloc_fragment((128, 64), "float32")
            acc = T.alloc_fragment((128, 64), "float32")
            T.clear(acc)
            for k in T.Pipelined(16, num_stages=2):
                T.copy(A[0, k * 64], A_s)
                if (k < 4) if condition == "step" else (Flag[0] > 0):
                    for i, j in T.Parallel(128, 64):
                        S[i, j] = A_s[i, j] * 2.0
                else:
                    for i, j in T.Parallel(128, 64):
                        S[i, j] = T.exp2(A_s[i, j])
                for i, j in T.Parallel(128, 64):
                    acc[i, j] += S[i, j]
            T.copy(acc, Out[0, bx * 64])

    return main


@pytest.mark.parametrize("condition, share", [("step", 4 / 16), ("flag", None)])
def test_a_branch_between_two_nests_is_priced_by_its_share(condition, share):
    """``if c: nest else: nest`` is one sTask writing what both sides do, killing what both write in full (S: no
    loop-carried read of an older step's S), priced at the mean of its sides over the steps where the share is
    known at compile time (4 of 16 steps double, 12 exponentiate), at its costlier side where it is not (the
    condition reads a tensor: the exponent, a transcendental costing four ALU operations in the cost model)."""
    g = pt_tvm.extract(_two_nests(condition), "h100")
    branch = one(g, OpKind.ELEMENTWISE, reads=("A_s",), writes=("S",))
    elems = 128 * 64
    assert branch.attrs["full_writes"] == "S"
    assert branch.attrs["branch_share"] == ("unknown" if share is None else f"{share:.4g}")
    assert branch.sfu_ops == pytest.approx(elems * (1.0 if share is None else 1 - share))
    assert not [e for e in g.edges if e.buffer == "S" and e.kind == DepKind.RAW and e.distance > 0]


def _prologue_nests(n: int = 100):
    """A kernel whose prologue fills three shared tiles from ``a [n, 64]`` by nests: rows clamped at the end (a
    copy), every other row (a strided gather), and scaled (arithmetic); then a pipelined loop reading them."""
    import tilelang.language as T

    @T.prim_func
    def nests(a: T.Tensor((n, 64), "float16"), b: T.Tensor((64 * 4, 64), "float16"), c: T.Tensor((64, 64), "float32")):
        with T.Kernel(T.ceildiv(n, 64), threads=128) as bx:
            clamped = T.alloc_shared((64, 64), "float16")
            strided = T.alloc_shared((32, 64), "float16")
            scaled = T.alloc_shared((64, 64), "float16")
            b_s = T.alloc_shared((64, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            for i, j in T.Parallel(64, 64):
                clamped[i, j] = a[T.min(bx * 64 + i, n - 1), j]
            for i, j in T.Parallel(32, 64):
                strided[i, j] = a[T.min(bx * 64 + 2 * i, n - 1), j]
            for i, j in T.Parallel(64, 64):
                scaled[i, j] = a[T.min(bx * 64 + i, n - 1), j] * T.float16(2)
            T.clear(acc)
            for k in T.Pipelined(4, num_stages=2):
                T.copy(b[k * 64:(k + 1) * 64, :], b_s)
                T.gemm(clamped, b_s, acc)
                T.gemm(scaled, b_s, acc)
            T.copy(acc, c)

    return nests


def test_a_prologue_nest_that_only_copies_clamped_rows_is_an_lsu_copy():
    """``dst[i, j] = src[min(r0 + i, n - 1), j]`` before the loop is a copy of ``src``'s 64 x 64 tile at ``r0`` (the
    clamp bounds, never widens, what it reads): its bytes priced, on the LSU; a strided or computed nest stays
    element-wise, priced by its arithmetic."""
    graph = pt_tvm.extract(_prologue_nests(), "h200")
    by_dst = {t.writes[0].buffer: t for t in graph.placed(Placement.PROLOGUE) if t.writes}
    copy = by_dst["clamped"]
    assert copy.op == OpKind.COPY and copy.seu == SEUKind.LSU and copy.bytes == 64 * 64 * 2
    assert copy.reads[0].extents == (64, 64) and copy.reads[0].block_vars == ("bx",)
    assert by_dst["strided"].op == OpKind.ELEMENTWISE and by_dst["scaled"].op == OpKind.ELEMENTWISE
    assert graph.find_edges(src=copy.id, kind=DepKind.RAW, buffer="clamped")
