"""CPU tests of plan emission: what ApplyPipelineSchedule writes into the PrimFunc and what TileLang then
emits. sm_80 / gfx942: the plan's order and stage on the pipelined loop, and different plans giving
different code. sm_90a: the plan's roles (setmaxnreg), pipelines (mbarrier waits), warps
(__launch_bounds__), TMA, wgmma and order in the CUDA source, which nvcc compiles without spills.
Also the passes inside a user's tvm.transform.Sequential, and the fallback for unknown targets."""
from __future__ import annotations

import re
import shutil
from dataclasses import replace

import pytest
import tilelang
import tilelang.language as T
from _util import built, compiles_without_spills
from tilelang import tvm
from tvm import tirx

import pt_tvm
from benchmarks.experiments.cuda_variants import row_sum_after_loop
from pt_tvm import hw
from pt_tvm.cache import structure_key
from pt_tvm.compiler import FallbackWarning, lower
from pt_tvm.graph import Placement
from pt_tvm.lowering import wgmma_columns
from pt_tvm.passes import ApplyPipelineSchedule, PipeThreader, ScheduleMismatch, apply_plan, is_planned
from pt_tvm.plan import Append
from pt_tvm.search import NoValidPlan, SearchSpace, search
from pt_tvm.space import Priority, software_pipelined, warp_specialized
from pt_tvm.templates import get
from pt_tvm.verify import verify, violations

SMALL_GEMM = {"M": 512, "N": 512, "K": 512, "block_M": 64, "block_N": 64, "block_K": 32}
SMALL_FA = {"batch": 1, "heads": 4, "kv_heads": 4, "seq_len": 512}
SPACE = SearchSpace(random_orders=1)
_func = built


def _lower(func, target: str, pass_configs=None) -> str:
    """TileLang's CUDA/HIP source of a PrimFunc that already carries its plan (as the CLI lowers it)."""
    tgt = hw.get(target).tvm_target()
    with tilelang.transform.PassContext(config=dict(pass_configs or {})), tgt:
        return tilelang.lower(func, target=tgt).kernel_source


def _pipelined_loop(func) -> tirx.For:
    loops = []
    tirx.stmt_functor.post_order_visit(
        func.body, lambda n: loops.append(n) if isinstance(n, tirx.For) and "tl_pipeline_order" in n.annotations
        else None)
    (loop,) = loops
    return loop


def _root_annotations(func) -> dict:
    found = {}

    def visit(n):
        if isinstance(n, tirx.SBlock) and n.name_hint == "tilelang_root":
            found.update(n.annotations)

    tirx.stmt_functor.post_order_visit(func.body, visit)
    return found


def _expected_annotations(plan, graph) -> tuple[list[int], list[int]]:
    order = [a.stask for a in plan.program(plan.roles[0].name, graph, Placement.LOOP)]
    ids = [t.id for t in graph.loop_stasks]
    return [order.index(sid) for sid in ids], [plan.append_of(sid).stage for sid in ids]


def _reorder(plan, graph, order: list[str]):
    """``plan`` with its loop program reordered (one role)."""
    loop = {t.id for t in graph.loop_stasks}
    it = iter(order)
    return replace(plan, steps=tuple(plan.append_of(next(it)) if isinstance(s, Append) and s.stask in loop else s
                                     for s in plan.steps))


# ---------------------------------------------------------------- sm_80 and gfx942: order / stage
@pytest.mark.parametrize("target", ["a100", "mi300x"])
@pytest.mark.parametrize("template", ["gemm", "flash_attention"])
def test_searched_order_and_stage_land_on_the_pipelined_loop(template, target):
    params = SMALL_GEMM if template == "gemm" else {**SMALL_FA, "block_M": 64, "block_N": 64, "threads": 128}
    func = _func(template, **params)
    vdev = hw.get(target)
    graph = pt_tvm.extract(func, vdev)
    plans = [search([graph], vdev, space=SPACE).best.plan]
    # and one whose order is not the program order (tensor-core sTasks first)
    staged = software_pipelined(graph, vdev, num_stages=2, threads=graph.threads, priority=Priority.TENSOR_FIRST)
    if not violations(staged, graph, vdev):
        plans.append(staged)
    for plan in plans:
        loop = _pipelined_loop(apply_plan(func, plan, vdev, graph))
        order, stage = _expected_annotations(plan, graph)
        assert [int(x) for x in loop.annotations["tl_pipeline_order"]] == order
        assert [int(x) for x in loop.annotations["tl_pipeline_stage"]] == stage
        assert "num_stages" not in loop.annotations  # order/stage say it all
        assert max(stage) == plan.num_stages - 1
    if template == "flash_attention" and len(plans) > 1:
        assert _expected_annotations(plans[1], graph)[0] != sorted(_expected_annotations(plans[1], graph)[0])


