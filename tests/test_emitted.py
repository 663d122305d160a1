"""pt_tvm.emitted: the cp.async waits of TileLang's emitted software pipelines, checked against the plan."""
from __future__ import annotations

import pytest
from _util import RACY_LOOP, chunk_scan_plan

from pt_tvm.emitted import EmissionError, cp_async_hazards

_KERNEL = """\
extern "C" __global__ void __launch_bounds__(128, 1) k_kernel(const float* __restrict__ A, const float* __restrict__ B) {
  extern __shared__ __align__(1024) uchar buf_dyn_shmem[];
  void* a_shared = ((void*)((char*)buf_dyn_shmem + 0));
  void* b_shared = ((void*)((char*)buf_dyn_shmem + 1024));
  float acc = 0.0f;
  for (int k = 0; k < n; ++k) {
    tl::cp_async_wait<WAIT>();
    __syncthreads();
    acc += ((float*)a_shared)[threadIdx.x] * ((float*)b_shared)[threadIdx.x];
    tl::cp_async_gs<16>((&(((float*)b_shared)[(((int)threadIdx.x) * 4)])), (&(B[k * 512])));
    tl::cp_async_commit();
    tl::cp_async_gs<16>((&(((float*)a_shared)[(((int)threadIdx.x) * 4)])), (&(A[k * 512])));
    tl::cp_async_commit();
  }
}
"""  # noqa: E501  (a kernel signature as TileLang emits it, on one line)


def test_a_reader_ahead_of_its_load_needs_the_last_group():
    """Readers first, loads after, one stage: ``a`` (the last group) needs wait<0>; wait<1> leaves it in flight."""
    one_stage = {"a_shared": 1, "b_shared": 1}
    found = cp_async_hazards(_KERNEL.replace("WAIT", "1"), one_stage)
    assert len(found) == 1 and found[0].startswith("a_shared (loaded in cp.async group 1 of 2")
    assert "needs cp_async_wait<0>" in found[0]
    assert cp_async_hazards(_KERNEL.replace("WAIT", "0"), one_stage) == []
    # a whole iteration between
    assert cp_async_hazards(_KERNEL.replace("WAIT", "1"), {"a_shared": 2, "b_shared": 2}) == []
    assert len(cp_async_hazards(_KERNEL.replace("WAIT", "3"), {"a_shared": 2, "b_shared": 2})) == 1
    assert len(cp_async_hazards(_KERNEL.replace("WAIT", "4"), {"a_shared": 2, "b_shared": 2})) == 2


def test_waits_and_commits_are_required():
    assert cp_async_hazards(_KERNEL.replace("    tl::cp_async_wait<WAIT>();\n", ""), {"a_shared": 1}) == [
        "the loop reads a_shared but waits for no cp.async group"]
    no_commit = _KERNEL.replace("WAIT", "0").rsplit("    tl::cp_async_commit();\n", 1)
    assert "never committed" in cp_async_hazards("".join(no_commit), {"a_shared": 1})[0]


def test_lowering_the_measured_race_raises():
    """chunk_scan's racy order (the plan rule switched off) lowers on the CPU into a kernel the check refuses,
    naming the buffers; the search's own plan for it lowers clean."""
    import pt_tvm.verify as verify_module
    from pt_tvm import hw
    from pt_tvm.compiler import lower_planned, schedule_template
    from pt_tvm.passes import apply_plan
    from pt_tvm.templates import get

    plan, graph = chunk_scan_plan(RACY_LOOP)
    problem, _ = get("chunk_scan").resolve(seqlen=1024)
    target = hw.get("h200").tvm_target()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(verify_module, "_check_cp_async_order", lambda *a: [])
        func = apply_plan(get("chunk_scan").build(**problem, **plan.tile), plan, target, graph)
    with pytest.raises(EmissionError, match=r"cb_shared .*cp_async_wait<1>.*needs cp_async_wait<0>"):
        lower_planned(func, target)
    result, problem, build = schedule_template("chunk_scan", "h200", params={"seqlen": 1024})
    assert "__global__" in lower_planned(build(), target).kernel_source
