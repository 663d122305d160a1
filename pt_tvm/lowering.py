"""What pt-tvm knows of how TileLang 0.1.15 lowers a plan: base stages, named barriers, wgmma waits, pass configs.

These are facts of TileLang's ``MaterializeWSSchedule`` and software pipeliner that the
plan IR does not say by itself, shared by the rules (:mod:`pt_tvm.verify`), the cost model
and emission (:mod:`pt_tvm.passes.apply`).
"""
from __future__ import annotations

from typing import Any

from tilelang.transform import PassConfigKey

from .graph import Placement, STask, STaskGraph
from .hw import SEUKind, VDevice
from .plan import ExecutionPlan, Style

__all__ = ["base_stage", "NAMED_BARRIERS", "MAX_HANDOFF_WARPGROUPS", "handoff_barriers", "wgmma_waits",
           "emission_configs", "FULL_ROW_POLICY", "UNROLL_LOOP", "wgmma_columns", "splits_rows", "wgmma_width",
           "reuses_dead_shared", "carried_gemms"]

FULL_ROW_POLICY = "1"  # tl GemmWarpPolicy.FullRow, as extraction records a gemm's policy
UNROLL_LOOP = "tl.UnrollLoop"  # TVM's loop-unrolling pass config (not among TileLang's PassConfigKey)