@pytest.fixture(scope="module")
def gemm_sources():
    """gfx942 and sm_80 sources of one GEMM under num_stages 1 and 2 plans (and those plans)."""
    func = _func("gemm", **SMALL_GEMM)
    out = {}
    for target in ("a100", "mi300x"):
        vdev = hw.get(target)
        graph = pt_tvm.extract(func, vdev)
        for n in (1, 2):
            plan = software_pipelined(graph, vdev, num_stages=n, threads=graph.threads, priority=Priority.PROGRAM)
            if target == "a100":
                src = _lower(apply_plan(func, plan, vdev, graph), target)
            else:
                src = lower(func, vdev.tvm_target(), plan=plan).kernel_source  # the flow API's lowering
            out[(target, n)] = (plan, src)
    return out


@pytest.mark.parametrize("target", ["a100", "mi300x"])
def test_different_plans_emit_different_code(gemm_sources, target):
    (_, one), (plan2, two) = gemm_sources[(target, 1)], gemm_sources[(target, 2)]
    assert one != two
    # num_stages 1: synchronous loads; num_stages 2: async copies, committed once per stage, waited one behind
    assert "cp_async" not in one
    assert two.count("cp_async_commit()") == plan2.num_stages
    assert "cp_async_wait<1>()" in two and "cp_async_gs<16>" in two
    mma = "tl::mma_sync<" if target == "a100" else "__builtin_amdgcn_mfma_"
    assert mma in one and mma in two


def test_hip_source_for_mi300x(gemm_sources):
    for n in (1, 2):
        plan, src = gemm_sources[("mi300x", n)]
        assert src.startswith("#include <hip/hip_runtime.h>")
        assert f"__launch_bounds__({plan.num_warps * hw.get('mi300x').eu.warp_size})" in src  # 64-lane waves


# ---------------------------------------------------------------- sm_90a: roles, pipelines, warps, order
@pytest.fixture(scope="module")
def hopper_fa():
    """FlashAttention d128 128x128 on H100 with PV at stage 1: list-scheduled in program order (PV of
    iteration j-1 after QK of j) and oldest-first (PV of j-1 before QK of j); both lowered."""
    func = _func("flash_attention", **SMALL_FA, block_M=128, block_N=128)
    vdev = hw.get("h100")
    graph = pt_tvm.extract(func, vdev)
    out = {}
    for name, priority in (("program", Priority.PROGRAM), ("oldest_first", Priority.OLDEST_FIRST)):
        plan = warp_specialized(graph, vdev, consumer_wgs=2, depth=2, pipeline_stage={"V_shared": 1},
                                priority=priority)
        verify(plan, graph, vdev)
        applied = apply_plan(func, plan, vdev, graph)
        out[name] = (plan, applied, _lower(applied, "h100", get("flash_attention").pass_configs))
    return graph, out


def _loop_bodies(src: str) -> list[str]:
    """The text of every ``for (...) { ... }`` in the source (brace-matched)."""
    bodies = []
    for m in re.finditer(r"for \([^)]*\) \{", src):
        depth, i = 1, m.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(src[i], 0)
            i += 1
        bodies.append(src[m.end():i - 1])
    return bodies


def _steady_state(src: str) -> str:
    """The consumer's steady-state loop: the innermost loop holding both the QK and the PV wgmma."""
    loops = [b for b in _loop_bodies(src) if "wgmma_ss<" in b and "wgmma_rs<" in b]
    assert loops, "no loop issues both wgmmas"
    return min(loops, key=len)


