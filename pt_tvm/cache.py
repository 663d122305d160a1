"""On-disk cache of searched execution plans, keyed by what changes the search result.

The search is deterministic for a given graph, target, toolchain and search
options, so its decision (an :class:`~pt_tvm.plan.ExecutionPlan`) is cached and
replayed. Keys are a sha256 over sorted JSON of every input
(:func:`plan_key`); the kernel enters through :func:`structure_key`, which
leaves out the function's symbol name so the same kernel under another name
hits; the chip enters by its whole description, so two chip files of one name
never share an entry. Entries are written atomically (:func:`atomic_write`)
under a versioned namespace; a corrupt entry is reported, removed and treated
as a miss, and a cache that cannot be written degrades to a warning: the
search result is still returned.
"""
from __future__ import annotations

import contextlib
import dataclasses
import enum
import functools
import hashlib
import importlib.util
import json
import os
import re
import tempfile
import time
import warnings
from typing import Any, Mapping

import tilelang

from . import __version__, hw
from .graph import STaskGraph
from .plan import ExecutionPlan

__all__ = [
    "PlanCache",
    "PlanCacheWarning",
    "atomic_write",
    "default_cache_dir",
    "model_fingerprint",
    "plan_key",
    "structure_key",
    "template_key",
]

FORMAT = "pt-tvm.plan-cache/1"
NAMESPACE = "plans-v1"
_KEY = re.compile(r"[A-Za-z0-9_-]+")
# Identify no structure: the symbol name, the extraction target (plan_key takes
# the target itself), the sEU kinds derived from it, and human-readable labels.
# the values symbolic sizes were priced at enter through the grid, trip count and buffer shapes they priced
_NOT_STRUCTURE = {STaskGraph: {"name", "target", "symbols"}}
_NOT_STASK = {"label", "seu"}


class PlanCacheWarning(UserWarning):
    """A cache entry could not be used (corrupt, unreadable or for another key) or written."""


def atomic_write(path: str, text: str) -> None:
    """Write ``text`` to ``path`` so readers see the old file or the whole new one, never a part.

    Writes a temporary file in the same directory, fsyncs it, then renames it
    over ``path`` with :func:`os.replace`, which is atomic on one filesystem;
    two processes writing the same path at once leave one complete file.
    """
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise


# the packages whose code chooses a searched plan: the cost model, the plan space and its rules (pt_tvm), the
# extraction and emission (passes), the templates' tiles and preferences
_MODEL_PACKAGES = ("pt_tvm", "pt_tvm.passes", "pt_tvm.templates")


@functools.cache
def model_fingerprint() -> str:
    """sha256 over the Python source of the packages that choose a searched plan (``_MODEL_PACKAGES``, each
    package's own modules). The keys of plans the cost model chose hold it (``extra``), so code that chooses
    differently (a repriced plan kind, a new tile) searches again instead of replaying the old choice, though
    the package version is the same; measured choices (the tuning database, tuned plans) stay keyed without it."""
    digest = hashlib.sha256()
    for package in _MODEL_PACKAGES:
        for folder in importlib.util.find_spec(package).submodule_search_locations:
            for name in sorted(f for f in os.listdir(folder) if f.endswith(".py")):
                with open(os.path.join(folder, name), "rb") as f:
                    digest.update(f"{package}.{name}\0".encode() + f.read())
    return digest.hexdigest()


def structure_key(graph: STaskGraph) -> str:
    """sha256 of the kernel's structure and shapes, independent of its symbol name.

    Covers every sTask (id, op, placement, index, tile shape, dtype, accesses,
    work, attributes), the dependence edges, the buffers, the pipelined loop,
    the grid and the thread count: everything the search reads.
    """
    canon = _canonical(graph)
    if canon is _UNSTABLE:
        raise TypeError(f"graph {graph.name!r} holds a value that is not plain data; it has no stable key")
    for t in canon["stasks"]:
        for k in _NOT_STASK:
            t.pop(k, None)
    return _sha256(canon)


def plan_key(graph: STaskGraph, target: Any, extra: Mapping[str, Any] | None = None) -> str | None:
    """sha256 naming the plan searched for ``graph`` on chip ``target`` (a VDevice, chip name or TVM target);
    None when it must not be cached.

    The chip enters by its whole description (every rate and limit), not its name.
    ``extra`` holds the other inputs of the search (search space, seed,
    calibration, ...) as JSON-like data, enums or dataclasses. It is None when
    ``extra`` holds a value with no stable identity (a function, an arbitrary
    object), since no key could tell two of them apart.
    """
    extra_canon = _canonical(dict(extra or {}))
    if extra_canon is _UNSTABLE:
        return None
    return _sha256({"structure": structure_key(graph), "chip": hw.for_target(target).to_dict(), "pt_tvm": __version__,
                    "tilelang": tilelang.__version__, "extra": extra_canon})


def template_key(template: str, problem: Mapping[str, Any], target: Any,
                 extra: Mapping[str, Any] | None = None) -> str | None:
    """sha256 naming the plan chosen for built-in template ``template`` at ``problem`` on chip ``target``
    (a VDevice, chip name or TVM target); None when ``problem`` or ``extra`` holds a value with no stable
    identity.

    Unlike :func:`plan_key` it names both levels of the search (the tile and its plan), so it is known
    before any PrimFunc is built; a caller re-verifies a hit against the PrimFunc of the plan's tile.
    The chip enters by its whole description, as in :func:`plan_key`.
    """
    canon = _canonical({"template": template, "problem": dict(problem), "extra": dict(extra or {})})
    if canon is _UNSTABLE:
        return None
    return _sha256({**canon, "chip": hw.for_target(target).to_dict(), "pt_tvm": __version__,
                    "tilelang": tilelang.__version__})


