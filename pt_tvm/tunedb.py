"""The tuning database: plans measured on GPUs, append-only, written by many processes and machines at once.

The plan cache (:mod:`pt_tvm.cache`) remembers what the search decided; the
tuning database remembers what the GPUs measured. A :class:`Record` is one
plan's measurement (or its failure) for one tuning key (:func:`tuning_key`:
kernel structure, problem, chip description, versions). Records are JSON
lines under ``<root>/tunedb-v1/``: each writer (one process) appends to a
file of its own with one ``os.write`` per record, so writers never
interleave, and databases of several machines merge by copying their files
in or with :meth:`TuningDatabase.merge` (records carry an id; a record seen
twice counts once). A line that does not parse is skipped with a warning
naming its file and line. Claims (:meth:`TuningDatabase.claim`) keep two
clients from measuring one job at once.
"""
from __future__ import annotations

import contextlib
import enum
import hashlib
import json
import os
import socket
import tempfile
import threading
import time
import uuid
import warnings
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from .cache import atomic_write, default_cache_dir, plan_key
from .graph import STaskGraph
from .hw import VDevice
from .plan import ExecutionPlan

__all__ = ["Record", "Status", "TuningDatabase", "TuningDatabaseWarning", "tuning_key", "job_id", "prefer_first",
           "FORMAT"]

FORMAT = "pt-tvm.tuning-record/1"
NAMESPACE = "tunedb-v1"
_STALE_TAIL_S = 60.0  # an unterminated last line this old is a record whose writer died mid-write


class TuningDatabaseWarning(UserWarning):
    """A record could not be read (corrupt or truncated); it was skipped."""


class Status(str, enum.Enum):
    OK = "ok"            # checked against the reference and timed
    INVALID = "invalid"  # the plan's fault: it did not build, launch, or compute the right result
    FAILED = "failed"    # no answer: its workers died or hung on it, on every attempt


def tuning_key(graph: STaskGraph, vdev: VDevice, template: str, problem: Mapping[str, Any]) -> str:
    """sha256 naming a tuning problem: ``graph`` (the kernel at its default tile) stands for the structure,
    ``vdev``'s full description for the chip; pt-tvm's and TileLang's versions enter through :func:`plan_key`."""
    key = plan_key(graph, vdev, {"tuning": {"template": template, "problem": dict(problem)}})
    if key is None:
        raise TypeError(f"problem {dict(problem)!r} holds a value that is not plain data; it has no stable key")
    return key