def test_hopper_ws_schedule_is_attached(hopper_fa):
    graph, plans = hopper_fa
    plan, applied, _ = plans["program"]
    ann = _root_annotations(applied)
    assert "tl.ws_schedule" in ann
    text = applied.script()
    for t in graph.stasks:
        assert f'"{t.id}"' in text  # every tile op is named by its sTask id (tl.ws_op_id)


@pytest.mark.parametrize("which", ["program", "oldest_first"])
def test_hopper_source_shows_the_plan(hopper_fa, which):
    graph, plans = hopper_fa
    plan, _, src = plans[which]
    consumer = plan.role("consumer")
    producer = plan.role("producer")
    assert f"__launch_bounds__({plan.num_warps * 32}" in src
    assert f"warpgroup_reg_alloc<{consumer.max_nreg}>()" in src
    assert f"warpgroup_reg_dealloc<{producer.max_nreg}>()" in src and producer.max_nreg == 24
    for p in plan.pipelines:  # every pipeline is a full/empty mbarrier pair the roles wait on
        assert re.search(rf"\b{p.name}_full\[[^\]]+\]\.wait\(", src), p.name
        if p.scope == "loop":
            assert re.search(rf"\b{p.name}_empty\[[^\]]+\]\.wait\(", src), p.name
    for desc in ("Q_desc", "K_desc", "V_desc"):
        assert f"tma_load({desc}" in src
    assert "wgmma_ss<" in src and "wgmma_rs<" in src


def test_hopper_source_follows_the_plan_order(hopper_fa):
    graph, plans = hopper_fa
    pv = next(t.id for t in graph.loop_stasks if t.op.value == "gemm" and "V_shared" in t.read_buffers())
    qk = next(t.id for t in graph.loop_stasks if t.op.value == "gemm" and t.id != pv)
    for which, pv_after_qk in (("program", True), ("oldest_first", False)):
        plan, _, src = plans[which]
        order = [a.stask for a in plan.program("consumer", graph, Placement.LOOP)]
        assert (order.index(pv) > order.index(qk)) == pv_after_qk
        body = _steady_state(src)
        ss, rs = body.index("wgmma_ss<"), body.index("wgmma_rs<")
        assert (rs > ss) == pv_after_qk, which
        # the PV gemm reads the V slot of the previous iteration: its full-barrier wait precedes it
        v_wait = body.index("p_V_shared_full[")
        assert v_wait < rs
        # stage 1: one more PV after the loop drains the last iteration, one QK before it fills the first
        assert src.count("wgmma_rs<") >= 2 and src.count("wgmma_ss<") >= 2
    assert plans["program"][2] != plans["oldest_first"][2]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_hopper_kernel_compiles_with_nvcc_without_spills(hopper_fa, tmp_path):
    _, plans = hopper_fa
    _, _, src = plans["program"]
    assert "flash_attention_kernel" in compiles_without_spills(src, tmp_path, "fa")


def test_row_sum_after_loop_rewrite(hopper_fa):
    """cuda_variants' "row sum after loop" (flash-attn-4's partial row sums, reduced once): the steady-state loop
    keeps the row max's all-reduce and drops the row sum's; ``logsum`` is all-reduced once, before the output's
    normalization; a kernel that reads ``logsum`` elsewhere is left as emitted."""
    _, plans = hopper_fa
    src = plans["program"][2]
    out = row_sum_after_loop(src, None)
    assert "AllReduce<tl::SumOp" in _steady_state(src)
    assert "AllReduce<tl::SumOp" not in _steady_state(out) and "AllReduce<tl::MaxOp" in _steady_state(out)
    assert out.count("logsum[pt_r] = tl::AllReduce<tl::SumOp") == 1
    assert out.index("logsum[pt_r] = tl::AllReduce") < out.index("make_float2(logsum[")
    read_elsewhere = src.replace("make_float2(logsum[", "make_float2(logsum[0] + logsum[", 1)
    assert row_sum_after_loop(read_elsewhere, None) == read_elsewhere


