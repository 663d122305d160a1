"""Work fanned out through TVM's RPC tracker: servers per GPU, and a client whose tasks run on whichever
server of a device key the tracker hands out.

This is the pattern of AutoTVM's and MetaSchedule's ``RPCRunner``: servers
register with a tracker under a device key (``h100``), clients ask the tracker
for a free server of that key, open a session (the server forks a process for
it) and call a function the server registered. One *lane* per server: a thread
that takes a free server from the tracker, gives it the next task (a JSON
payload), reads its JSON answer and closes the session. A task whose server
dies or hangs (past ``timeout_s``, when the server kills the session) loses
that attempt only: it is retried once, on another server when there is one,
then reported failed. A :class:`Ledger` decides what is already settled (a
resumed run) and who may run a task (several clients sharing one database).
TVM's RPC client holds at most 32 sessions per process, so lanes past the
first 30 open their sessions from helper processes, 30 lanes each.
:func:`serve` runs the servers of ``pt-tvm worker`` (their process side is
:mod:`pt_tvm.worker`) and restarts one whose listening loop died.
"""
from __future__ import annotations

import collections
import concurrent.futures
import functools
import json
import multiprocessing
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence, TextIO

from tilelang import tvm  # noqa: F401  (puts the bundled TVM on the path)
from tvm import rpc
from tvm.rpc import base

from .errors import PtTvmError, one_line
from .worker import DEFAULT_FUNCTIONS, GPU_PRELOAD, listening, serve_init

__all__ = ["Task", "Outcome", "Ledger", "Fanout", "TrackerLink", "TrackerError", "SessionNotOpened",
           "parse_address", "start_server", "server_alive", "serve", "local_devices"]


