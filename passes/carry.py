"""Gemms carried into the next loop step: the emission of a plan's ``carry_gemms``.

TileLang's ``MaterializeWSSchedule`` releases a pipeline stage in the loop step that waited for it, so a consumer
that reads a stage with wgmmas waits for them (``wait_wgmma<0>``) before the release, and the tensor cores idle
from its last wgmma's end to its next step's first issue. CUTLASS's mainloop instead waits for all but the step's
own wgmmas and releases the stage of the step before. Here the schedule is materialized in pt-tvm (the same
passes TileLang would run up to it, in its order; TileLang's own lowering then finds no schedule left to
materialize), and each consumer loop step of the carried roles is rewritten: its gemms issued without a wait,
then ``wait_wgmma<gemms>``, then the previous step's releases (from the second step on); its last step, peeled
after the loop, waits for every group and releases its own stages too.
"""
from __future__ import annotations

from typing import Any, Mapping

import tilelang
import tilelang.language as T
from tilelang import tvm
from tvm import tirx

from .ir import op_name

__all__ = ["carried", "GEMM_OPS", "WG_WAIT"]

GEMM_OPS = ("tl.tileop.gemm", "tl.tileop.wgmma_gemm")
WG_WAIT = "wg_wait"  # gemm annotation: how many wgmma groups may stay in flight after it (-1: no wait)
_RELEASE = "tirx.ptx_arrive_barrier"
_FENCE = tvm.ir.Op.get("tl.warpgroup_fence_operand")  # T.warpgroup_fence_operand, outside a builder


def carried(func: tirx.PrimFunc, target: Any, configs: Mapping[str, Any], registers: Mapping[str, int]
            ) -> tirx.PrimFunc:
    """``func`` (carrying a ``WSSchedule``) with its schedule materialized for ``target`` under pass ``configs`` and
    every consumer loop that runs gemms carried; ``registers``: the 32-bit registers a thread holds of each
    carried gemm's accumulator (by buffer name), fenced after the last wait as TileLang fences them after a
    gemm's own wait."""
    mod = tvm.IRModule({"main": func})
    with target, tvm.transform.PassContext(config=dict(configs)):
        for p in (tirx.transform.BindTarget(target),
                  tilelang.transform.MaterializeKernelLaunch(lower_thread_binding=True, default_threads=128),
                  tilelang.cuda.transform.AnnotateDeviceBoundTmaCopies(), tilelang.transform.LetInline(),
                  tilelang.cuda.transform.MaterializeWSSchedule()):
            mod = p(mod)
    out = mod["main"]
    rewritten = []

    def visit(n: tirx.Stmt) -> tirx.Stmt | None:
        if isinstance(n, tirx.For):
            new = _carry_loop(n, registers)
            if new is not None:
                rewritten.append(n.loop_var.name)
                return new
        return None

    body = tirx.stmt_functor.ir_transform(out.body, None, visit, ["tirx.For"])
    if not rewritten:
        raise ValueError("carry_gemms: no consumer loop of gemms and stage releases found in the materialized kernel")
    return out.with_body(body, span=out.span)


def _call(s: tirx.Stmt) -> tirx.Call | None:
    return s.value if isinstance(s, tirx.Evaluate) and isinstance(s.value, tirx.Call) else None


def _is_gemm(s: tirx.Stmt) -> bool:
    c = _call(s)
    return c is not None and isinstance(c.op, tvm.ir.Op) and op_name(c) in GEMM_OPS


def _is_release(s: tirx.Stmt) -> bool:
    c = _call(s)
    return c is not None and isinstance(c.op, tvm.ir.Op) and c.op.name == _RELEASE


def _counters(stmts: list[tirx.Stmt]) -> list[tirx.Buffer]:
    """Buffers the loop step counts up by one (``x[0] = x[0] + 1``): the stages' phase counters."""
    out = []
    for s in stmts:
        if (isinstance(s, tirx.BufferStore) and isinstance(s.value, tirx.Add)
                and isinstance(s.value.a, tirx.BufferLoad) and s.value.a.buffer.same_as(s.buffer)
                and isinstance(s.value.b, tirx.IntImm) and s.value.b.value == 1):
            out.append(s.buffer)
    return out