# ---------------------------------------------------------------- three consumer warpgroups (FA3's D64 tile)
@pytest.fixture(scope="module")
def three_warpgroups():
    """FlashAttention at head dim 64 in 192x128 tiles (ragged and causal): the search's plan and its CUDA."""
    params = {**SMALL_FA, "seq_len": 1000, "dim": 64, "causal": True, "block_M": 192, "block_N": 128,
              "threads": 128}
    result, _, build = pt_tvm.schedule_template("flash_attention", "h100", params=params)
    return result.best.plan, _lower(build(), "h100", get("flash_attention").pass_configs)


def test_three_consumer_warpgroups_share_192_rows(three_warpgroups):
    """Three consumer warpgroups of 64 query rows each, at the 160 registers a thread the producer's donation
    leaves them (setmaxnreg), each issuing its own m64n128 QK wgmma and taking turns in a ring of barriers."""
    plan, src = three_warpgroups
    assert plan.style.value == "warp_specialized" and plan.role("consumer").warps == 12
    assert "__launch_bounds__(512, 1)" in src
    assert "warpgroup_reg_alloc<160>" in src and "warpgroup_reg_dealloc<24>" in src
    assert re.search(r"wgmma_ss<[^>]*, 64, 128, 16,", src)
    assert "% 3) * " in src  # each warpgroup's 64 rows of the Q tile


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_three_consumer_warpgroups_compile_without_spills(three_warpgroups, tmp_path):
    compiles_without_spills(three_warpgroups[1], tmp_path, "fa192")


def test_three_warpgroups_split_rows_only():
    """Three consumer warpgroups are verified only where every gemm tile splits by rows (192 rows): a 128x192
    GEMM tile, six 64x64 pieces that another policy could share out, is refused."""
    func = _func("gemm", **{**SMALL_GEMM, "block_M": 128, "block_N": 192})
    vdev = hw.get("h100")
    graph = pt_tvm.extract(func, vdev)
    plan = warp_specialized(graph, vdev, consumer_wgs=3, depth=2, pipeline_stage={}, priority=Priority.PROGRAM)
    assert any("cannot be split over 3 consumer warpgroups" in v.message for v in violations(plan, graph, vdev))


# ---------------------------------------------------------------- software-pipelined plans on Hopper
def test_hopper_software_pipelined_plan_turns_warp_specialization_off():
    """A software-pipelined Hopper plan records the pass config that keeps TileLang from warp-specializing:
    no producer warpgroup, no setmaxnreg, cp.async loads in the plan's order, wgmma kept."""
    from pt_tvm.passes import pass_configs

    func = _func("gemm", **SMALL_GEMM)
    vdev = hw.get("h100")
    graph = pt_tvm.extract(func, vdev)
    plan = software_pipelined(graph, vdev, num_stages=3, threads=graph.threads, priority=Priority.PROGRAM)
    assert not violations(plan, graph, vdev)
    planned = apply_plan(func, plan, vdev, graph)
    assert pass_configs(planned, {"x": 1}) == {"x": 1, "tl.disable_warp_specialized": True}
    src = lower(func, vdev.tvm_target(), plan=plan).kernel_source
    assert "tma_load" not in src and "reg_alloc" not in src and "wgmma" in src
    assert src.count("cp_async_commit()") == 3 and "cp_async_wait<2>()" in src
    assert re.search(r"__launch_bounds__\(128, 1\)", src)
    ws = warp_specialized(graph, vdev, consumer_wgs=1, depth=2, pipeline_stage={}, priority=Priority.PROGRAM)
    # TileLang's default path, its shared memory merged by live range (the epilogue tile over the stages)
    assert pass_configs(apply_plan(func, ws, vdev, graph)) == {"tl.enable_aggressive_shared_memory_merge": True}
    assert pass_configs(apply_plan(func, replace(ws, persistent=True), vdev, graph)) == {}


