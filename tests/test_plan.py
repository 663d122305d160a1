"""CPU tests of execution plans: searched plans pass ``verify`` for every template and target,
hand-broken plans are rejected by the right rule with a message naming the sTasks or the limit,
plans round-trip through JSON, and ``apply_plan`` refuses bad or foreign plans before codegen."""
from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest
from _util import built

import pt_tvm
from pt_tvm import hw
from pt_tvm.plan import Append, ExecutionPlan, PlanError, Style
from pt_tvm.search import NoValidPlan, SearchSpace, search
from pt_tvm.space import Priority, warp_specialized
from pt_tvm.verify import shared_bytes, verify, violations

TARGETS = ("h100", "a100", "mi300x")
SMALL_FA = {"batch": 1, "heads": 4, "kv_heads": 4, "seq_len": 512}
SMALL_GEMM = {"M": 512, "N": 512, "K": 512}

# (template, problem) variants; one PrimFunc per variant and tile, extracted for each target
VARIANTS = {
    "gemm": ("gemm", SMALL_GEMM),
    "gemm_rowsum": ("gemm_rowsum", SMALL_GEMM),
    "fa": ("flash_attention", SMALL_FA),
    "fa_causal": ("flash_attention", {**SMALL_FA, "causal": True}),
    "fa_gqa": ("flash_attention", {**SMALL_FA, "kv_heads": 2}),
    "fa_d64": ("flash_attention", {**SMALL_FA, "dim": 64}),
    "fa_d256": ("flash_attention", {**SMALL_FA, "dim": 256}),
}
# MI300X has 64 KB of LDS: it gets the template's smaller tiles
TILE = {"gemm": {}, "flash_attention": {}}
TILE_MI300 = {"gemm": {"block_M": 64, "block_N": 64, "block_K": 32},
              "flash_attention": {"block_M": 64, "block_N": 64, "threads": 128}}
SPACE = SearchSpace(random_orders=1)

_func = built


def _tile(variant: str, target: str) -> dict:
    template = VARIANTS[variant][0]
    family = "gemm" if template.startswith("gemm") else template
    tile = dict((TILE_MI300 if target == "mi300x" else TILE)[family])
    if variant == "fa_d256" and target != "mi300x":
        tile["block_N"] = 64  # 128x128 at d256 fits no plan (see test_d256_two_stages_overrun_shared_memory)
    return tile


def _rules(plan, graph, vdev) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for v in violations(plan, graph, vdev):
        out.setdefault(v.rule, []).append(v.message)
    return out


def _with_stage(plan: ExecutionPlan, stages: dict[str, int]) -> ExecutionPlan:
    steps = tuple(replace(s, stage=stages[s.stask]) if isinstance(s, Append) and s.stask in stages else s
                  for s in plan.steps)
    return replace(plan, steps=steps)


# ---------------------------------------------------------------- searched plans verify
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_searched_plans_verify(variant, target):
    template, problem = VARIANTS[variant]
    vdev = hw.get(target)
    tile = _tile(variant, target)
    graph = pt_tvm.extract(_func(template, **problem, **tile), vdev)
    if variant == "fa_d256" and target == "mi300x":
        # Q, K, V and O tiles of 64x256 fp16 are 128 KB: no plan fits in MI300X's 64 KB of LDS
        with pytest.raises(NoValidPlan) as err:
            search([graph], vdev, space=SPACE, tiles=[tile])
        assert {v.rule for v in err.value.violations} == {"shared_memory"}
        return
    result = search([graph], vdev, space=SPACE, tiles=[tile])
    assert result.ranked and result.best is result.ranked[0]
    # Hopper offers both, but a GEMM's main loop (loads and gemms only) warp-specialized only; the others only
    # T.Pipelined order/stage
    styles = {c.plan.style for c in result.ranked}
    hopper = {Style.WARP_SPECIALIZED} if template.startswith("gemm") else {Style.WARP_SPECIALIZED,
                                                                            Style.SOFTWARE_PIPELINE}
    assert styles == (hopper if target == "h100" else {Style.SOFTWARE_PIPELINE})
    for cand in result.ranked:
        assert verify(cand.plan, cand.graph, vdev) is cand.plan
    # the winner survives a JSON round trip unchanged and still verifies
    again = ExecutionPlan.from_json(result.best.plan.to_json())
    assert again == result.best.plan
    verify(again, graph, vdev)


