"""Compile a run's kernels in worker processes while the timed process measures the configs already built.

Compiling dominates a run (nvcc on TileLang's CUDA, Inductor, CuTe DSL), timing
needs the GPU alone: so the workers first run every job that touches the GPU
(one call of each JIT-compiled peer, filling its on-disk cache) and nothing is
timed until those are done; then they search each config and compile its
TileLang kernels, config by config in suite order, while the timed process
measures config *i* as soon as its kernels are in TileLang's cache. The workers
run at a lower CPU priority so the timed process's launches are not starved.
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import heapq
import itertools
import json
import multiprocessing
import os
import sys
import threading
import time
from typing import Any, Callable, Sequence

import torch

from pt_tvm import templates, tune
from pt_tvm.compiler import schedule_template

from .systems import AUTOTUNE_NUM_STAGES, autotune_configs, autotune_jit, build_system, tilelang_cache

__all__ = ["Precompiler", "JIT_SYSTEMS", "WAIT_S", "search_jobs"]

# compiled on their first call into an on-disk cache (Inductor's); flash-attn-4's CuTe kernels are not listed:
# their cache lives in the process (its on-disk one is off by default; with it on, a run on one H200 made no
# progress in 580 s, cause not found)
JIT_SYSTEMS = ("torch-compile",)
JIT_WAIT_S = 300.0  # longest wait for the GPU-touching warm-ups; past it timing starts (a stuck one is left)
WAIT_S = 600.0  # longest wait for one config's kernels; past it the timed process compiles what is missing


def _lower_priority() -> None:
    os.nice(10)


def search_jobs(job: tuple) -> tuple[list[tuple], Any]:
    """Worker: search ``(name, params, vdev, top_k)``; the compile jobs of the plans ``tune_template`` measures
    and the search itself (``pt_tvm.tune.Searched``), cut to those plans (small to send back)."""
    name, params, vdev, top_k = job
    result, problem, _ = schedule_template(name, vdev, params=params)
    picks = tune.diverse_top(result, top_k)
    light = tuple(dataclasses.replace(c, estimate=dataclasses.replace(c.estimate, trace=())) for c in picks)
    return (tune.compile_jobs(name, problem, vdev, picks),
            tune.Searched(dataclasses.replace(result, ranked=light, best=light[0]), dict(problem)))


def _warm(job: tuple) -> str:
    """Worker: build one system (and call a JIT-compiled one once on the config's shapes)."""
    system, kernel, problem, vdev = job
    template = templates.get(kernel)
    fn, info = build_system(system, template, problem, vdev)
    if fn is not None and system in JIT_SYSTEMS:
        try:
            fn(*template.make_inputs(problem, "cuda", torch.Generator(device="cuda").manual_seed(0)))
            torch.cuda.synchronize()
            torch.cuda.empty_cache()  # fifteen workers' cached blocks would crowd the timed process
        except Exception as e:  # the timed process meets (and records) it again
            return f"{type(e).__name__}: {e}"
    return info.get("error", "ok")


def _autotune_compile(job: tuple) -> str:
    """Worker: compile one config of TileLang's autotuner into the run's autotune cache, as the autotuner's
    own compile step would (it then loads the kernel instead of compiling it)."""
    kernel, problem, vdev, config, cache = job
    try:
        with tilelang_cache(cache):
            autotune_jit(templates.get(kernel), vdev, problem).compile(**problem, **config)
        return "ok"
    except Exception as e:  # the autotuner meets (and skips) it again
        return f"{type(e).__name__}: {e}"


def _autotune_jobs(config: Any, vdev: Any, cache: str | None, stages: Sequence[int]) -> list[tuple]:
    """The compile jobs of TileLang's autotuner on one benchmark config (none when the template rejects it:
    the timed process records why)."""
    template = templates.get(config.kernel)
    try:
        problem, _ = template.resolve(**config.problem)
    except templates.TemplateError:
        return []
    return [(config.kernel, problem, vdev, tile, cache) for tile in autotune_configs(template, problem, stages)]


class Precompiler:
    """A pool of ``workers`` spawned processes fed in priority order: GPU-touching warm-ups, then per
    config (in the order given) its pt-tvm search, then the kernels that search picked and TileLang's
    own schedules (its default, its role-based warp specialization, every config its autotuner tries,
    in ``autotune_cache``). :meth:`ready` blocks until a config's kernels are compiled and returns its
    search (``pt_tvm.tune.Searched``, for ``tune_template``) or None."""

    def __init__(self, configs: Sequence[Any], vdev: Any, workers: int, tune_top_k: int | None = None,
                 log: Any = None, autotune_cache: str | None = None,
                 autotune_stages: Sequence[int] = AUTOTUNE_NUM_STAGES) -> None:
        self._log = log if log is not None else sys.stderr
        self._top_k = tune_top_k or tune.DEFAULT_TOP_K
        self._vdev = vdev
        self._lock = threading.RLock()  # a future already done runs its callback at once, lock held
        self._queue: list[tuple] = []  # (priority, seq, fn, job, config index or None)
        self._seq = itertools.count()
        self._slots = workers
        self._compiled: set[str] = set()  # compile jobs already queued (configs can share a kernel)
        self._left = [1] * len(configs)  # per config: its search plus the compiles it queued, not yet done
        self._done = [threading.Event() for _ in configs]
        self._searched: dict[int, Any] = {}
        self._jit_left = 0
        self._jit_done = threading.Event()
        self._pool = concurrent.futures.ProcessPoolExecutor(
            workers, mp_context=multiprocessing.get_context("spawn"), initializer=_lower_priority)
        warmed: set[str] = set()
        with self._lock:
            for i, c in enumerate(configs):
                for s in c.systems:
                    if s in JIT_SYSTEMS:
                        key = json.dumps([s, c.kernel, dict(c.problem)], sort_keys=True, default=str)
                        if key not in warmed:
                            warmed.add(key)
                            self._jit_left += 1
                            self._push((0,), _warm, (s, c.kernel, dict(c.problem), self._vdev), None)
                    elif s in ("tilelang-auto", "tilelang-ws") or (s == "pt-tvm-model" and "pt-tvm" not in c.systems):
                        self._left[i] += 1
                        self._push((1, i), _warm, (s, c.kernel, dict(c.problem), self._vdev), i)
                    elif s == "tilelang-autotune":
                        for job in _autotune_jobs(c, self._vdev, autotune_cache, autotune_stages):
                            self._left[i] += 1
                            self._push((1, i, 2), _autotune_compile, job, i)
                if "pt-tvm" in c.systems:
                    self._push((1, i, 0), search_jobs, (c.kernel, dict(c.problem), self._vdev, self._top_k), i)
                else:
                    self._left[i] -= 1
                    self._check(i)
            if not self._jit_left:
                self._jit_done.set()
            self._dispatch()

    def _push(self, priority: tuple, fn: Callable, job: tuple, index: int | None) -> None:
        heapq.heappush(self._queue, (priority, next(self._seq), fn, job, index))

    def _dispatch(self) -> None:  # with the lock held
        while self._slots and self._queue:
            _, _, fn, job, index = heapq.heappop(self._queue)
            self._slots -= 1
            try:
                fut = self._pool.submit(fn, job)
            except RuntimeError:  # the pool is broken (a worker died) or shut down: compile in the timed process
                self._queue.clear()
                self._jit_done.set()
                for e in self._done:
                    e.set()
                return
            fut.add_done_callback(lambda f, fn=fn, i=index: self._finished(f, fn, i))

    def _finished(self, fut: concurrent.futures.Future, fn: Callable, index: int | None) -> None:
        with self._lock:
            self._slots += 1
            if index is None:
                self._jit_left -= 1
                if not self._jit_left:
                    self._jit_done.set()
            else:
                if fn is search_jobs and not fut.cancelled() and fut.exception() is None:
                    compiles, self._searched[index] = fut.result()
                    for job in compiles:
                        key = json.dumps(job[:4], sort_keys=True)  # one run, one chip
                        if key not in self._compiled:
                            self._compiled.add(key)
                            self._left[index] += 1
                            self._push((1, index, 1), tune.compile_one, job, index)
                # a failed search or compile is met again, and recorded, by the timed process
                self._left[index] -= 1
                self._check(index)
            self._dispatch()

    def _check(self, index: int) -> None:
        if self._left[index] == 0:
            self._done[index].set()

    def ready(self, index: int, timeout: float = WAIT_S) -> Any:
        """Wait for config ``index``'s kernels (and for the GPU-touching warm-ups); its search or None.
        Waits longer than a second, and waits given up, are logged."""
        t0 = time.monotonic()
        if not self._jit_done.is_set():
            done = self._jit_done.wait(min(timeout, JIT_WAIT_S))
            self._say(f"JIT warm-ups {'done' if done else 'not done, timing starts anyway'} after "
                      f"{time.monotonic() - t0:.0f} s")
        done = self._done[index].wait(max(0.0, t0 + timeout - time.monotonic()))
        waited = time.monotonic() - t0
        if waited > 1.0 or not done:
            self._say(f"config {index} {'ready' if done else 'not ready (compiled here)'} after {waited:.0f} s")
        with self._lock:
            return self._searched.get(index)

    def _say(self, text: str) -> None:
        print(f"precompile: {text}", file=self._log, flush=True)

    def close(self) -> None:
        """Stop the workers (queued jobs are dropped, running ones killed)."""
        with self._lock:
            self._queue.clear()
        workers = list((getattr(self._pool, "_processes", None) or {}).values())
        self._pool.shutdown(wait=False, cancel_futures=True)
        for p in workers:
            p.terminate()

    def __enter__(self) -> "Precompiler":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