@pytest.mark.parametrize("target", ["h100", "a100"])
def test_software_pipeline_over_a_run_time_trip_count_lowers(target):
    """Causal attention's loop runs to the diagonal of its block (a run-time trip count): TileLang 0.1.15
    fails on its cp.async wait-group epilogue unless the plan asks for that loop to be unrolled."""
    from pt_tvm.passes import pass_configs

    func = _func("flash_attention", **SMALL_FA, causal=True, block_M=64, block_N=64, threads=128)
    vdev = hw.get(target)
    graph = pt_tvm.extract(func, vdev)
    assert not graph.loop.extent.isdigit()
    plan = software_pipelined(graph, vdev, num_stages=2, threads=graph.threads, priority=Priority.PROGRAM)
    assert not violations(plan, graph, vdev)
    assert pass_configs(apply_plan(func, plan, vdev, graph))["tl.UnrollLoop"] == {"explicit_unroll": True}
    src = lower(func, vdev.tvm_target(), plan=plan, pass_configs=get("flash_attention").pass_configs).kernel_source
    assert {"cp_async_wait<1>()", "cp_async_wait<0>()"} <= set(re.findall(r"cp_async_wait<\d+>\(\)", src))


# ---------------------------------------------------------------- passes in a user's Sequential
def test_pipethreader_in_a_sequential():
    func = _func("gemm", **SMALL_GEMM)
    mod = tvm.IRModule({"main": func})
    with tvm.transform.PassContext():
        out = tvm.transform.Sequential([PipeThreader("h100", space=SPACE)])(mod)
    scheduled = out["main"]
    assert is_planned(scheduled) and not is_planned(func)  # the input is left alone
    assert "tl.ws_schedule" not in _root_annotations(func)
    src = _lower(scheduled, "h100")
    assert "wgmma" in src and "tma_load" in src and "warpgroup_reg_alloc<" in src


def test_a_planned_function_keeps_its_plan(monkeypatch):
    """A PrimFunc that carries a plan is not planned again: PipeThreader leaves it as it is (a pipeline may run
    the pass twice), ``lower`` lowers the plan it carries without a search, writing the same plan into it again
    leaves it as it is, and writing another is refused by name."""
    from pt_tvm.compiler import lower_planned
    from pt_tvm.passes import PLAN_ATTR, ScheduleMismatch, is_planned
    from pt_tvm.plan import ExecutionPlan

    func = _func("gemm", **SMALL_GEMM)
    with tvm.transform.PassContext():
        once = tvm.transform.Sequential([PipeThreader("h100", space=SPACE)])(tvm.IRModule({"main": func}))
        twice = tvm.transform.Sequential([PipeThreader("h100", space=SPACE)])(once)
    planned = once["main"]
    assert is_planned(planned) and not is_planned(func)
    plan = ExecutionPlan.from_json(str(planned.attrs[PLAN_ATTR]))
    assert plan.style.name == "WARP_SPECIALIZED"
    tvm.ir.assert_structural_equal(twice["main"], planned)
    other = next(c.plan for c in pt_tvm.schedule(func, "h100", space=SPACE).ranked if c.plan != plan)

    def no_search(*args, **kwargs):
        raise AssertionError("a planned function was searched again")

    monkeypatch.setattr(pt_tvm.compiler, "schedule", no_search)
    target = hw.get("h100").tvm_target()
    assert lower(planned, "h100").kernel_source == lower_planned(planned, target).kernel_source
    assert apply_plan(planned, plan, "h100").same_as(planned)  # the plan it carries: as it is
    with pytest.raises(ScheduleMismatch, match="already carries another plan"):
        apply_plan(planned, other, "h100")


def test_pipethreader_takes_the_target_from_the_context():
    func = _func("gemm", **SMALL_GEMM)
    with hw.get("a100").tvm_target(), tvm.transform.PassContext():
        out = tvm.transform.Sequential([PipeThreader(space=SPACE)])(tvm.IRModule({"main": func}))
    assert "tl_pipeline_order" in _pipelined_loop(out["main"]).annotations


def test_apply_pipeline_schedule_in_a_sequential(gemm_sources):
    func = _func("gemm", **SMALL_GEMM)
    plan, src_direct = gemm_sources[("a100", 2)]
    with tvm.transform.PassContext():
        out = tvm.transform.Sequential([ApplyPipelineSchedule(plan, "a100")])(tvm.IRModule({"main": func}))
    graph = pt_tvm.extract(func, "a100")
    loop = _pipelined_loop(out["main"])
    order, stage = _expected_annotations(plan, graph)
    assert [int(x) for x in loop.annotations["tl_pipeline_stage"]] == stage
    assert _lower(out["main"], "a100") == src_direct


