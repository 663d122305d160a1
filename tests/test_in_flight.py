"""A wgmma kept in flight: the Wait primitive on the asynchronous tensor core, verified and emitted."""
import re

import pytest
import tilelang

from pt_tvm import hw, templates
from pt_tvm.graph import Placement
from pt_tvm.passes import apply_plan, extract_stask_graph
from pt_tvm.plan import ExecutionPlan, PlanError, Wait
from pt_tvm.space import Priority, in_flight_variants, warp_specialized
from pt_tvm.verify import verify

SMALL = dict(batch=1, heads=4, kv_heads=4, seq_len=1024)


@pytest.fixture(scope="module")
def fa():
    vdev = hw.get("h100")
    func = templates.get("flash_attention").build(**SMALL)
    graph = extract_stask_graph(func, vdev)
    plan = warp_specialized(graph, vdev, consumer_wgs=2, depth=2, pipeline_stage={"V_shared": 1},
                            priority=Priority.PROGRAM)
    return vdev, func, graph, verify(plan, graph, vdev)


def _gemm(graph, a_scope):
    return next(t.id for t in graph.loop_stasks if t.op.value == "gemm" and t.attrs["a_scope"] == a_scope)


def test_variants_keep_only_shared_operand_gemms_in_flight(fa):
    vdev, _, graph, plan = fa
    qk, pv = _gemm(graph, "shared"), _gemm(graph, "fragment")
    variants = in_flight_variants(plan, graph)
    assert variants, "QK^T can overlap the sTasks that follow it"
    kept = {g for v in variants for g in v.in_flight()}
    assert qk in kept and pv not in kept
    for v in variants:
        verify(v, graph, vdev)


def test_verify_rejects_an_overlap_that_touches_the_accumulator(fa):
    vdev, _, graph, plan = fa
    qk = _gemm(graph, "shared")
    order = [a.stask for a in plan.program("consumer", graph, Placement.LOOP)]
    reader = next(s for s in order[order.index(qk) + 1:] if "acc_s" in graph.stask(s).read_buffers())
    late = order[-1]  # waiting at the end lets the softmax read acc_s while QK^T still writes it
    bad = ExecutionPlan(plan.graph, plan.target, plan.style, plan.roles, (*plan.steps, Wait(late, (qk,))),
                        plan.pipelines, plan.num_stages, plan.tile)
    with pytest.raises(PlanError, match=f"{reader} touches acc_s while gemm {qk} is still in flight"):
        verify(bad, graph, vdev)


def test_waiting_before_the_gemm_is_rejected(fa):
    vdev, _, graph, plan = fa
    qk = _gemm(graph, "shared")
    first = plan.program("consumer", graph, Placement.LOOP)[0].stask
    bad = ExecutionPlan(plan.graph, plan.target, plan.style, plan.roles, (*plan.steps, Wait(first, (qk,))),
                        plan.pipelines, plan.num_stages, plan.tile)
    with pytest.raises(PlanError, match="runs before it"):
        verify(bad, graph, vdev)


def test_emitted_cuda_issues_the_gemm_without_waiting_and_waits_where_the_plan_says(fa):
    vdev, func, graph, plan = fa
    variant = in_flight_variants(plan, graph)[0]
    (gemm, waiter), = variant.in_flight().items()
    tgt = vdev.tvm_target()
    with tilelang.transform.PassContext(config={"tl.enable_fast_math": True}), tgt:
        src = tilelang.lower(apply_plan(func, variant, vdev, graph), target=tgt).kernel_source
    assert "wait_wgmma<0>" in src
    # in the steady-state loop, the QK^T wgmma_ss is not followed by its own warpgroup_wait before
    # the explicit wait_wgmma: the softmax sTasks in between overlap it
    loop = src[src.index("for (int k_1"):]
    issue = loop.index("wgmma_ss<")
    explicit = loop.index("wait_wgmma<0>", issue)
    assert "warpgroup_wait<" not in loop[issue:explicit]
    assert re.search(r"warpgroup_reg_alloc<\d+>", src)
