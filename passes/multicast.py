"""Two CTAs a cluster sharing their loop's loads by TMA multicast: the emission of a plan's ``multicast``.

A plan with ``multicast`` set runs its output tiles in pairs, neighbours along one launch index, each pair on the
two CTAs of a cluster (:mod:`pt_tvm.passes.apply` walks the pairs). The loop's copies whose global tile does not
vary along that index read the same bytes in both CTAs: the cluster's first CTA loads them once into both (TMA
multicast; TileLang's ``tma_copy(cluster_mask=0b11)`` issues it from the lowest rank and leaves the other CTA
nothing to issue, both expecting the bytes on their own barrier), which halves their reads from L2. A stage of such
a copy is then written into both CTAs by one producer, so it may be refilled only when both CTAs' consumers have
released it: every release of that pipeline also arrives on the other CTA's barrier, whose count doubles. The
cluster synchronizes after the barriers' initialization (a remote arrive or a multicast must not reach a barrier
not yet set up) and before it exits (nor one whose CTA has left).

TileLang 0.1.15's own warp specialization declines cluster kernels; this edits the schedule pt-tvm materialized
(:mod:`pt_tvm.passes.materialize`), as CUTLASS's and the hand-written probe's kernels do it
(``benchmarks/experiments/multicast_gemm.py``).
"""
from __future__ import annotations

from typing import Sequence

from tilelang import tvm
from tvm import tirx

from pt_tvm.plan import CLUSTER

from .ir import STAGE_RELEASE, op_call, text

__all__ = ["clustered"]

_ROOT = "tilelang_root"
_TMA_COPY = "tl.tileop.tma_copy"


def clustered(func: tirx.PrimFunc, buffers: Sequence[str]) -> tirx.PrimFunc:
    """``func`` (its schedule materialized) launched in clusters of :data:`CLUSTER` CTAs, the TMA copies into the
    shared ``buffers`` multicast into both and their pipelines' stages released in both; ValueError where the
    kernel has no such copy."""
    fulls, empties = {}, {}

    def copy(n: tirx.Evaluate) -> tirx.Stmt | None:
        c = op_call(n, _TMA_COPY)
        if c is None:
            return None
        dst = c.args[1]
        if not (isinstance(dst, tirx.Call) and isinstance(dst.args[0], tirx.BufferLoad)
                and text(dst.args[0].buffer.name) in buffers):
            return None
        full = c.annotations["barrier"].buffer
        fulls[full.data] = full
        return tirx.Evaluate(tirx.Call(c.dtype, c.op, c.args, {**dict(c.annotations),
                                                                "cluster_mask": tirx.IntImm("int32", 2**CLUSTER - 1)}))

    body = tirx.stmt_functor.ir_transform(func.body, None, copy, ["tirx.Evaluate"])
    if not fulls:
        raise ValueError(f"multicast: no TMA copy into {sorted(buffers)} in the materialized kernel")
    for full in fulls.values():  # MaterializeWSSchedule names a pipeline's barriers <pipeline>_full / _empty
        name = text(full.data.name)
        if not name.endswith("_full"):
            raise ValueError(f"multicast: the copies' barrier {name} is not a pipeline's full barrier")
        empties[name[:-len("_full")] + "_empty"] = None

    def release(n: tirx.Evaluate) -> tirx.Stmt | None:
        c = op_call(n, STAGE_RELEASE)
        if c is None:
            return None
        barrier = c.args[0]
        if not (isinstance(barrier, tirx.BufferLoad) and text(barrier.buffer.data.name) in empties):
            return None
        empties[text(barrier.buffer.data.name)] = barrier.buffer.data
        peer = tirx.bitwise_xor(_intrin("int32", "tl.block_rank_in_cluster"), 1)
        remote = tirx.call_intrin("handle", tvm.ir.Op.get("tl.ptx_arrive_cluster_barrier"), barrier, peer)
        return tirx.SeqStmt([n, tirx.Evaluate(remote)])

    body = tirx.stmt_functor.ir_transform(body, None, release, ["tirx.Evaluate"])
    missing = sorted(k for k, v in empties.items() if v is None)
    if missing:
        raise ValueError(f"multicast: no consumer releases {missing} in the materialized kernel")
    doubled = {v: None for v in empties.values()}

    def root(n: tirx.SBlock) -> tirx.Stmt | None:
        if text(n.name_hint) != _ROOT:
            return None
        ann = dict(n.annotations)
        ann["barrier_init"] = {var: [c * CLUSTER for c in counts] if var in doubled else counts
                               for var, counts in ann["barrier_init"].items()}
        ann["cluster_dims"] = [CLUSTER, 1, 1]
        sync = tirx.Evaluate(_intrin("void", "tl.cluster_sync"))
        return tirx.SBlock(n.iter_vars, n.reads, n.writes, n.name_hint, tirx.SeqStmt([sync, n.body, sync]),
                           n.init, n.alloc_buffers, n.match_buffers, ann)

    body = tirx.stmt_functor.ir_transform(body, None, root, ["tirx.SBlock"])
    return func.with_body(body, span=func.span)


def _intrin(dtype: str, name: str) -> tirx.PrimExpr:
    return tirx.call_intrin(dtype, tvm.ir.Op.get(name))