def test_apply_pipeline_schedule_hopper_in_a_sequential(hopper_fa):
    graph, plans = hopper_fa
    plan, applied, _ = plans["program"]
    func = _func("flash_attention", **SMALL_FA, block_M=128, block_N=128)
    with tvm.transform.PassContext():
        out = tvm.transform.Sequential([ApplyPipelineSchedule(plan, "h100")])(tvm.IRModule({"main": func}))
    assert "tl.ws_schedule" in _root_annotations(out["main"])
    assert tvm.ir.structural_equal(out["main"], applied)


# ---------------------------------------------------------------- unknown targets fall back
UNKNOWN = {"kind": "cuda", "arch": "sm_86"}


def test_pipethreader_unknown_target_leaves_the_function_with_a_warning():
    func = _func("gemm", **SMALL_GEMM)
    mod = tvm.IRModule({"main": func})
    with pytest.warns(FallbackWarning, match="no hardware model"):
        with tvm.transform.PassContext():
            out = tvm.transform.Sequential([PipeThreader(UNKNOWN)])(mod)
    assert tvm.ir.structural_equal(out["main"], func)


@pytest.mark.parametrize("as_dict", [False, True], ids=["Target", "dict"])
def test_lower_unknown_target_falls_back_to_tilelang(as_dict):
    func = _func("gemm", **SMALL_GEMM)
    target = UNKNOWN if as_dict else tvm.target.Target(UNKNOWN)
    with pytest.warns(FallbackWarning, match="falling back to TileLang's own schedule"):
        art = lower(func, target)
    assert "__global__" in art.kernel_source and "mma" in art.kernel_source


def test_lower_with_a_plan_matches_the_cli_lowering(gemm_sources):
    """pt_tvm.compiler.lower(func, target, plan=...) == apply_plan + tilelang.lower under the target."""
    func = _func("gemm", **SMALL_GEMM)
    plan, src = gemm_sources[("a100", 2)]
    assert lower(func, "a100", plan=plan).kernel_source == src


def _gemm_with_a_let():
    """A GEMM whose row offset is a scalar let (a ``Bind`` statement in the kernel body)."""
    import tilelang.language as T

    @T.prim_func
    def main(A: T.Tensor((1024, 1024), "float16"), B: T.Tensor((1024, 1024), "float16"),
             C: T.Tensor((1024, 1024), "float16")):
        with T.Kernel(8, 8, threads=128) as (bx, by):
            row: T.int32 = by * 128
            A_s = T.alloc_shared((128, 64), "float16")
            B_s = T.alloc_shared((64, 128), "float16")
            C_l = T.alloc_fragment((128, 128), "float32")
            T.clear(C_l)
            for k in T.Pipelined(16, num_stages=2):
                T.copy(A[row, k * 64], A_s)
                T.copy(B[k * 64, bx * 128], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[row, bx * 128])

    return main


@pytest.mark.parametrize("target", ["h100", "a100"])
def test_scalar_lets_survive_emission(target):
    """Bind statements are not sTasks, but the tile ops that use their variables still need them."""
    from pt_tvm.compiler import lower

    art = lower(_gemm_with_a_let(), target)
    assert "row" in art.kernel_source or "blockIdx.y" in art.kernel_source


# ---------------------------------------------------------------- the warpgroups' split of a gemm tile
_WIDE_GEMM = {"M": 512, "N": 512, "K": 512, "block_M": 128, "block_N": 256, "block_K": 64}


def _wgmma_shapes(src: str) -> set[tuple[int, int, int]]:
    return {tuple(int(x) for x in m) for m in re.findall(r"wgmma_ss<[^,]*,[^,]*,[^,]*, (\d+), (\d+), (\d+),", src)}


