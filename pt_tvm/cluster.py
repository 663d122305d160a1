"""Tuning beyond one machine: search here on the CPU, measure on the GPUs a TVM RPC tracker hands out.

Each shape (a template at a problem size) is searched in a local process; the
plans measured refinement would time (:func:`pt_tvm.tune.diverse_top`) become
one fan-out task each (:mod:`pt_tvm.fanout`), run on ``pt-tvm worker``
servers (:func:`pt_tvm.worker.measure_plan`) as soon as their search ends.
Every answer, a failure included, is a record of the tuning database
(:mod:`pt_tvm.tunedb`), written as it arrives: a run that is cut off resumes
from what the database holds, and two clients sharing a database never
measure one plan twice.
"""
from __future__ import annotations

import concurrent.futures
import json
import multiprocessing
import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence, TextIO

from . import hw, templates
from .compiler import schedule_template
from .errors import PtTvmError
from .fanout import Fanout, Outcome, Task
from .passes import extract_stask_graph
from .plan import ExecutionPlan
from .tune import DEFAULT_TOP_K, REFINE_MARGIN, compile_one, diverse_top
from .tunedb import Record, Status, TuningDatabase, job_id, tuning_key
from .worker import MEASURE

__all__ = ["Shape", "ShapesError", "Planned", "ShapeResult", "DatabaseLedger", "plan_shape", "load_shapes",
           "tune_shapes", "tuned_plan"]


class ShapesError(PtTvmError, ValueError):
    """A shapes file (``pt-tvm tune --model``) that cannot be read or is not a list of shapes."""


@dataclass(frozen=True)
class Shape:
    """A template at a problem size (the parameters a user gives; defaults fill the rest)."""

    template: str
    params: Mapping[str, Any]

    def label(self) -> str:
        return f"{self.template} " + " ".join(f"{k}={v}" for k, v in sorted(self.params.items()))


@dataclass(frozen=True)
class Planned:
    """A shape searched: its tuning key, resolved problem, and the plans to measure (best predicted first)."""

    shape: Shape
    problem: Mapping[str, Any]
    key: str
    plans: tuple[Mapping[str, Any], ...]
    predicted_ms: tuple[float, ...]
    notes: tuple[str, ...]
    search_s: float


@dataclass(frozen=True)
class ShapeResult:
    planned: Planned
    records: tuple[Record, ...]  # one per plan measured (or failed) in this run, resumed ones included
    best: Record | None          # the database's pick for the key (TuningDatabase.best with REFINE_MARGIN)

    def summary(self) -> str:
        ok = sum(r.status is Status.OK for r in self.records)
        best = (f"best {self.best.ms:.4f} ms ({self.best.meta.get('note', '')})" if self.best
                else "no plan measured correctly")
        return f"{self.planned.shape.label()}: {ok}/{len(self.records)} plans ok, {best}"


def plan_shape(job: tuple) -> Planned:
    """Search process: ``(template, params, chip dict, top_k)`` -> the plans to measure and the tuning key."""
    name, params, chip, top_k = job
    vdev = hw.VDevice.from_dict(chip)
    t0 = time.perf_counter()
    result, problem, _ = schedule_template(name, vdev, params=params)
    picks = diverse_top(result, top_k)
    key = tuning_key(extract_stask_graph(templates.get(name).build(**problem), vdev), vdev, name, problem)
    return Planned(Shape(name, dict(params)), dict(problem), key, tuple(c.plan.to_dict() for c in picks),
                   tuple(c.seconds * 1e3 for c in picks), tuple(c.note for c in picks), time.perf_counter() - t0)


def tuned_plan(template: str, problem: Mapping[str, Any], target: Any, db: TuningDatabase) -> ExecutionPlan | None:
    """The plan measured for ``template`` at ``problem`` on ``target``'s chip that measured refinement keeps (the
    model's pick unless another was faster by more than REFINE_MARGIN), or None (what a model's ops start from
    before searching)."""
    vdev = hw.for_target(target)
    problem, _ = templates.get(template).resolve_problem(**dict(problem))
    return db.best_plan(tuning_key(extract_stask_graph(templates.get(template).build(**problem), vdev), vdev,
                                   template, problem), REFINE_MARGIN)