# ---------------------------------------------------------------- hand-broken plans
@pytest.fixture(scope="module")
def h100():
    return hw.get("h100")


@pytest.fixture(scope="module")
def fa(h100):
    """FlashAttention d128, block 128x128 on H100, and a valid stage-0 warp-specialized plan of it."""
    graph = pt_tvm.extract(_func("flash_attention", **SMALL_FA, block_M=128, block_N=128), h100)
    plan = warp_specialized(graph, h100, consumer_wgs=2, depth=2, pipeline_stage={}, priority=Priority.PROGRAM)
    assert plan is not None and not violations(plan, graph, h100)
    return graph, plan


@pytest.fixture(scope="module")
def fa256(h100):
    return pt_tvm.extract(_func("flash_attention", **SMALL_FA, dim=256, block_M=128, block_N=128), h100)


def _pv(graph) -> str:
    """The PV gemm: the gemm that reads V_shared."""
    (pv,) = [t.id for t in graph.stasks if t.op.value == "gemm" and "V_shared" in t.read_buffers()]
    return pv


def test_pv_at_stage_one_without_reordering_breaks_a_dependence(fa, h100):
    graph, plan = fa
    pv = _pv(graph)
    v_readers = {t.id: 1 for t in graph.loop_stasks if "V_shared" in t.read_buffers()}
    assert set(v_readers) == {pv}
    broken = _with_stage(plan, v_readers)
    assert [a.stask for a in broken.appends] == [a.stask for a in plan.appends]  # order kept
    rules = _rules(broken, graph, h100)
    assert "dependence" in rules
    # the PV gemm of iteration i-1 now runs after this iteration's acc_o rescale / P cast that it must precede
    assert any(pv in m and "is broken" in m and re.search(r"\b(par_5|copy_3)\b", m) for m in rules["dependence"])
    with pytest.raises(PlanError, match="dependence"):
        verify(broken, graph, h100)


def test_pv_at_stage_one_with_list_scheduling_is_valid(fa, h100):
    """The same stage choice, with the order list-scheduled under the stage offsets, is accepted."""
    graph, _ = fa
    plan = warp_specialized(graph, h100, consumer_wgs=2, depth=2, pipeline_stage={"V_shared": 1},
                            priority=Priority.PROGRAM)
    assert plan is not None
    assert plan.append_of(_pv(graph)).stage == 1
    verify(plan, graph, h100)


@pytest.mark.parametrize("depth", [4, 6])
def test_too_many_stages_for_shared_memory(fa, h100, depth):
    graph, _ = fa
    plan = warp_specialized(graph, h100, consumer_wgs=2, depth=depth, pipeline_stage={}, priority=Priority.PROGRAM)
    rules = _rules(plan, graph, h100)
    assert list(rules) == ["shared_memory"]
    need = shared_bytes(plan, graph)
    over = need - h100.eu.smem_per_block
    assert over > 0
    (msg,) = rules["shared_memory"]
    assert f"needs {need} B" in msg and f"{over} B over" in msg and str(h100.eu.smem_per_block) in msg


def test_d256_two_stages_overrun_shared_memory(fa256, h100):
    plan = warp_specialized(fa256, h100, consumer_wgs=2, depth=2, pipeline_stage={}, priority=Priority.PROGRAM)
    rules = _rules(plan, fa256, h100)
    assert "shared_memory" in rules
    over = shared_bytes(plan, fa256) - h100.eu.smem_per_block
    assert any(f"{over} B over" in m for m in rules["shared_memory"])


def test_consumer_register_budget_too_small(fa, h100):
    graph, plan = fa
    small = replace(plan, roles=tuple(replace(r, max_nreg=64) if r.name == "consumer" else r for r in plan.roles))
    rules = _rules(small, graph, h100)
    assert list(rules) == ["registers"]
    assert any("role consumer" in m and "over its budget of 64" in m for m in rules["registers"])