def test_row_split_plan_issues_full_width_wgmmas(tmp_path):
    """A 128x256 tile on two consumer warpgroups: the template's Square policy splits its columns (each
    warpgroup 2 x m64n128k16); ``row_split`` gives each 64 rows at full width (one m64n256k16, CUTLASS's
    cooperative split), in the same registers and without spills."""
    func = _func("gemm", **_WIDE_GEMM)
    vdev = hw.get("h100")
    graph = pt_tvm.extract(func, vdev)
    plan = warp_specialized(graph, vdev, consumer_wgs=2, depth=3, pipeline_stage={}, priority=Priority.PROGRAM)
    rows = replace(plan, row_split=True)
    verify(rows, graph, vdev)
    square, split = (_lower(apply_plan(func, p, vdev, graph), "h100") for p in (plan, rows))
    assert _wgmma_shapes(square) == {(64, 128, 16)}
    assert _wgmma_shapes(split) == {(64, 256, 16)}
    assert "float C_l[128];" in square and "float C_l[128];" in split
    compiles_without_spills(split, tmp_path, "rows")


@pytest.mark.parametrize("block_M, block_N, wgs", [(128, 256, 2), (256, 128, 2), (128, 128, 2), (128, 128, 1),
                                                    (64, 256, 1), (128, 64, 2)])
@pytest.mark.parametrize("row_split", [False, True])
def test_wgmma_columns_are_what_tilelang_emits(block_M, block_N, wgs, row_split):
    """``lowering.wgmma_columns`` (what the cost model prices a gemm's wgmma width by) is the N of the wgmma
    TileLang emits for the tile on that many consumer warpgroups, with the template's Square policy and split
    by rows."""
    func = _func("gemm", M=1024, N=1024, K=512, block_M=block_M, block_N=block_N, block_K=64)
    vdev = hw.get("h100")
    graph = pt_tvm.extract(func, vdev)
    plan = warp_specialized(graph, vdev, consumer_wgs=wgs, depth=2, pipeline_stage={}, priority=Priority.PROGRAM)
    plan = replace(plan, row_split=row_split)
    if violations(plan, graph, vdev):
        pytest.skip("the rows do not split over the warpgroups")
    src = _lower(apply_plan(func, plan, vdev, graph), "h100")
    assert {n for _, n, _ in _wgmma_shapes(src)} == {wgmma_columns(block_M, block_N, wgs, row_split)}


def test_row_split_is_rejected_where_the_rows_do_not_divide():
    """64 rows cannot go to two warpgroups of 64-row wgmmas: the plan's split is checked like the template's."""
    func = _func("gemm", **{**_WIDE_GEMM, "block_M": 64})
    vdev = hw.get("h100")
    graph = pt_tvm.extract(func, vdev)
    plan = warp_specialized(graph, vdev, consumer_wgs=2, depth=3, pipeline_stage={}, priority=Priority.PROGRAM)
    assert not violations(plan, graph, vdev)
    assert {v.rule for v in violations(replace(plan, row_split=True), graph, vdev)} == {"threads"}


# ---------------------------------------------------------------- a block's early exit
def _gemm_leaving_past(exits: bool):
    """A 2048 x 2048 x 512 GEMM whose block rows at or past ``rows[0]`` leave at once where ``exits`` (a block
    with no work, as a packed batch's blocks past their sequence)."""
    M = N = 2048

    @T.prim_func
    def gemm(A: T.Tensor((M, 512), "float16"), B: T.Tensor((512, N), "float16"), C: T.Tensor((M, N), "float16"),
             rows: T.Tensor((1,), "int32")):
        with T.Kernel(N // 128, M // 128, threads=256) as (bx, by):
            valid = T.bind(rows[0])
            if exits:
                if by * 128 >= valid:
                    T.thread_return()
            A_s = T.alloc_shared((128, 64), "float16")
            B_s = T.alloc_shared((64, 128), "float16")
            C_l = T.alloc_fragment((128, 128), "float32")
            T.clear(C_l)
            for k in T.Pipelined(8, num_stages=2):
                T.copy(A[by * 128, k * 64], A_s)
                T.copy(B[k * 64, bx * 128], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * 128, bx * 128])

    return gemm