def load_shapes(path: str) -> list[Shape]:
    """Shapes from a JSON file: a list of ``{"template": NAME, "params": {...}}`` (e.g. a model's layers)."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise ShapesError(f"cannot read shapes file {path!r}: {e}") from None
    if not isinstance(doc, list) or not doc:
        raise ShapesError(f'{path}: expected a non-empty JSON list of {{"template": ..., "params": {{...}}}}')
    shapes = []
    for i, item in enumerate(doc):
        if not isinstance(item, dict) or not isinstance(item.get("template"), str) \
                or not isinstance(item.get("params", {}), dict) or set(item) - {"template", "params"}:
            raise ShapesError(f'{path}: entry {i} is not {{"template": NAME, "params": {{...}}}}: {item!r}')
        shapes.append(Shape(item["template"], dict(item.get("params", {}))))
    return shapes


class DatabaseLedger:
    """The fan-out's ledger over a tuning database: a job with a record is settled; claims keep two
    clients off one job; every outcome becomes a record."""

    def __init__(self, db: TuningDatabase, claim_s: float):
        self.db, self.claim_s = db, claim_s
        self._context: dict[str, dict] = {}  # job -> what its record needs besides the answer
        self._lock = threading.Lock()

    def expect(self, task: Task, key: str, chip: str, meta: Mapping[str, Any]) -> None:
        with self._lock:
            self._context[task.id] = {"key": key, "chip": chip, "meta": dict(meta)}

    def settled(self, task: Task) -> Mapping[str, Any] | None:
        record = self.db.job(task.id)
        return {"record": record.id} if record is not None else None

    def claim(self, task: Task) -> bool:
        return self.db.claim(task.id, self.claim_s)

    def release(self, task: Task) -> None:
        self.db.release(task.id)

    def record(self, outcome: Outcome) -> None:
        with self._lock:
            ctx = self._context[outcome.task.id]
        p, answer = outcome.task.payload, dict(outcome.result or {})
        if outcome.result is None:
            status = Status.FAILED
        elif answer.get("error") or not answer.get("ms"):
            status = Status.INVALID
        else:
            status = Status.OK
        error = outcome.error if status is Status.FAILED else str(answer.get("error", "" if status is Status.OK
                                                                             else "no time in the answer"))
        meta = {**ctx["meta"], "warmup_ms": p.get("warmup_ms"), "rep_ms": p.get("rep_ms"),
                **{k: answer[k] for k in ("build_s", "worker_s", "calls", "timing") if k in answer},
                "session_s": round(outcome.seconds, 3)}
        ok = status is Status.OK
        self.db.append(Record(ctx["key"], outcome.task.id, p["template"], p["problem"], ctx["chip"], p["plan"], status,
                              ms=answer.get("ms") if ok else None, p20_ms=answer.get("p20_ms") if ok else None,
                              p80_ms=answer.get("p80_ms") if ok else None, rel_err=answer.get("rel_err"),
                              error=error, attempts=outcome.attempts, worker=outcome.worker,
                              versions=answer.get("versions", {}), meta=meta))


def _measure_task(planned: Planned, i: int, chip: Mapping[str, Any], timing: Mapping[str, Any]) -> Task:
    payload = {"template": planned.shape.template, "problem": dict(planned.problem), "plan": planned.plans[i],
               "chip": dict(chip), **timing}
    return Task(job_id(planned.key, planned.plans[i]), payload)


def tune_shapes(shapes: Sequence[Shape], target: Any, *, tracker: str | tuple[str, int], key: str, db: TuningDatabase,
                top_k: int = DEFAULT_TOP_K, timeout_s: float = 300.0, retries: int = 1, warmup_ms: float = 50.0,
                rep_ms: float = 500.0, search_workers: int | None = None, precompile: bool = False,
                function: str = MEASURE, log: TextIO | None = None) -> list[ShapeResult]:
    """Search every shape here, measure its ``top_k`` plans on the tracker's ``key`` workers, record them in ``db``.

    Searches run in ``search_workers`` processes (default: the cores, at most one per shape; with one,
    in a thread of this process), and a shape's plans go out as soon as its search ends. With
    ``precompile``, those processes also compile each plan first, which fills TileLang's kernel
    cache: workers on this host (or sharing its cache directory) then load the kernels instead of
    building them. Plans the database already holds are not measured again. Returns one result per
    shape, in the order given.
    """
    log = log if log is not None else sys.stderr
    vdev = hw.for_target(target)
    for s in shapes:  # bad input fails here, before any process starts
        templates.get(s.template).resolve_problem(**dict(s.params))
    ledger = DatabaseLedger(db, claim_s=(timeout_s + 30.0) * (retries + 1))
    timing = {"warmup_ms": warmup_ms, "rep_ms": rep_ms}
    planned: dict[int, Planned] = {}
    workers = search_workers or max(1, min(len(shapes), os.cpu_count() or 1))
    done = [0]

    def tasks(pool: concurrent.futures.Executor) -> Iterator[Task]:
        searches = {pool.submit(plan_shape, (s.template, dict(s.params), vdev.to_dict(), top_k)): i
                    for i, s in enumerate(shapes)}
        builds: dict[concurrent.futures.Future, tuple[int, int]] = {}
        while searches or builds:
            ready, _ = concurrent.futures.wait([*searches, *builds], return_when=concurrent.futures.FIRST_COMPLETED)
            for fut in ready:
                if fut in searches:
                    i = searches.pop(fut)
                    p = planned[i] = fut.result()
                    print(f"searched {p.shape.label()} in {p.search_s:.1f} s: {len(p.plans)} plans", file=log,
                          flush=True)
                    for j in range(len(p.plans)):
                        task = _measure_task(p, j, vdev.to_dict(), timing)
                        ledger.expect(task, p.key, vdev.name, {"predicted_ms": p.predicted_ms[j], "note": p.notes[j]})
                        if precompile and db.job(task.id) is None:
                            builds[pool.submit(_compile, task.payload)] = (i, j)
                        else:
                            yield task
                else:
                    i, j = builds.pop(fut)
                    yield _measure_task(planned[i], j, vdev.to_dict(), timing)

    def progress(o: Outcome) -> None:
        done[0] += 1
        what = ("already in the database" if o.settled else
                f"{o.result['ms']:.4f} ms" if o.result and o.result.get("ms") and not o.result.get("error") else
                (o.result or {}).get("error") or o.error)
        print(f"[{done[0]}] {o.task.payload['template']} {_short(o.task.payload['problem'])} "
              f"{o.worker or '-'}: {str(what)[:160]}", file=log, flush=True)

    fanout = Fanout(tracker, key, function, timeout_s=timeout_s, retries=retries, ledger=ledger, log=log)
    pool = (concurrent.futures.ThreadPoolExecutor(1) if workers == 1 else  # one at a time needs no process
            concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")))
    with pool:
        fanout.run(tasks(pool), on_outcome=progress)
    out = []
    for i in range(len(shapes)):
        p = planned[i]
        records = tuple(r for r in (db.job(job_id(p.key, plan)) for plan in p.plans) if r is not None)
        out.append(ShapeResult(p, records, db.best(p.key, REFINE_MARGIN)))
    return out


def _compile(payload: Mapping[str, Any]) -> str:
    """Search process: compile one plan into TileLang's kernel cache ("" or the error; the worker reports it)."""
    return compile_one((payload["template"], dict(payload["problem"]), dict(payload["plan"].get("tile", {})),
                        json.dumps(payload["plan"]), hw.VDevice.from_dict(payload["chip"])))


def _short(problem: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in problem.items() if k != "dtype" or v != "float16")
