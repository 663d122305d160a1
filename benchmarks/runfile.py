"""A run's JSON on disk: read it and refuse, in one line that names the problem, what is not a run.

``compare``, ``bench --compare``, ``report``, ``merge`` and ``readme`` all read runs through
:func:`load_run`, so a missing, truncated or hand-broken file (rows without ``system``,
``kernel`` or ``config``; a time that is not a positive finite number) is an input error
(exit status 2) before anything else happens, never a traceback or a verdict on garbage.
A ``.gz`` file is read through gzip: the committed runs in ``benchmarks/results`` are kept
compressed where they are large (a device call carries the whole working tree, 64 MiB at most).
"""
from __future__ import annotations

import gzip
import json
import math
import zlib
from typing import Any, Mapping

__all__ = ["RunFileError", "load_run", "checked_run", "row_problem", "read_json"]


class RunFileError(ValueError):
    """A file that is not a usable benchmark run; the message names the file and the problem."""


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def row_problem(row: Any) -> str | None:
    """What makes ``row`` unusable as a benchmark row, or None."""
    if not isinstance(row, Mapping):
        return f"not an object ({type(row).__name__})"
    for key, kind in (("kernel", str), ("system", str), ("config", Mapping)):
        if not isinstance(row.get(key), kind):
            return f"field {key!r} is missing or not a{'n object' if kind is Mapping else ' string'}"
    name = f"{row['kernel']} {row['system']}"
    for key, low in (("ms", 0.0), ("tflops", None)):
        v = row.get(key)
        if v is not None and not (_number(v) and (v > low if low is not None else v >= 0)):
            what = "a positive" if low is not None else "a non-negative"
            return f"{name}: {key!r} must be {what} finite number or null, got {v!r}"
    for key in ("queued", "graph"):
        v = row.get(key)
        if v is not None and not (isinstance(v, Mapping) and _number(v.get("ms")) and v["ms"] > 0):
            return f"{name}: {key!r} must be null or an object with a positive finite 'ms', got {v!r}"
    if row.get("valid") not in (True, False, None):
        return f"{name}: 'valid' must be true, false or null, got {row.get('valid')!r}"
    return None


def load_run(path: str, *, need_rows: bool = True) -> dict:
    """``{"header": ..., "rows": [...]}`` from ``path``, every row checked (:func:`row_problem`); raises
    RunFileError for a missing or unreadable file, invalid JSON, a file that is not a run, a bad row,
    or (with ``need_rows``) no rows at all."""
    return checked_run(path, read_json(path), need_rows=need_rows)


def read_json(path: str) -> Any:
    """The JSON in ``path`` (through gzip where it ends in ``.gz``); RunFileError for a missing, unreadable
    or invalid file."""
    try:
        with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
            text = f.read()
    except FileNotFoundError:
        raise RunFileError(f"{path}: no such file") from None
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as e:  # gzip: not gzip, cut short, corrupt
        raise RunFileError(f"{path}: cannot read it ({getattr(e, 'strerror', None) or e})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise RunFileError(f"{path}: not valid JSON ({e.msg} at line {e.lineno} column {e.colno}; "
                           f"truncated or corrupt?)") from None


def checked_run(name: str, run: Any, *, need_rows: bool = True) -> dict:
    """``run`` (parsed JSON, ``name`` for errors) checked as :func:`load_run` checks a file's, its header
    defaulted to ``{}``."""
    if not isinstance(run, dict) or not isinstance(run.get("rows"), list):
        raise RunFileError(f"{name}: not a benchmark run (expected an object with a 'rows' list)")
    if not isinstance(run.setdefault("header", {}), dict):
        raise RunFileError(f"{name}: 'header' is not an object")
    if need_rows and not run["rows"]:
        raise RunFileError(f"{name}: the run has no rows (an empty or aborted run)")
    for k, row in enumerate(run["rows"]):
        problem = row_problem(row)
        if problem:
            raise RunFileError(f"{name}: row {k}: {problem}")
    return run
