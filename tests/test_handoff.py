"""Consumer warpgroups taking turns on the tensor cores (Handoff, FlashAttention-3's ping-pong) and every
wgmma kept in flight: verified, priced, searched and visible in the emitted CUDA."""
import re
import shutil

import pytest
import tilelang
from _util import compiles_without_spills

from benchmarks.experiments.handoff import gemm_first_order
from pt_tvm import cost, hw, templates
from pt_tvm.emitted import named_barrier_clash
from pt_tvm.lowering import wgmma_waits
from pt_tvm.passes import apply_plan, extract_stask_graph
from pt_tvm.plan import ExecutionPlan, Handoff, PlanError
from pt_tvm.space import (
    Priority,
    handoff_variants,
    overlapped,
    software_pipelined,
    warp_specialized,
)
from pt_tvm.verify import verify

SMALL = dict(batch=1, heads=4, kv_heads=4, seq_len=1024)


def _fa(dim=128, consumer_wgs=2, block_N=128, **problem):
    vdev = hw.get("h100")
    func = templates.get("flash_attention").build(**{**SMALL, **problem}, dim=dim, block_N=block_N,
                                                  threads=128 * consumer_wgs)
    graph = extract_stask_graph(func, vdev)
    base = warp_specialized(graph, vdev, consumer_wgs=consumer_wgs, depth=2, pipeline_stage={"V_shared": 1},
                            priority=Priority.TENSOR_FIRST)
    return vdev, func, graph, gemm_first_order(base, graph)


@pytest.fixture(scope="module")
def fa():
    return _fa()


def _ids(graph, prefix):
    return [t.id for t in graph.loop_stasks if t.id.startswith(prefix + "_")]


def test_turns_with_every_gemm_in_flight_verify_and_round_trip(fa):
    vdev, _, graph, base = fa
    turns, both = handoff_variants(base, graph, vdev)
    qk, pv = _ids(graph, "gemm")
    assert turns.handoffs == (Handoff("consumer", qk, pv),) and not turns.in_flight()
    assert both.handoffs == turns.handoffs and set(both.in_flight()) == {qk, pv}
    for p in (turns, both):
        verify(p, graph, vdev)
        assert ExecutionPlan.from_json(p.to_json()) == p
    assert f"its warpgroups take turns issuing {qk} .. {pv}" in both.describe(graph)


def test_wait_counts_let_the_later_gemm_stay_in_flight(fa):
    """S = QK^T is waited for with P @ V (one stage behind) still in flight: wait_wgmma<1> once P @ V is issued."""
    vdev, _, graph, base = fa
    plan = overlapped(base, graph, "consumer")
    qk, pv = _ids(graph, "gemm")
    assert wgmma_waits(plan, graph) == {qk: (1,), pv: ()}


@pytest.mark.parametrize("case, match", [
    ("one_warpgroup", "not 2 to 4 whole 4-warp warpgroups"),
    ("no_gemm", "issues no tensor-core sTask"),
    ("reversed", "comes after"),
    ("unknown_role", "the plan has no such role"),
    ("twice", "a role takes one handoff"),
])
def test_bad_handoffs_are_rejected(fa, case, match):
    vdev, _, graph, base = fa
    qk, pv = _ids(graph, "gemm")
    par = _ids(graph, "par")
    if case == "one_warpgroup":
        vdev, _, graph, base = _fa(consumer_wgs=1, block_N=64)
        bad = base.extended(Handoff("consumer", qk, pv))
    else:
        bad = base.extended(*{"no_gemm": [Handoff("consumer", par[1], par[2])],
                              "reversed": [Handoff("consumer", pv, qk)],
                              "unknown_role": [Handoff("warpgroups", qk, pv)],
                              "twice": [Handoff("consumer", qk, pv)] * 2}[case])
    with pytest.raises(PlanError, match=match):
        verify(bad, graph, vdev)


def test_handoff_needs_a_warp_specialized_plan(fa):
    vdev, _, graph, _ = fa
    plan = software_pipelined(graph, vdev, num_stages=2, threads=256, priority=Priority.PROGRAM)
    qk, pv = _ids(graph, "gemm")
    with pytest.raises(PlanError, match=r"\[emission\] handoff in role block: turns between warpgroups need a "
                                        r"warp-specialized plan"):
        verify(plan.extended(Handoff("block", qk, pv)), graph, vdev)


def test_turns_and_in_flight_gemms_are_rejected_when_registers_run_out():
    """Head dim 256 with 128-key blocks: S, P and O of 128 rows need ~264 registers per consumer thread."""
    vdev, _, graph, base = _fa(dim=256, block_N=128)
    for plan in handoff_variants(base, graph, vdev):
        with pytest.raises(PlanError, match=r"\[registers\] role consumer: fragments need ~\d+ registers"):
            verify(plan, graph, vdev)


def test_cost_model_ranks_turns_with_every_gemm_in_flight_first(fa):
    """As measured on one H100 (benchmarks/results/2026-11-22-h100-attention/handoff.json, FA fp16 D128 S4096):
    turns + every gemm in flight 630 TFLOP/s, every gemm in flight 573, synchronous 568."""
    vdev, _, graph, base = fa
    _, both = handoff_variants(base, graph, vdev)
    secs = [cost.estimate(p, graph, vdev).seconds for p in (both, overlapped(base, graph, "consumer"), base)]
    assert secs == sorted(secs) and secs[0] < secs[2] * 0.9


