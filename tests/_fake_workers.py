"""Fake measurement functions and a local tracker with servers, for the fan-out tests (CPU only).

The servers import this module by name (``_fake_workers:measure``): the tests put
this folder on ``PYTHONPATH`` before starting them.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import signal
import threading
import time

from pt_tvm.worker import BENCH, MEASURE

FAKE = "_fake_workers:measure"


def fake_ms(plan) -> float:
    """A time for a plan that the plan alone decides (so tests know the fastest)."""
    digest = hashlib.sha256(json.dumps(plan, sort_keys=True).encode()).hexdigest()
    return 1.0 + int(digest[:6], 16) / float(0xFFFFFF)


def measure(job: dict) -> dict:
    """Pretend to measure ``job``; ``job["fake"]`` (or the server's environment) says how to misbehave.

    ``pidfile``: write this process's pid and its server's there first; ``crash_once``: a marker path: the first
    call that finds it absent creates it and dies by SIGKILL; ``hang``: never return;
    ``sleep``: seconds to take; ``error``: answer with this error; ``ms``: the time to answer.
    ``PT_TVM_FAKE_CRASH_MARK`` in the servers' environment crashes the first job any of them takes
    the same way, and ``PT_TVM_FAKE_SLEEP`` sets the default sleep.
    """
    fake = dict(job.get("fake", {}))
    if "pidfile" in fake:  # this session's process, then its server's
        with open(fake["pidfile"] + ".tmp", "w") as f:
            f.write(f"{os.getpid()} {os.getppid()}")
        os.replace(fake["pidfile"] + ".tmp", fake["pidfile"])
    mark = fake.get("crash_once") or os.environ.get("PT_TVM_FAKE_CRASH_MARK")
    if mark:
        try:  # created atomically: of two servers that take their first jobs at once, one crashes
            os.close(os.open(mark, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            pass
        else:
            os.kill(os.getpid(), signal.SIGKILL)
    if fake.get("hang"):
        time.sleep(3600)
    time.sleep(float(fake.get("sleep", os.environ.get("PT_TVM_FAKE_SLEEP", 0.0))))
    if fake.get("error"):
        return {"error": fake["error"]}
    ms = float(fake.get("ms") or fake_ms(job.get("plan")))
    return {"ms": ms, "p20_ms": ms * 0.99, "p80_ms": ms * 1.01, "calls": 10, "rel_err": 1e-4,
            "versions": {"device": "fake", "pid": os.getpid()}}


def bench(job: dict) -> dict:
    """Pretend to measure a benchmark config whole: one row per system, this process's pid in each."""
    cfg = job["config"]
    if cfg["note"] == "hang":
        time.sleep(3600)
    rows = [{"suite": cfg["suite"], "kernel": cfg["kernel"], "config": cfg["problem"], "system": s, "ms": 1.0 + i,
             "tflops": 1.0, "rel_err": 1e-4, "valid": True, "pid": os.getpid(), "server": os.getppid()}
            for i, s in enumerate(cfg["systems"])]
    return {"rows": rows, "header": {"device": "fake GPU", "torch": "x", "tilelang": "0.1.15", "git_commit": "abc"}}


class Cluster:
    """A tracker on a free localhost port, and servers serving the fake under keys of one's choosing."""

    def __init__(self):
        from tilelang import tvm  # noqa: F401
        from tvm.rpc.tracker import Tracker

        self._pythonpath = os.environ.get("PYTHONPATH")  # the servers import this module by name
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.dirname(os.path.abspath(__file__)),
                                                               self._pythonpath) if p)
        self.tracker = Tracker("127.0.0.1", port=20000 + os.getpid() % 20000, port_end=65000, silent=True)
        self.addr = ("127.0.0.1", self.tracker.port)
        self._serving: list = []

    def start(self, key: str, n: int, env: dict | None = None) -> None:
        """``n`` servers under ``key``, with ``env`` added to their environment, kept alive by
        :func:`pt_tvm.worker.serve` (in a thread) and registered when this returns."""
        from pt_tvm.fanout import serve

        stop = threading.Event()
        with _environ(env or {}):
            thread = threading.Thread(target=serve, args=(self.addr, key, [None] * n), daemon=True, kwargs=dict(
                functions={MEASURE: FAKE, BENCH: "_fake_workers:bench"}, preload=(), host="127.0.0.1",
                port=self.addr[1] + 1,
                port_end=65000, check_s=0.5, stop=stop.is_set, log=io.StringIO()))
            thread.start()
            self.wait_for(key, n)
        self._serving.append((stop, thread))

    def wait_for(self, key: str, n: int, timeout: float = 60.0) -> None:
        """Until ``n`` servers of ``key`` are registered with the tracker."""
        from pt_tvm.fanout import TrackerLink

        link = TrackerLink(self.addr)
        try:
            deadline = time.time() + timeout
            while len(link.servers(key)) < n:
                if time.time() > deadline:
                    raise TimeoutError(f"{n} servers of {key!r} did not register in {timeout:g} s")
                time.sleep(0.1)
        finally:
            link.close()

    def close(self) -> None:
        for stop, _ in self._serving:
            stop.set()
        for _, thread in self._serving:
            thread.join(10)
        self.tracker.terminate()
        if self._pythonpath is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = self._pythonpath


@contextlib.contextmanager
def _environ(extra: dict):
    old = {k: os.environ.get(k) for k in extra}
    os.environ.update(extra)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