class TrackerError(PtTvmError, ConnectionError):
    """The tracker cannot be reached, or is not a TVM RPC tracker."""


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` -> (host, port); anything else raises ValueError naming it."""
    host, sep, port = str(text).rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"expected HOST:PORT (e.g. 10.0.0.5:9190), got {text!r}")
    return host, int(port)


@dataclass(frozen=True)
class Task:
    """One unit of remote work: an id (stable across runs, for resuming) and the JSON the server gets."""

    id: str
    payload: Mapping[str, Any]


@dataclass(frozen=True)
class Outcome:
    """How a task ended: the server's answer, or why there is none after ``attempts`` tries.

    ``lost`` says, per attempt that got no answer, ``server: why``; ``settled`` is True when
    the answer was already on record (an earlier run, or another client) and nothing ran here;
    ``seconds`` is the last attempt's session time, as the client saw it.
    """

    task: Task
    result: Mapping[str, Any] | None
    error: str = ""
    attempts: int = 0
    worker: str = ""
    seconds: float = 0.0
    settled: bool = False
    lost: tuple[str, ...] = ()


class Ledger(Protocol):
    """What a run already holds and who may run what (see :class:`pt_tvm.cluster.DatabaseLedger`)."""

    def settled(self, task: Task) -> Mapping[str, Any] | None: ...
    def claim(self, task: Task) -> bool: ...
    def release(self, task: Task) -> None: ...
    def record(self, outcome: Outcome) -> None: ...


class _Memory:
    """The ledger of a run that keeps nothing: every task runs, and nobody else runs it."""

    def settled(self, task: Task) -> None:
        return None

    def claim(self, task: Task) -> bool:
        return True

    def release(self, task: Task) -> None:
        pass

    def record(self, outcome: Outcome) -> None:
        pass


class TrackerLink:
    """One connection to a TVM RPC tracker (its protocol answers one request at a time)."""

    def __init__(self, addr: tuple[str, int], connect_timeout: float = 10.0):
        self.addr = addr
        try:
            self.sock = socket.create_connection(addr, timeout=connect_timeout)
        except OSError as e:
            raise TrackerError(f"cannot reach the tracker at {addr[0]}:{addr[1]}: {e}") from None
        self.sock.settimeout(None)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.sendall(struct.pack("<i", base.RPC_TRACKER_MAGIC))
        if struct.unpack("<i", base.recvall(self.sock, 4))[0] != base.RPC_TRACKER_MAGIC:
            raise TrackerError(f"{addr[0]}:{addr[1]} is not a TVM RPC tracker")

    def _ask(self, *message: Any) -> Any:
        data = json.dumps(list(message)).encode()
        self.sock.sendall(struct.pack("<i", len(data)) + data)  # one segment: no wait on a delayed ACK
        if hasattr(socket, "TCP_QUICKACK"):  # the tracker answers in two segments: ACK the first at once
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
        return base.recvjson(self.sock)

    def request(self, key: str) -> tuple[str, int, str]:
        """(host, port, match key) of the next free server of ``key`` (waits until one is free)."""
        answer = self._ask(base.TrackerCode.REQUEST, key, "", 1)
        if answer[0] != base.TrackerCode.SUCCESS:
            raise ConnectionError(f"tracker refused a request for {key!r}: {answer!r}")
        url, port, matchkey = answer[1]
        return url, int(port), matchkey

    def servers(self, key: str) -> list[str]:
        """``host:port`` of every server registered under ``key`` (busy or free)."""
        answer = self._ask(base.TrackerCode.SUMMARY)
        return [f"{s['addr'][0]}:{s['addr'][1]}" for s in answer[1]["server_info"] if s.get("key") == f"server:{key}"]

    def close(self) -> None:
        """Close the connection (also from another thread: a blocked request then raises OSError)."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


_SESSIONS_PER_PROCESS = 30  # TVM's RPC client keeps at most 32 sessions per process (kMaxRPCSession)
_UNOPENED = 5  # sessions a task may fail to open (its job never started) before that counts as an attempt


class SessionNotOpened(ConnectionError):
    """The assigned server could not be reached, or had given its match key to nobody by then: nothing ran."""


def _session_call(host: str, port: int, matchkey: str, timeout_s: float, function: str | None, text: str) -> str:
    """Open a session with the server the tracker assigned, call ``function`` with ``text``, close it.
    With no function, only open and close it (the server goes back to the tracker at once)."""
    try:
        session = rpc.connect(host, port, matchkey, session_timeout=timeout_s)
    except Exception as e:  # refused, or a match key the server renewed while we were slow to come
        raise SessionNotOpened(one_line(e)) from None
    return session.get_function(function)(text) if function else ""


def _host_main(conn: Any) -> None:
    """A session host process: runs :func:`_session_call` in threads, answers ``(id, error, text)``."""
    lock = threading.Lock()
    pool = concurrent.futures.ThreadPoolExecutor(_SESSIONS_PER_PROCESS)

    def run(request: int, call: tuple) -> None:
        try:
            answer = (request, None, _session_call(*call))
        except Exception as e:  # sent back: the lane treats it like its own
            answer = (request, (isinstance(e, SessionNotOpened), one_line(e)), None)
        with lock:
            try:
                conn.send(answer)
            except OSError:  # the client is gone
                pass

    while True:
        try:
            request, call = conn.recv()
        except (EOFError, OSError):
            break
        pool.submit(run, request, call)
    os._exit(0)  # threads still in calls to hung servers must not keep the process


class _SessionHost:
    """A helper process that holds up to 30 RPC sessions for the lanes past the client's own 30."""

    def __init__(self):
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_host_main, args=(child,), name="fanout-session-host", daemon=True)
        self._proc.start()
        child.close()
        self._lock = threading.Lock()
        self._pending: dict[int, concurrent.futures.Future] = {}
        self._next = 0
        threading.Thread(target=self._read, name="fanout-session-host-reader", daemon=True).start()

    def call(self, call: tuple) -> str:
        future: concurrent.futures.Future = concurrent.futures.Future()
        with self._lock:
            request, self._next = self._next, self._next + 1
            self._pending[request] = future
            self._conn.send((request, call))
        return future.result()

    def _read(self) -> None:
        while True:
            try:
                request, error, text = self._conn.recv()
            except (EOFError, OSError):
                break
            with self._lock:
                future = self._pending.pop(request)
            if error:
                unopened, message = error
                future.set_exception(SessionNotOpened(message) if unopened else ConnectionError(message))
            else:
                future.set_result(text)
        with self._lock:
            pending, self._pending = list(self._pending.values()), {}
        for future in pending:
            future.set_exception(ConnectionError("the session host process ended"))

    def close(self) -> None:
        self._conn.close()
        self._proc.terminate()
        self._proc.join(5)


@dataclass
class _Pending:
    task: Task
    attempts: int = 0
    unopened: int = 0
    failed_on: set = field(default_factory=set)
    errors: list = field(default_factory=list)


@dataclass
class _Running:
    pending: _Pending
    worker: str
    deadline: float
    started: float


class Fanout:
    """Run tasks on the servers a tracker hands out for ``key``, calling their registered ``function``.

    Parameters
    ----------
    tracker : str or (host, port)
    key : str
        The device key the servers registered under (``pt-tvm worker --key``).
    function : str
        The global function the servers registered (it takes and returns a JSON string).
    timeout_s : float
        Per attempt: the server kills a session that runs longer (a hung kernel).
    retries : int
        Attempts after the first for a task whose server died or hung.
    ledger : Ledger, optional
        What is settled already and who may run what (default: nothing and everyone).
    wait_for_workers_s : float
        How long the run waits with work left and no server of ``key`` registered before it
        reports the rest failed.
    local_sessions : int
        Lanes that open their sessions in this process (at most 30); the others use helper processes.
    """

    def __init__(self, tracker: str | tuple[str, int], key: str, function: str, *, timeout_s: float = 600.0,
                 retries: int = 1, ledger: Ledger | None = None, wait_for_workers_s: float = 60.0,
                 poll_s: float = 0.25, local_sessions: int = _SESSIONS_PER_PROCESS, log: TextIO | None = None):
        if timeout_s <= 0 or retries < 0 or not 0 <= local_sessions <= _SESSIONS_PER_PROCESS:
            raise ValueError(f"need timeout_s > 0, retries >= 0 and 0 <= local_sessions <= {_SESSIONS_PER_PROCESS}, "
                             f"got {timeout_s}, {retries} and {local_sessions}")
        self.local_sessions = local_sessions
        self.addr = parse_address(tracker) if isinstance(tracker, str) else tuple(tracker)
        self.key, self.function = key, function
        self.timeout_s, self.retries = float(timeout_s), int(retries)
        self.grace_s = 5.0 + 0.1 * self.timeout_s  # beyond the server's own kill: the server itself is gone
        self.ledger = ledger if ledger is not None else _Memory()
        self.wait_for_workers_s, self.poll_s = wait_for_workers_s, poll_s
        self.log = log if log is not None else sys.stderr

    # ------------------------------------------------------------ the run
    def run(self, tasks: Iterable[Task], on_outcome: Callable[[Outcome], None] | None = None) -> list[Outcome]:
        """Every task's :class:`Outcome`, in the order they ended. ``tasks`` may be a generator that
        blocks (e.g. yielding a shape's plans as its search ends): tasks run as they come."""
        self._cond = threading.Condition()
        self._queue: collections.deque[_Pending] = collections.deque()
        self._parked: list[_Pending] = []
        self._running: dict[int, _Running] = {}
        self._links: dict[int, TrackerLink] = {}
        self._outcomes: list[Outcome] = []
        self._on_outcome = on_outcome
        self._fed = self._finished = False
        self._error: BaseException | None = None  # the feed's or a lane's (a ledger that cannot write): run() raises it
        self._lanes = 0
        self._dead: set[int] = set()  # lanes given up on, stuck in a call to a server that is gone
        self._hosts: list[_SessionHost] = []
        main = TrackerLink(self.addr)
        feeder = threading.Thread(target=self._feed, args=(tasks,), name="fanout-feed", daemon=True)
        feeder.start()
        last_seen = time.monotonic()
        try:
            while True:
                servers = main.servers(self.key)
                now = time.monotonic()
                with self._cond:
                    if servers:
                        last_seen = now
                    while self._lanes - len(self._dead) < len(servers):
                        self._start_lane()
                    self._expire(now)
                    self._unpark()
                    if self._error is not None:
                        raise self._error
                    if self._fed and not (self._queue or self._running or self._parked):
                        break
                    if now - last_seen > self.wait_for_workers_s and (self._queue or self._parked):
                        self._give_up(f"no server of key {self.key!r} at tracker "
                                      f"{self.addr[0]}:{self.addr[1]} for {self.wait_for_workers_s:g} s")
                    self._cond.wait(self.poll_s)
        finally:
            with self._cond:
                self._finished = True
                self._cond.notify_all()
                links = list(self._links.values())
            for link in links:
                link.close()
            main.close()
            for host in self._hosts:
                host.close()
        return list(self._outcomes)

    def _feed(self, tasks: Iterable[Task]) -> None:
        try:
            for task in tasks:
                answer = self.ledger.settled(task)
                with self._cond:
                    if answer is not None:
                        self._end(_Pending(task), answer, "", "", 0.0, settled=True)
                    else:
                        self._queue.append(_Pending(task))
                    self._cond.notify_all()
        except BaseException as e:  # reported by run(), in the caller's thread
            with self._cond:
                self._error = e
        finally:
            with self._cond:
                self._fed = True
                self._cond.notify_all()

    # ------------------------------------------------------------ lanes (one thread per server)
    def _host(self, lane: int) -> _SessionHost:
        """The helper process of ``lane`` (one per 30 lanes past the local ones), started on first use."""
        i = (lane - self.local_sessions) // _SESSIONS_PER_PROCESS
        with self._cond:
            while len(self._hosts) <= i:
                self._hosts.append(_SessionHost())
            return self._hosts[i]

    def _start_lane(self) -> None:
        lane = self._lanes
        self._lanes += 1
        threading.Thread(target=self._lane, args=(lane,), name=f"fanout-lane-{lane}", daemon=True).start()

    def _lane(self, lane: int) -> None:
        try:
            self._serve_lane(lane)
        except BaseException as e:  # reported by run(), in the caller's thread
            with self._cond:
                self._error = self._error or e
                self._cond.notify_all()

    def _serve_lane(self, lane: int) -> None:
        link = None
        while True:
            with self._cond:
                while not (self._queue or self._finished):
                    self._cond.wait()
                if self._finished:
                    break
            try:
                if link is None:
                    link = TrackerLink(self.addr)
                    with self._cond:
                        self._links[lane] = link
                server = link.request(self.key)
            except (OSError, RuntimeError) as e:  # the tracker went away, or the run ended under us
                with self._cond:
                    if self._finished:
                        break
                    self._links.pop(lane, None)
                print(f"fanout: lane {lane}: {one_line(e)}; retrying", file=self.log, flush=True)
                link = None
                time.sleep(1.0)
                continue
            worker = f"{server[0]}:{server[1]}"
            with self._cond:
                pending = self._take(worker)
                if pending is not None:
                    now = time.monotonic()
                    self._running[lane] = run = _Running(pending, worker, now + self.timeout_s + self.grace_s, now)
            call = (*server, self.timeout_s, self.function if pending else None,
                    json.dumps(dict(pending.task.payload)) if pending else "")
            try:  # TVM's client holds at most 32 sessions a process: lanes past the first 30 call from helpers
                text = _session_call(*call) if lane < self.local_sessions else self._host(lane).call(call)
                answer = json.loads(text) if pending else None
                error = "" if isinstance(answer, dict) else f"server answered {type(answer).__name__}, not an object"
                opened = True
            except Exception as e:  # the server died, hung past its timeout, or broke the protocol
                answer, error, opened = None, one_line(e), not isinstance(e, SessionNotOpened)
            if pending is None:  # nothing left for this server: the empty session gave it back
                continue
            with self._cond:
                if self._running.get(lane) is not run:  # given up on by the watchdog: a new lane took over
                    break
                del self._running[lane]
                self._end(pending, answer if not error else None, error, worker, time.monotonic() - run.started,
                          opened=opened)
                self._cond.notify_all()
        with self._cond:
            self._links.pop(lane, None)
        if link is not None:
            link.close()

    def _take(self, worker: str) -> _Pending | None:
        """The next task for ``worker`` (one that failed elsewhere first), claimed; None when none is left."""
        order = sorted(self._queue, key=lambda p: worker in p.failed_on)
        for pending in order:
            self._queue.remove(pending)
            if not self.ledger.claim(pending.task):
                self._parked.append(pending)  # another client runs it: wait for its answer
                continue
            answer = self.ledger.settled(pending.task)
            if answer is not None:  # recorded by another client just before our claim
                self.ledger.release(pending.task)
                self._end(pending, answer, "", "", 0.0, settled=True)
                continue
            return pending
        return None

    # ------------------------------------------------------------ endings
    def _end(self, pending: _Pending, answer: Mapping[str, Any] | None, error: str, worker: str, seconds: float,
             settled: bool = False, final: bool = False, opened: bool = True) -> None:
        """Retry a task that got no answer while it has attempts left; otherwise record its outcome.
        A session that never opened costs no attempt (the job did not start), up to ``_UNOPENED`` times."""
        if not opened and pending.unopened < _UNOPENED:
            pending.unopened += 1
            pending.errors.append(f"{worker}: {error}")
            pending.failed_on.add(worker)
            self._queue.appendleft(pending)
            return
        if worker:
            pending.attempts += 1
        if error:
            pending.errors.append(f"{worker or 'no server'}: {error}")
            pending.failed_on.add(worker)
            if pending.attempts <= self.retries and not final:
                print(f"fanout: task {pending.task.id[:12]} lost on {worker} ({error}); retrying", file=self.log,
                      flush=True)
                self._queue.appendleft(pending)
                return
            error = "; ".join(pending.errors)
        outcome = Outcome(pending.task, answer, error, pending.attempts, worker, seconds, settled,
                          tuple(pending.errors))
        if not settled:
            if outcome.attempts:  # a task no server ever took stays unrecorded: a later run takes it up
                self.ledger.record(outcome)
            self.ledger.release(pending.task)
        self._outcomes.append(outcome)
        if self._on_outcome is not None:
            self._on_outcome(outcome)

    def _expire(self, now: float) -> None:
        """Give up on attempts past the server's own timeout plus a grace: their server is unreachable."""
        for lane, run in list(self._running.items()):
            if now > run.deadline:
                del self._running[lane]
                self._dead.add(lane)
                self._end(run.pending, None, f"no answer in {self.timeout_s + self.grace_s:.0f} s", run.worker,
                          now - run.started)

    def _unpark(self) -> None:
        """Parked tasks (run by another client) end with its answer, or come back when its claim lapses."""
        for pending in list(self._parked):
            answer = self.ledger.settled(pending.task)
            if answer is not None:
                self._parked.remove(pending)
                self._end(pending, answer, "", "", 0.0, settled=True)
            elif self.ledger.claim(pending.task):
                self._parked.remove(pending)
                self.ledger.release(pending.task)  # taken again when a lane has a server for it
                self._queue.append(pending)
                self._cond.notify_all()

    def _give_up(self, reason: str) -> None:
        for pending in list(self._queue) + self._parked:
            self._end(pending, None, reason, "", 0.0, final=True)
        self._queue.clear()
        self._parked.clear()


# ---------------------------------------------------------------- servers (pt-tvm worker)
def start_server(tracker: tuple[str, int], key: str, functions: Mapping[str, str] = DEFAULT_FUNCTIONS, *,
                 device: str | None = None, preload: Sequence[str] = GPU_PRELOAD, host: str = "0.0.0.0",
                 port: int = 9091, port_end: int = 9199, custom_addr: str | None = None, silent: bool = True) -> Any:
    """One ``tvm.rpc.Server`` registered with ``tracker`` under ``key``, serving ``functions`` (see
    :func:`pt_tvm.worker.serve_init`)."""
    init = functools.partial(serve_init, dict(functions), device, tuple(preload))
    for attempt in range(5):
        try:
            return rpc.Server(host, port=port, port_end=port_end, tracker_addr=tracker, key=key,
                              custom_addr=custom_addr, silent=silent, server_init_callback=init)
        except OSError as e:  # two servers starting at once may bind one port (SO_REUSEADDR), and
            if attempt == 4 or "Address already in use" not in str(e):  # one then fails to listen: again
                raise


def server_alive(server: Any) -> bool:
    """Whether ``server`` (from :func:`start_server`) still listens; False when its process is gone."""
    try:
        server.proc.send(listening)
        return bool(server.proc.recv())
    except Exception:  # the process died (ChildProcessError) or answered garbage
        return False


def local_devices() -> list[str]:
    """The GPUs to serve: the entries of ``CUDA_VISIBLE_DEVICES``, else every GPU ``nvidia-smi -L`` lists."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [d.strip() for d in visible.split(",") if d.strip()]
    try:
        lines = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30,
                               check=True).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(i) for i, line in enumerate(line for line in lines if line.startswith("GPU "))]


def serve(tracker: tuple[str, int], key: str, devices: Sequence[str | None], *, check_s: float = 5.0,
          log: TextIO | None = None, stop: Callable[[], bool] = lambda: False, **server_options: Any) -> None:
    """Serve until ``stop()`` (or Ctrl-C): one server per device, each restarted when its loop dies
    (TVM's server stops listening after a session that crashed)."""
    log = log if log is not None else sys.stderr
    servers: list = []

    def start(i: int) -> Any:
        server = start_server(tracker, key, device=devices[i], **server_options)
        print(f"pt-tvm worker: {'GPU ' + devices[i] if devices[i] is not None else 'server'} serves key {key!r} "
              f"on port {server.port}, tracker {tracker[0]}:{tracker[1]}", file=log, flush=True)
        return server

    try:
        with concurrent.futures.ThreadPoolExecutor(len(devices)) as pool:  # each server imports TVM: in parallel
            servers += pool.map(start, range(len(devices)))
        while not stop():
            time.sleep(check_s)
            for i, server in enumerate(servers):
                if not stop() and not server_alive(server):
                    print(f"pt-tvm worker: the server on port {server.port} stopped; restarting", file=log, flush=True)
                    server.terminate()
                    servers[i] = start(i)
    except KeyboardInterrupt:
        pass
    finally:
        for server in servers:
            server.terminate()