def _one_step_back(stmt: tirx.Stmt, counters: list[tirx.Buffer], k: tirx.Var | None, k_value: Any) -> tirx.Stmt:
    """``stmt`` as the step before would run it: each counter one less, the loop variable ``k_value``."""
    def load(n: tirx.BufferLoad) -> tirx.PrimExpr | None:
        if any(n.buffer.same_as(b) for b in counters):
            return tirx.Sub(n, tirx.IntImm(n.dtype, 1))
        return None

    stmt = tirx.stmt_functor.ir_transform(stmt, None, load, ["tirx.BufferLoad"])
    return tirx.stmt_functor.substitute(stmt, {k: k_value}) if k is not None else stmt


def _carry_loop(loop: tirx.For, registers: Mapping[str, int]) -> tirx.Stmt | None:
    """The loop, carried, with its last step peeled after it; None where its body is not a consumer step of
    gemms then releases.

    The last step waits for every group and fences the accumulators, so that nothing after it can read one early:
    with a group left in flight at the loop's exit and a wait after the loop, ptxas moved an epilogue's
    conversions of the accumulator above that wait (wrong sums on one H200); with the last step's wait a branch
    in the loop, it drained every other step (``C7517``)."""
    body = list(loop.body.seq) if isinstance(loop.body, tirx.SeqStmt) else [loop.body]
    gemms = [i for i, s in enumerate(body) if _is_gemm(s)]
    releases = [i for i, s in enumerate(body) if _is_release(s)]
    if not gemms or not releases or min(releases) < max(gemms):
        return None
    accumulators = {b.name: b for b in (_accumulator(body[i]) for i in gemms)}
    missing = sorted(set(accumulators) - set(registers))
    if missing:
        raise ValueError(f"carry_gemms: no register count for accumulator(s) {missing}")
    fences = [tirx.Evaluate(tirx.call_intrin("handle", _FENCE, str(b.dtype), b.data, 0, registers[name]))
              for name, b in accumulators.items()]
    counters = _counters(body)
    k = loop.loop_var
    mine = [s for s in body if _is_release(s)]
    kept = [_no_wait(s) if _is_gemm(s) else s for s in body if not _is_release(s)]
    tail = len(kept) - len(counters)  # the releases go before the counters' steps, where they were
    previous = _seq([_one_step_back(s, counters, k, k - 1) for s in mine])

    def step(final: bool) -> tirx.Stmt:
        wait = tirx.Evaluate(T.wait_wgmma(0 if final else len(gemms)))
        ends = [*fences, *mine] if final else []
        return _seq([*kept[:tail], wait, tirx.IfThenElse(k > loop.min, previous, None), *ends, *kept[tail:]])

    last = loop.min + loop.extent - 1
    steady = tirx.For(k, loop.min, loop.extent - 1, loop.kind, step(False), loop.thread_binding,
                      loop.annotations, loop.step)
    peeled = tirx.stmt_functor.substitute(step(True), {k: last})
    if isinstance(loop.extent, tirx.IntImm) and loop.extent.value > 0:
        return peeled if loop.extent.value == 1 else tirx.SeqStmt([steady, peeled])
    return tirx.IfThenElse(loop.extent > 0, tirx.SeqStmt([steady, peeled]), None)


def _accumulator(s: tirx.Evaluate) -> tirx.Buffer:
    """The buffer a gemm tile op accumulates into (its third region)."""
    regions = [a for a in s.value.args if isinstance(a, tirx.Call)]
    return regions[2].args[0].buffer


def _no_wait(s: tirx.Evaluate) -> tirx.Evaluate:
    """The gemm statement issued without waiting for its wgmmas."""
    c = s.value
    return tirx.Evaluate(tirx.Call(c.dtype, c.op, c.args, {**dict(c.annotations or {}),
                                                          WG_WAIT: tirx.IntImm("int32", -1)}))


def _seq(stmts: list[tirx.Stmt]) -> tirx.Stmt:
    return stmts[0] if len(stmts) == 1 else tirx.SeqStmt(stmts)