def default_cache_dir() -> str:
    """The cache root: ``$PT_TVM_CACHE_DIR``, else ``~/.cache/pt-tvm``."""
    return os.environ.get("PT_TVM_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "pt-tvm")


class PlanCache:
    """Execution plans stored as one JSON file per key under ``<root>/plans-v1/``.

    Parameters
    ----------
    directory : str, optional
        Cache root (default :func:`default_cache_dir`). Nothing is created until
        the first :meth:`put`.
    """

    def __init__(self, directory: str | None = None):
        self.directory = os.path.join(directory or default_cache_dir(), NAMESPACE)

    def path(self, key: str) -> str:
        """The entry file of ``key`` (a file-name-safe string, as :func:`plan_key` returns)."""
        if not isinstance(key, str) or not _KEY.fullmatch(key):
            raise ValueError(f"plan cache key must match {_KEY.pattern}, got {key!r}")
        return os.path.join(self.directory, f"{key}.json")

    def get(self, key: str) -> ExecutionPlan | None:
        """The cached plan of ``key``, or None on a miss.

        A corrupt, unreadable or mismatched entry warns with
        :class:`PlanCacheWarning`, is deleted, and counts as a miss, so the
        caller searches again and puts a fresh entry.
        """
        path = self.path(key)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as e:  # a directory in its place, no permission, not text
            self._discard(path, e)
            return None
        try:
            doc = json.loads(text)
            if not isinstance(doc, dict) or doc.get("format") != FORMAT:
                raise ValueError(f"format is not {FORMAT!r}")
            if doc.get("key") != key:
                raise ValueError(f"entry is for key {doc.get('key')!r}")
            return ExecutionPlan.from_dict(doc["plan"])
        except (ValueError, KeyError, TypeError, AttributeError) as e:  # JSON and PlanError are ValueErrors
            self._discard(path, e)
            return None

    def put(self, key: str, plan: ExecutionPlan, meta: Mapping[str, Any] | None = None) -> str | None:
        """Store ``plan`` under ``key`` atomically (with JSON-serializable ``meta``); returns the path, or
        None with a :class:`PlanCacheWarning` when the cache cannot be written (the caller keeps its plan)."""
        doc = {"format": FORMAT, "key": key, "plan": plan.to_dict(), "meta": dict(meta or {})}
        path = self.path(key)
        try:
            atomic_write(path, json.dumps(doc, indent=1, sort_keys=True))
        except OSError as e:
            warnings.warn(f"cannot write plan cache entry {path} ({type(e).__name__}: {e}); the plan is used "
                          f"but not cached", PlanCacheWarning, stacklevel=2)
            return None
        return path

    def clear(self) -> None:
        """Delete every entry, and the temporary files of writes that died over a minute ago (those of
        writes still in flight are left alone)."""
        for name in self._entries():
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(self.directory, name))
        for name in self._orphans():
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(self.directory, name))

    def __len__(self) -> int:
        return len(self._entries())

    def __repr__(self) -> str:
        return f"PlanCache({self.directory!r})"

    def _entries(self) -> list[str]:
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return []
        return [n for n in names if n.endswith(".json") and not n.startswith(".")]

    def _orphans(self) -> list[str]:
        """Temporary files of :func:`atomic_write` s older than ``_ORPHAN_SECONDS`` (their writer died)."""
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return []
        old = time.time() - _ORPHAN_SECONDS
        out = []
        for n in names:
            if n.startswith(".") and n.endswith(".tmp"):
                with contextlib.suppress(FileNotFoundError):
                    if os.path.getmtime(os.path.join(self.directory, n)) < old:
                        out.append(n)
        return out

    def _discard(self, path: str, error: BaseException) -> None:
        """Warn about an unusable entry and remove it, saying whether that worked."""
        reason = " ".join(str(error).split())  # one line, also for PlanError's list of violations
        try:
            os.remove(path)
            outcome = "removed it"
        except OSError as e:
            outcome = f"could not remove it ({type(e).__name__})"
        warnings.warn(f"corrupt plan cache entry {path} ({type(error).__name__}: {reason}); {outcome}, rebuilding",
                      PlanCacheWarning, stacklevel=3)


_ORPHAN_SECONDS = 60.0


_UNSTABLE = object()


def _canonical(o: Any) -> Any:
    """``o`` as plain JSON data (enums by value, dataclasses by field), or ``_UNSTABLE``."""
    if o is None or isinstance(o, (bool, int, float)):
        return o
    if isinstance(o, enum.Enum):
        return _canonical(o.value)
    if isinstance(o, str):
        return str(o)  # a plain str, also for TVM's str subclasses
    if dataclasses.is_dataclass(o) and not isinstance(o, type):
        skip = _NOT_STRUCTURE.get(type(o), set())
        items = {f.name: getattr(o, f.name) for f in dataclasses.fields(o) if f.name not in skip}
        return _canonical(items)
    if isinstance(o, Mapping):
        keys = [_canonical(k) for k in o]
        if not all(isinstance(k, (str, int, float, bool)) for k in keys):
            return _UNSTABLE
        out = {str(k): _canonical(v) for k, v in zip(keys, o.values())}
        return _UNSTABLE if any(v is _UNSTABLE for v in out.values()) else out
    if isinstance(o, (list, tuple)):
        seq = [_canonical(v) for v in o]
        return _UNSTABLE if any(v is _UNSTABLE for v in seq) else seq
    return _UNSTABLE


def _sha256(canon: Any) -> str:
    return hashlib.sha256(json.dumps(canon, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