def test_one_consumer_warpgroup_at_d256_runs_out_of_registers(fa256, h100):
    plan = warp_specialized(fa256, h100, consumer_wgs=1, depth=1, pipeline_stage={}, priority=Priority.PROGRAM)
    rules = _rules(plan, fa256, h100)
    assert "registers" in rules
    m = next(m for m in rules["registers"] if "role consumer" in m)
    need, over, budget = map(int, re.search(r"need ~(\d+) registers per thread, (\d+) over its budget of (\d+)",
                                            m).groups())
    assert need - budget == over > 0 and budget == plan.role("consumer").max_nreg


def test_too_many_warps(fa, h100):
    graph, plan = fa
    wide = replace(plan, roles=tuple(replace(r, warp_hi=r.warp_lo + 32) if r.name == "consumer" else r
                                     for r in plan.roles))
    rules = _rules(wide, graph, h100)
    threads = wide.num_warps * 32
    assert any(f"{threads} threads, {threads - 1024} over the 1024" in m for m in rules["threads"])


def test_missing_and_duplicated_stasks(fa, h100):
    graph, plan = fa
    missing = replace(plan, steps=tuple(s for s in plan.steps if not (isinstance(s, Append) and s.stask == "par_3")))
    assert _rules(missing, graph, h100) == {"coverage": ["sTask par_3 is appended 0 times (exactly once required)"]}
    twice = replace(plan, steps=plan.steps + (plan.append_of("par_3"),))
    assert _rules(twice, graph, h100) == {"coverage": ["sTask par_3 is appended 2 times (exactly once required)"]}
    extra = replace(plan, steps=plan.steps + (Append("ghost_0", "consumer", plan.append_of("par_3").seu),))
    assert any("ghost_0" in m for m in _rules(extra, graph, h100)["coverage"])
    with pytest.raises(PlanError, match="coverage"):
        verify(missing, graph, h100)


def test_cross_role_dependence_without_pipeline(fa, h100):
    graph, plan = fa
    # a fragment producer moved into the TMA warp: its consumers read registers of another role
    exp = next(t.id for t in graph.loop_stasks if t.sfu_ops and t.write_buffers() == {"acc_s"})
    rsum = next(t.id for t in graph.loop_stasks if t.attrs.get("reduce") == "sum")
    moved = replace(plan, steps=tuple(replace(s, role="producer") if isinstance(s, Append) and s.stask == exp
                                      else s for s in plan.steps))
    msgs = _rules(moved, graph, h100)["dependence"]
    assert f"RAW {exp} -> {rsum} on acc_s crosses roles producer -> consumer without a pipeline" in msgs
    # K's pipeline dropped: the TMA load and the QK gemm share K_shared with no barrier between them
    unpiped = replace(plan, pipelines=tuple(p for p in plan.pipelines if "K_shared" not in p.buffers))
    msgs = _rules(unpiped, graph, h100)["dependence"]
    assert any(m.startswith("RAW copy_1 -> gemm_0 on K_shared crosses roles producer -> consumer") for m in msgs)


def test_stage_offset_without_pipeline_buffer(fa, h100):
    graph, plan = fa
    rescale = next(t.id for t in graph.loop_stasks if t.read_buffers() == {"acc_o", "scores_scale"})
    staged = _with_stage(plan, {rescale: 1})  # the acc_o rescale touches no pipelined buffer
    msgs = _rules(staged, graph, h100)["stage"]
    assert any(m.startswith(f"sTask {rescale} has stage 1 but touches no pipeline buffer") for m in msgs)


def test_stage_outside_the_loop_is_rejected(fa, h100):
    graph, plan = fa
    msgs = _rules(_with_stage(plan, {"fill_0": 1}), graph, h100)["stage"]
    assert any("fill_0 is outside the loop" in m for m in msgs)


def test_plan_error_lists_every_violation(fa, h100):
    graph, plan = fa
    bad = _with_stage(replace(plan, roles=tuple(replace(r, max_nreg=64) if r.name == "consumer" else r
                                                for r in plan.roles)), {_pv(graph): 1})
    with pytest.raises(PlanError) as err:
        verify(bad, graph, h100)
    assert {v.rule for v in err.value.violations} >= {"dependence", "registers"}
    assert str(err.value).startswith("plan rejected:")