def job_id(key: str, plan: Mapping[str, Any]) -> str:
    """sha256 of one measurement job: a plan (its JSON dict) for a tuning key."""
    text = json.dumps({"key": key, "plan": plan}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Record:
    """One plan measured (or not) for one tuning key.

    ``worker`` is the server that answered (``host:port``); ``versions`` what it ran
    (device, driver, CUDA, torch, TileLang, pt-tvm); ``meta`` the rest (timing options,
    build time, the cost model's prediction and the plan's note).
    """

    key: str
    job: str
    template: str
    problem: Mapping[str, Any]
    chip: str
    plan: Mapping[str, Any]
    status: Status
    ms: float | None = None
    p20_ms: float | None = None
    p80_ms: float | None = None
    rel_err: float | None = None
    error: str = ""
    attempts: int = 1
    worker: str = ""
    versions: Mapping[str, Any] = field(default_factory=dict)
    meta: Mapping[str, Any] = field(default_factory=dict)
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    time: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", Status(self.status))
        if self.status is Status.OK and not (isinstance(self.ms, (int, float)) and self.ms > 0):
            raise ValueError(f"an ok record needs a positive ms, got {self.ms!r}")

    def to_json(self) -> str:
        d = asdict(self)
        d["status"] = self.status.value
        return json.dumps({"format": FORMAT, **d}, sort_keys=True, separators=(",", ":"), allow_nan=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Record":
        if not isinstance(d, Mapping) or d.get("format") != FORMAT:
            raise ValueError(f"format is not {FORMAT!r}")
        fields = {k: v for k, v in d.items() if k != "format"}
        return cls(**fields)

    def execution_plan(self) -> ExecutionPlan:
        return ExecutionPlan.from_dict(self.plan)


def prefer_first(first: Any, fastest: Any, margin: float) -> Any:
    """Measured refinement's rule between two measurements (``.ms``): the model's ``first`` pick (None where it did
    not run) unless ``fastest`` measured faster by more than the share ``margin``."""
    return first if first is not None and first.ms <= fastest.ms * (1 + margin) else fastest


class TuningDatabase:
    """Records under ``<root>/tunedb-v1/`` (default root: the pt-tvm cache dir).

    Reading is incremental: each file is read from where the last read stopped,
    so polling a database others are writing costs only their new records.
    """

    def __init__(self, directory: str | None = None):
        self.directory = os.path.join(directory or default_cache_dir(), NAMESPACE)
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._fd: int | None = None
        self._lock = threading.RLock()  # one database may serve several threads (the fan-out's lanes)
        self._offsets: dict[str, int] = {}
        self._lines: dict[str, int] = {}
        self._records: dict[str, Record] = {}  # by record id, in reading order
        self._jobs: dict[str, Record] = {}     # the first record of each job

    # ------------------------------------------------------------ writing
    def append(self, record: Record) -> None:
        """Append ``record`` durably to this process's own file (one write, then fsync)."""
        line = (record.to_json() + "\n").encode()
        with self._lock:
            if self._fd is None:
                os.makedirs(self.directory, exist_ok=True)
                name = f"records-{self.owner.replace(':', '-')}.jsonl"
                self._fd = os.open(os.path.join(self.directory, name), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.write(self._fd, line)
            os.fsync(self._fd)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def merge(self, other: str) -> int:
        """Append the records of database root ``other`` that this one lacks; returns how many."""
        have = {r.id for r in self.records()}
        new = [r for r in TuningDatabase(other).records() if r.id not in have]
        for r in new:
            self.append(r)
        return len(new)

    # ------------------------------------------------------------ reading
    def records(self, key: str | None = None) -> list[Record]:
        """Every readable record (of ``key``), each once, oldest file first."""
        with self._lock:
            self._scan()
            return [r for r in self._records.values() if key is None or r.key == key]

    def job(self, job: str) -> Record | None:
        """The first record of ``job``, or None: a job with a record is settled (resumed runs skip it)."""
        with self._lock:
            self._scan()
            return self._jobs.get(job)

    def best(self, key: str, margin: float = 0.0) -> Record | None:
        """The fastest ok record of ``key``, or None. With ``margin``: the record of the model's pick (the lowest
        ``predicted_ms`` of the key's records) where it ran and no other measured faster by more than that share,
        measured refinement's rule (:data:`pt_tvm.tune.REFINE_MARGIN`; here the plans' times may come from
        different GPUs)."""
        records = self.records(key)
        ok = [r for r in records if r.status is Status.OK]
        if not ok:
            return None
        priced = [r for r in records if r.meta.get("predicted_ms") is not None]
        first = min(priced, key=lambda r: r.meta["predicted_ms"]) if margin and priced else None
        return prefer_first(first if first is not None and first.status is Status.OK else None,
                            min(ok, key=lambda r: r.ms), margin)

    def best_plan(self, key: str, margin: float = 0.0) -> ExecutionPlan | None:
        """The plan of :meth:`best` (what a model starts from), or None when ``key`` was never measured."""
        best = self.best(key, margin)
        return best.execution_plan() if best is not None else None

    def _scan(self) -> None:
        try:
            names = sorted(n for n in os.listdir(self.directory) if n.endswith(".jsonl") and not n.startswith("."))
        except FileNotFoundError:
            return
        for name in names:
            self._read_new(os.path.join(self.directory, name))

    def _read_new(self, path: str) -> None:
        start = self._offsets.get(path, 0)
        try:
            with open(path, "rb") as f:
                f.seek(start)
                data = f.read()
                mtime = os.fstat(f.fileno()).st_mtime
        except OSError as e:
            warnings.warn(f"tuning database file {path} unreadable ({e}); skipped", TuningDatabaseWarning, stacklevel=4)
            return
        end = data.rfind(b"\n") + 1
        tail = data[end:]
        if tail and time.time() - mtime > _STALE_TAIL_S:  # its writer died mid-write: the tail stays a fragment
            end = len(data)
        lineno = self._lines.get(path, 0)
        for raw in data[:end].splitlines():
            lineno += 1
            if not raw.strip():
                continue
            try:
                record = Record.from_dict(json.loads(raw))
            except (ValueError, TypeError, KeyError) as e:  # JSON errors are ValueErrors
                reason = " ".join(str(e).split())[:200]
                warnings.warn(f"corrupt tuning record {path}:{lineno} ({type(e).__name__}: {reason}); skipped",
                              TuningDatabaseWarning, stacklevel=4)
                continue
            self._records.setdefault(record.id, record)
            self._jobs.setdefault(record.job, record)
        self._offsets[path] = start + end
        self._lines[path] = lineno

    # ------------------------------------------------------------ claims
    def claim(self, job: str, ttl_s: float) -> bool:
        """Take ``job`` for ``ttl_s`` seconds (True), or learn that a live claim of another holds it (False).

        A claim is a file linked into place whole (``os.link`` fails when one exists); one past
        its expiry, or of a dead process on this host, is taken over. Claiming a job this
        database already holds renews it.
        """
        path = self._claim_path(job)
        body = json.dumps({"owner": self.owner, "host": socket.gethostname(), "pid": os.getpid(),
                           "expires": time.time() + ttl_s})
        for _ in range(3):
            held = _read_claim(path)
            if held is None:
                if _link_new(path, body):
                    return True
                continue  # another claimed it between the read and the link: look again
            if held.get("owner") == self.owner:
                atomic_write(path, body)
                return True
            if not _stale(held):
                return False
            tomb = f"{path}.{uuid.uuid4().hex}.stale"
            try:
                os.replace(path, tomb)  # of several takers, each moves away what is there at that moment
            except FileNotFoundError:
                continue
            moved = _read_claim(tomb)
            if moved != held:  # a fresh claim of another taker went instead: put it back
                with contextlib.suppress(OSError):
                    os.link(tomb, path)
                os.remove(tomb)
                return False
            os.remove(tomb)
        return False

    def release(self, job: str) -> None:
        """Drop this database's claim on ``job`` (a claim of another owner is left alone)."""
        path = self._claim_path(job)
        held = _read_claim(path)
        if held is not None and held.get("owner") == self.owner:
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)

    def _claim_path(self, job: str) -> str:
        if not job.isalnum():
            raise ValueError(f"job id must be alphanumeric, got {job!r}")
        return os.path.join(self.directory, "claims", job)

    def __repr__(self) -> str:
        return f"TuningDatabase({self.directory!r})"


def _read_claim(path: str) -> dict | None:
    """The claim at ``path``, or None when there is none (or it is not a claim: then it is replaced)."""
    try:
        with open(path, encoding="utf-8") as f:
            claim = json.loads(f.read())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {"expires": 0}  # unreadable: stale
    return claim if isinstance(claim, dict) else {"expires": 0}


def _link_new(path: str, body: str) -> bool:
    """Create ``path`` holding ``body`` unless it exists (write a temporary file, then hard-link it)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".claim.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(body)
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    finally:
        os.remove(tmp)


def _stale(claim: Mapping[str, Any]) -> bool:
    """A claim past its expiry, or one whose process on this host is gone."""
    if time.time() > float(claim.get("expires", 0)):
        return True
    if claim.get("host") == socket.gethostname():
        try:
            os.kill(int(claim["pid"]), 0)
        except ProcessLookupError:
            return True
        except (PermissionError, KeyError, ValueError):
            pass
    return False