def test_a_blocks_exit_runs_first_in_every_role_and_holds_no_stask():
    """``if cond: T.thread_return()`` in the prologue is no sTask (the graph is the kernel's without it); the
    warp-specialized plan runs it in every role after the Binds it reads, before the role's first op (a
    producer that left its loads behind would free shared memory the copy engine still writes)."""
    h100 = hw.get("h100")
    with_exit, without = (pt_tvm.extract(_gemm_leaving_past(e), h100) for e in (True, False))
    assert structure_key(with_exit) == structure_key(without)
    plan = next(c.plan for c in search([with_exit], h100, space=SPACE).ranked
                if c.plan.style.value == "warp_specialized" and not c.plan.persistent)
    src = _lower(apply_plan(_gemm_leaving_past(True), plan, h100, with_exit), "h100")
    exits = [m.start() for m in re.finditer(r"return;", src)]
    firsts = [min(m.start() for m in re.finditer(op, src) if m.start() > e) for e, op in
              zip(exits, ("tma_load\\(", "wgmma_"))]
    assert len(exits) == 2 and exits[0] < firsts[0] < exits[1] < firsts[1]
    assert all("rows[0]" in src[:e] for e in exits)


def test_a_persistent_walk_refuses_a_blocks_exit():
    """A persistent plan loops over tiles in each block, which an early exit would leave with tiles undone: a
    clear error, not a kernel that skips work."""
    h100 = hw.get("h100")
    func = _gemm_leaving_past(True)
    graph = pt_tvm.extract(func, h100)
    plan = next(c.plan for c in search([graph], h100, space=SPACE).ranked if c.plan.persistent)
    with pytest.raises(ScheduleMismatch, match="early exit"):
        apply_plan(func, plan, h100, graph)


def _shifted(load_at: int, store_at: int):
    """A pipelined loop whose tile of ``A`` starts ``load_at`` fp16 columns into each 256-column step, staged in
    shared memory and stored into ``B`` from ``store_at`` columns into it."""
    @T.prim_func
    def shifted(A: T.Tensor((256, 1024), "float16"), B: T.Tensor((256, 1024), "float16")):
        with T.Kernel(4, threads=128) as bx:
            s = T.alloc_shared((64, 64), "float16")
            o = T.alloc_shared((64, 64), "float16")
            for i in T.Pipelined(4, num_stages=2):
                T.copy(A[bx * 64:(bx + 1) * 64, i * 256 + load_at:i * 256 + load_at + 64], s)
                for r, c in T.Parallel(64, 64):
                    o[r, c] = s[r, c] * 2
                T.copy(o, B[bx * 64:(bx + 1) * 64, i * 256 + store_at:i * 256 + store_at + 64])
    return shifted


def test_a_tma_box_starting_off_16_bytes_is_refused():
    """A box starting off a 16-byte boundary stops the kernel with an illegal instruction (one H200, 2026-12-06):
    a tile loaded from rows that provably start there (6 bytes past one) gets a software pipeline, whose loads are
    cp.async; 16 bytes past one, warp-specialized plans stay; a staged tile stored there, by TMA in every plan
    (TileLang 0.1.15 emits ``tma_store`` in a software pipeline too), gets no plan."""
    off = pt_tvm.schedule(_shifted(3, 0), "h100")
    assert off.best.plan.style.value == "software_pipeline" and off.rejected.get("emission")
    (load,) = [t for t in off.best.graph.loop_stasks if t.reads and t.reads[0].buffer == "A"]
    assert load.attrs.get("box_off_boundary") == "1"
    on = pt_tvm.schedule(_shifted(8, 0), "h100")
    assert any(c.plan.style.value == "warp_specialized" for c in on.ranked)
    assert not any("box_off_boundary" in t.attrs for t in on.best.graph.stasks)
    with pytest.raises(NoValidPlan, match="emission: .* broke it, the first: .*illegal instruction"):
        pt_tvm.schedule(_shifted(0, 3), "h100")
    h100 = hw.get("h100")
    graph = pt_tvm.extract(_shifted(0, 3), h100)
    plan = software_pipelined(graph, h100, num_stages=2, threads=128, priority=Priority.PROGRAM)
    assert any("stores a tile of B whose rows start off 16-byte boundaries" in v.message
               for v in violations(plan, graph, h100))
