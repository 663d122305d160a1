"""Gemms carried into the next loop step: the emission of a plan's ``carry_gemms``.

TileLang's ``MaterializeWSSchedule`` releases a pipeline stage in the loop step that waited for it, so a consumer
that reads a stage with wgmmas waits for them (``wait_wgmma<0>``) before the release, and the tensor cores idle
from its last wgmma's end to its next step's first issue. CUTLASS's mainloop instead waits for all but the step's
own wgmmas and releases the stage of the step before. Here the schedule is materialized in pt-tvm
(:mod:`pt_tvm.passes.materialize`) and each consumer loop step of the carried roles is rewritten: its gemms issued
without a wait, then ``wait_wgmma<gemms>``, then the previous step's releases (from the second step on); after the
loop, ``wait_wgmma<0>`` and the last step's releases.

Only persistent plans carry (:mod:`pt_tvm.verify`): in launched kernels, whose epilogue follows the loop in
straight-line code, ptxas moved the epilogue's conversions of the accumulator above the wait after the loop
(wrong sums on one H200), and carrying gained nothing there (0.99x); peeling the last step into the loop's
tail avoided that but cost the persistent kernels 5% (``benchmarks/results/2026-11-29-h200-carry``).
"""
from __future__ import annotations

from typing import Any

import tilelang.language as T
from tvm import tirx

from .ir import STAGE_RELEASE, op_call

__all__ = ["carried", "GEMM_OPS", "WG_WAIT"]

GEMM_OPS = ("tl.tileop.gemm", "tl.tileop.wgmma_gemm")
WG_WAIT = "wg_wait"  # gemm annotation: how many wgmma groups may stay in flight after it (-1: no wait)


def carried(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """``func``, its ``WSSchedule`` materialized (:func:`~pt_tvm.passes.materialize.materialized`), with every
    consumer loop that runs gemms carried; ValueError where no loop has that form."""
    rewritten = []

    def visit(n: tirx.Stmt) -> tirx.Stmt | None:
        if isinstance(n, tirx.For):
            new = _carry_loop(n)
            if new is not None:
                rewritten.append(n.loop_var.name)
                return new
        return None

    body = tirx.stmt_functor.ir_transform(func.body, None, visit, ["tirx.For"])
    if not rewritten:
        raise ValueError("carry_gemms: no consumer loop of gemms and stage releases found in the materialized kernel")
    return func.with_body(body, span=func.span)


def _is_gemm(s: tirx.Stmt) -> bool:
    return op_call(s, *GEMM_OPS) is not None


def _is_release(s: tirx.Stmt) -> bool:
    return op_call(s, STAGE_RELEASE) is not None


def _is_counter(s: tirx.Stmt) -> bool:
    """A step of a stage's phase counter (``x[0] = x[0] + 1``)."""
    return (isinstance(s, tirx.BufferStore) and isinstance(s.value, tirx.Add)
            and isinstance(s.value.a, tirx.BufferLoad) and s.value.a.buffer.same_as(s.buffer)
            and isinstance(s.value.b, tirx.IntImm) and s.value.b.value == 1)


def _one_step_back(stmt: tirx.Stmt, counters: list[tirx.Buffer], k: tirx.Var, k_value: Any) -> tirx.Stmt:
    """``stmt`` as the step before would run it: each counter one less, the loop variable ``k_value``."""
    def load(n: tirx.BufferLoad) -> tirx.PrimExpr | None:
        if any(n.buffer.same_as(b) for b in counters):
            return tirx.Sub(n, tirx.IntImm(n.dtype, 1))
        return None

    stmt = tirx.stmt_functor.ir_transform(stmt, None, load, ["tirx.BufferLoad"])
    return tirx.stmt_functor.substitute(stmt, {k: k_value})


def _carry_loop(loop: tirx.For) -> tirx.Stmt | None:
    """The loop and what follows it, carried; None where its body is not a consumer step: waits, gemms, their
    stages' releases, then the phase counters' steps."""
    body = list(loop.body.seq) if isinstance(loop.body, tirx.SeqStmt) else [loop.body]
    gemms = [i for i, s in enumerate(body) if _is_gemm(s)]
    releases = [i for i, s in enumerate(body) if _is_release(s)]
    tail = next((i for i, s in enumerate(body) if _is_counter(s)), len(body))
    if (not gemms or not releases or min(releases) < max(gemms) or max(releases) > tail
            or not all(_is_counter(s) for s in body[tail:])):
        return None
    counters = [s.buffer for s in body[tail:]]
    k = loop.loop_var
    last = [s for s in body if _is_release(s)]
    kept = [_no_wait(s) if _is_gemm(s) else s for s in body if not _is_release(s)]
    tail -= len(last)  # the releases go before the counters' steps, where they were
    wait = tirx.Evaluate(T.wait_wgmma(len(gemms)))
    previous = [_one_step_back(s, counters, k, k - 1) for s in last]
    step = [*kept[:tail], wait, tirx.IfThenElse(k > loop.min, _seq(previous), None), *kept[tail:]]
    new_loop = tirx.For(k, loop.min, loop.extent, loop.kind, _seq(step), loop.thread_binding, loop.annotations,
                        loop.step)
    # after the loop every counter has stepped past the last step: one back is the last step's stage
    drain = _seq([tirx.Evaluate(T.wait_wgmma(0)),
                  *(_one_step_back(s, counters, k, loop.min + loop.extent - 1) for s in last)])
    if not (isinstance(loop.extent, tirx.IntImm) and loop.extent.value > 0):
        drain = tirx.IfThenElse(loop.extent > 0, drain, None)  # a loop that may not run released nothing
    return tirx.SeqStmt([new_loop, drain])


def _no_wait(s: tirx.Evaluate) -> tirx.Evaluate:
    """The gemm statement issued without waiting for its wgmmas."""
    c = s.value
    return tirx.Evaluate(tirx.Call(c.dtype, c.op, c.args, {**dict(c.annotations or {}),
                                                          WG_WAIT: tirx.IntImm("int32", -1)}))


def _seq(stmts: list[tirx.Stmt]) -> tirx.Stmt:
    return stmts[0] if len(stmts) == 1 else tirx.SeqStmt(stmts)