def test_search_offers_turns_and_ranks_them_first_for_two_warpgroups():
    from pt_tvm.compiler import schedule_template

    result, _, _ = schedule_template("flash_attention", hw.get("h100"), params=dict(SMALL))
    ws = [c for c in result.ranked if c.plan.style.value == "warp_specialized"]
    two = [c for c in ws if c.plan.role("consumer").warps == 8]
    assert two[0].plan.handoffs and len(two[0].plan.in_flight()) == 2
    assert any(c.plan.handoffs and not c.plan.in_flight() for c in two)  # turns alone are offered too
    assert not any(c.plan.handoffs for c in ws if c.plan.role("consumer").warps == 4)


@pytest.fixture(scope="module")
def emitted(fa):
    vdev, func, graph, base = fa
    _, both = handoff_variants(base, graph, vdev)
    tgt = vdev.tvm_target()
    with tilelang.transform.PassContext(config={"tl.enable_fast_math": True}), tgt:
        return tilelang.lower(apply_plan(func, both, vdev, graph), target=tgt).kernel_source


def test_emitted_cuda_takes_turns_on_named_barriers(emitted):
    src = emitted
    # warpgroup 0 of the consumers (the second warpgroup of the block) opens its own first turn
    assert re.search(r"if \(tl::get_warp_group_idx\(\) == 1\) \{\s*tl::__named_barrier_arrive\(14, 256\);", src)
    loop = src[src.index("for (int k_1"):]
    sync = re.search(r"__sync_thread_partial\(\(tl::get_warp_group_idx\(\) \+ 13\), 256\)", loop)
    hand_on = re.search(r"__named_barrier_arrive\(\(\(tl::get_warp_group_idx\(\) & 1\) \+ 14\), 256\)", loop)
    assert sync and hand_on
    issued = [m.start() for m in re.finditer(r"wgmma_(ss|rs)<", loop)]
    assert sync.start() < issued[0] < issued[1] < hand_on.start()  # both gemms issued inside the turn
    assert named_barrier_clash(src, [14, 15]) == []
    assert named_barrier_clash(src, [3]), "TileLang's own consumer sync (barrier 3) is seen"


def test_compile_refuses_a_kernel_whose_own_syncs_take_a_handoff_barrier(fa, emitted):
    """check_emitted (run by every compile) knows the barriers apply_plan gave the handoff."""
    from pt_tvm.emitted import EmissionError
    from pt_tvm.passes import check_emitted

    vdev, func, graph, base = fa
    planned = apply_plan(func, handoff_variants(base, graph, vdev)[1], vdev, graph)
    check_emitted(planned, emitted)
    with pytest.raises(EmissionError, match="named barrier 15, which a handoff between warpgroups takes"):
        check_emitted(planned, emitted.replace("__sync_thread_partial(3, 256)", "__sync_thread_partial(15, 256)"))


def test_emitted_cuda_waits_with_a_group_in_flight(emitted):
    src = emitted
    loop_at = src.index("for (int k_1")
    loop = src[loop_at:]
    hand_on = loop.index("__named_barrier_arrive")
    assert "warpgroup_wait<" not in loop[:hand_on]  # neither gemm waits right after its issue
    one, zero = loop.index("wait_wgmma<1>"), loop.index("wait_wgmma<0>")
    assert hand_on < one < loop.index("scores_max_clear") and one < zero
    assert "wait_wgmma<1>" not in src[:loop_at]  # the first step has no P @ V in flight yet: it waits for all
    tail = src[src.rindex("wgmma_rs<"):]
    assert "wait_wgmma<0>" in tail.split("__sync_thread_partial")[0]  # the last P @ V is drained after the loop


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_emitted_cuda_compiles_without_spills(emitted, tmp_path):
    compiles_without_spills(emitted, tmp_path, "fa")


@pytest.mark.gpu
@pytest.mark.parametrize("problem", [dict(dim=128), dict(dim=128, causal=True), dict(dim=64),
                                     dict(dim=256, block_N=64), dict(dim=128, dtype="bfloat16")])
def test_gpu_turns_with_every_gemm_in_flight(problem):
    """The FA3-shaped plan (turns + every gemm in flight) against the float32 reference on the local GPU."""
    import torch

    from pt_tvm.measure import REL_TOL, rel_err

    t = templates.get("flash_attention")
    vdev = hw.from_device()
    problem = {**SMALL, "seq_len": 2048, **problem}
    block_N = problem.pop("block_N", 128)
    func = t.build(**problem, block_N=block_N, threads=256)
    graph = extract_stask_graph(func, vdev)
    base = gemm_first_order(warp_specialized(graph, vdev, consumer_wgs=2, depth=2, pipeline_stage={"V_shared": 1},
                                        priority=Priority.TENSOR_FIRST), graph)
    _, both = handoff_variants(base, graph, vdev)
    kernel = t.compile(apply_plan(func, both, vdev, graph), vdev.tvm_target())
    full = t.resolve(**problem, block_N=block_N, threads=256)[0]
    for seed in (0, 1):
        inputs = t.make_inputs(full, "cuda", torch.Generator("cuda").manual_seed(seed))
        err = rel_err(kernel(*inputs), t.reference(*inputs, **full))
        print(f"REL_ERR fa_turns_{problem} seed {seed}: {err:.3e}")
        assert err < REL_TOL[problem.get("dtype", "float16")]