# ---------------------------------------------------------------- serialization
def test_json_round_trip(fa, h100):
    graph, plan = fa
    staged = warp_specialized(graph, h100, consumer_wgs=2, depth=2, pipeline_stage={"V_shared": 1},
                              priority=Priority.TENSOR_FIRST, tile={"block_M": 128, "block_N": 128})
    for p in (plan, staged, replace(staged, row_split=True)):
        text = p.to_json()
        again = ExecutionPlan.from_json(text)
        assert again == p
        assert again.to_json() == text
        assert json.loads(text)["format"] == "pt-tvm.plan/1"
        assert again.waits == p.waits and again.pipelines == p.pipelines
    older = {k: v for k, v in staged.to_dict().items() if k != "row_split"}  # a plan saved before row_split
    assert ExecutionPlan.from_dict(older) == staged


@pytest.mark.parametrize("text", [
    "not json at all",
    "",
    "[]",
    "null",
    "42",
    '"pt-tvm.plan/1"',
    "{}",
    '{"format": "pt-tvm.graph/1"}',
    '{"format": "pt-tvm.plan/1"}',
    '{"format": "pt-tvm.plan/1", "graph": "g", "target": "h100", "style": "nonsense", "roles": [], '
    '"steps": [], "pipelines": [], "num_stages": 1}',
    '{"format": "pt-tvm.plan/1", "graph": "g", "target": "h100", "style": "warp_specialized", '
    '"roles": [{"name": "x"}], "steps": [], "pipelines": [], "num_stages": 1}',
    '{"format": "pt-tvm.plan/1", "graph": "g", "target": "h100", "style": "warp_specialized", "roles": [], '
    '"steps": [{"append": {"stask": "a", "role": "r", "seu": "warp_drive"}}], "pipelines": [], "num_stages": 1}',
    '{"format": "pt-tvm.plan/1", "graph": "g", "target": "h100", "style": "warp_specialized", "roles": [], '
    '"steps": [7], "pipelines": [], "num_stages": "two"}',
], ids=lambda t: t[:30] or "empty")
def test_from_json_of_garbage_raises_plan_error(text):
    with pytest.raises(PlanError):
        ExecutionPlan.from_json(text)


# ---------------------------------------------------------------- apply_plan refuses
@pytest.fixture
def no_codegen(monkeypatch):
    """Make any TileLang code generation fail the test."""
    import tilelang

    def boom(*args, **kwargs):
        raise AssertionError("code generation was reached with a plan that should have been refused")

    monkeypatch.setattr(tilelang, "lower", boom)
    monkeypatch.setattr(tilelang, "compile", boom)


def test_apply_plan_refuses_a_bad_plan_before_codegen(fa, h100, no_codegen):
    from pt_tvm.compiler import lower
    from pt_tvm.passes import apply_plan

    graph, plan = fa
    func = _func("flash_attention", **SMALL_FA, block_M=128, block_N=128)
    bad = _with_stage(plan, {_pv(graph): 1})
    with pytest.raises(PlanError, match="dependence"):
        apply_plan(func, bad, h100)
    with pytest.raises(PlanError, match="dependence"):
        lower(func, "h100", plan=bad)
    too_deep = warp_specialized(graph, h100, consumer_wgs=2, depth=4, pipeline_stage={}, priority=Priority.PROGRAM)
    with pytest.raises(PlanError, match="shared_memory"):
        apply_plan(func, too_deep, h100, graph)


def test_apply_plan_refuses_a_plan_for_another_kernel(fa, no_codegen):
    from pt_tvm.compiler import lower
    from pt_tvm.passes import ScheduleMismatch, apply_plan

    _, plan = fa
    gemm = _func("gemm", **SMALL_GEMM)
    with pytest.raises(ScheduleMismatch, match="flash_attention"):
        apply_plan(gemm, plan, "h100")
    with pytest.raises(ScheduleMismatch):
        lower(gemm, "h100", plan=plan)