def wgmma_columns(m: int, n: int, warpgroups: int, full_row: bool) -> int:
    """The columns of each warpgroup's wgmma for an ``m x n`` gemm tile on ``warpgroups`` warpgroups, as
    TileLang 0.1.15 partitions it on Hopper (``GemmWarpPolicyNode::computeWarpPartition``, warps counted in
    whole warpgroups along the rows): ``FullRow`` stacks the most warpgroups on the rows that leave each a
    multiple of 16 rows per warp, the rest split the columns; ``Square`` takes the split whose rows and
    columns per warp (16 x 8 elements a unit) are closest to the tile's own aspect, fewest on the rows on a tie.
    128x256 on two: 256 columns with FullRow, 128 with Square; 256x128 on two: 128 either way."""
    warps = 4 * warpgroups
    if full_row:
        rows = next((r for r in range(warps, 3, -4) if m % (16 * r) == 0), 4)
    else:
        splits = [r for r in range(4, warps + 1, 4) if warps % r == 0 and r <= m // 16 and warps // r <= n // 8]
        rows = min(splits, key=lambda r: abs((m / (16 * r)) / (n / (8 * (warps // r))) - m / n), default=4)
    return n // (warps // rows)


def splits_rows(plan: ExecutionPlan, t: STask) -> bool:
    """Whether gemm sTask ``t``'s tile is split over its warpgroups by rows only (FullRow): by its template's
    policy or by the plan's ``row_split``."""
    return plan.row_split or t.attrs.get("policy") == FULL_ROW_POLICY


def wgmma_width(plan: ExecutionPlan, t: STask, warpgroups: int) -> int:
    """The columns of each of ``warpgroups`` warpgroups' wgmmas for gemm sTask ``t`` under ``plan``
    (:func:`wgmma_columns`; 256 at most, wgmma's widest N)."""
    return min(256, wgmma_columns(t.tile_shape[0], t.tile_shape[1], warpgroups, splits_rows(plan, t)))


def base_stage(plan: ExecutionPlan, graph: STaskGraph, role: str) -> int:
    """The stage at which MaterializeWSSchedule runs a role's loop statements that touch no pipeline
    buffer (wgmma waits, handoff barriers): the lowest stage of the role's pipeline spans (0 without)."""
    piped = {b for p in plan.pipelines if p.scope == "loop" for b in p.buffers}
    return min((plan.append_of(t.id).stage for t in graph.loop_stasks if plan.append_of(t.id).role == role
                and (t.read_buffers() | t.write_buffers()) & piped), default=0)


# Named barriers a handoff may take: one per warpgroup, counted down from the last of the 16 hardware
# barriers; TileLang 0.1.15 numbers its own from 3 upwards (thread_sync_types.h), and the emitted kernel
# is checked for a collision (pt_tvm.emitted.named_barrier_clash).
NAMED_BARRIERS = 16
MAX_HANDOFF_WARPGROUPS = 4


def handoff_barriers(plan: ExecutionPlan, vdev: VDevice) -> dict[str, tuple[int, ...]]:
    """Role -> the named-barrier ids of its warpgroups' turns (warpgroup ``w`` waits on the ``w``-th)."""
    out, top = {}, NAMED_BARRIERS
    for h in plan.handoffs:
        n = plan.role(h.role).warps // vdev.eu.warpgroup_warps
        out[h.role] = tuple(range(top - n, top))
        top -= n
    return out


def carried_gemms(plan: ExecutionPlan, graph: STaskGraph) -> dict[str, list[str]]:
    """Role -> its loop's gemms, in program order, where the plan carries them into the next step
    (``carry_gemms``): each step waits for all wgmma groups but the step's own (one per gemm) before it releases
    the stages of the step before; empty for other plans."""
    if not plan.carry_gemms:
        return {}
    out = {r.name: [a.stask for a in plan.program(r.name, graph, Placement.LOOP) if a.seu == SEUKind.TENSOR_CORE]
           for r in plan.roles}
    return {r: gemms for r, gemms in out.items() if gemms}


def wgmma_waits(plan: ExecutionPlan, graph: STaskGraph) -> dict[str, tuple[int, ...]]:
    """In-flight gemm -> the wgmma groups that may stay in flight at its wait, as the stage offsets
    (from the role's base stage) of the gemms that issue them after it.

    Its ``wait_wgmma<N>`` runs at the base stage: in loop step ``k`` the group of a gemm ``o`` stages
    behind exists once ``k >= o``, so ``N`` counts the offsets ``<= k``. wgmma groups complete in
    issue order; a synchronous tensor-core sTask drains them all.
    """
    in_flight = plan.in_flight()
    out: dict[str, tuple[int, ...]] = {}
    for role in plan.roles:
        base = base_stage(plan, graph, role.name)
        pending: list[str] = []  # in-flight gemms of the step not yet waited for, oldest first
        for a in plan.program(role.name, graph, Placement.LOOP):
            for gemm in [g for g in pending if in_flight[g] == a.stask]:
                later = pending[pending.index(gemm) + 1:]
                out[gemm] = tuple(sorted(plan.append_of(g).stage - base for g in later))
                pending = later
            if a.seu == SEUKind.TENSOR_CORE:
                pending = [*pending, a.stask] if a.stask in in_flight else []
    return out


def reuses_dead_shared(plan: ExecutionPlan, graph: STaskGraph) -> bool:
    """Whether the plan's kernel lets shared buffers whose live ranges do not overlap share bytes (an
    epilogue's staging tile over the loop's stages). TileLang's merge does so for software pipelines; a
    warp-specialized kernel is lowered with its aggressive merge (:func:`emission_configs`) unless it is
    persistent, where the producer fills the next tile's stages while the consumers' epilogue runs, or its
    consumers write a shared buffer inside the loop: the merge reads the consumers' code alone and gave such a
    tile the bytes of a stage the producer was already refilling (chunk_scan's heads loop staging each head's
    output, wrong on an H200, 2026-11-28)."""
    if plan.style == Style.SOFTWARE_PIPELINE:
        return True
    loads = {a.stask for a in plan.appends if a.seu == SEUKind.TMA}
    return not plan.persistent and not any(
        graph.buffers[b].scope == "shared" for t in graph.stasks
        if t.placement == Placement.LOOP and t.id not in loads for b in t.write_buffers() if b in graph.buffers)


def emission_configs(plan: ExecutionPlan, graph: STaskGraph, vdev: VDevice) -> dict[str, Any]:
    """TileLang pass configs the plan's kernel must be lowered with.

    * a non-persistent warp-specialized plan merges shared memory aggressively
      (``tl.enable_aggressive_shared_memory_merge``): TileLang's default merge keeps every
      buffer of a warp-specialized kernel apart, this one follows live ranges, and its
      ThreadSync sees the merged buffer, so the epilogue's first write to a reused byte waits
      for the consumers' last reads of the stages;
    * a software-pipelined plan on a chip where TileLang warp-specializes by default turns
      that off (``tl.disable_warp_specialized``): loads become cp.async, all warps compute;
    * a cp.async pipeline over a run-time trip count (causal loops) needs its epilogue's
      wait-group loop unrolled, or TileLang 0.1.15's codegen meets a run-time wait count.
    """
    out: dict[str, Any] = {}
    if plan.style != Style.SOFTWARE_PIPELINE:
        if reuses_dead_shared(plan, graph):
            out[PassConfigKey.TL_ENABLE_AGGRESSIVE_SHARED_MEMORY_MERGE.value] = True
        return out
    if "warp_specialization" in vdev.features:
        out[PassConfigKey.TL_DISABLE_WARP_SPECIALIZED.value] = True
    if "cp_async" in vdev.features and not graph.loop.extent.isdigit() and any(a.stage for a in plan.appends):
        out[UNROLL_LOOP] = {"explicit_unroll": True}
    return out
