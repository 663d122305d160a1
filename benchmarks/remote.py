"""``benchmarks run --tracker HOST:PORT --key KEY``: whole configs measured on the workers a TVM RPC tracker hands out.

Each config goes to one worker with all its systems (:func:`run_config`, the
function workers started with ``pt-tvm worker --bench`` serve), so its ratios
stay same-run and same-GPU; this process merges the rows, in suite order, into
one run. A config whose worker dies or hangs is retried once on another worker
(:class:`pt_tvm.fanout.Fanout`), then recorded as invalid rows saying why.
"""
from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from typing import Any, Mapping, Sequence

import torch

from pt_tvm import hw
from pt_tvm.fanout import Fanout, Task
from pt_tvm.worker import BENCH

from .suite import Config, header, run_configs

__all__ = ["run_config", "run_remote"]


def run_config(job: Mapping[str, Any]) -> dict:
    """Worker: measure one config on this GPU (``benchmarks.suite.run_configs``, as ``run`` does locally);
    its rows and provenance."""
    cfg = Config(**{**job["config"], "systems": tuple(job["config"]["systems"])})
    vdev = hw.VDevice.from_dict(job["chip"])
    with tempfile.TemporaryDirectory(prefix="pt-tvm-autotune-") as cache:  # TileLang's autotuner: run-local
        rows = run_configs([cfg], vdev, workers=int(job.get("workers", 0)), rep_ms=float(job.get("rep_ms", 1000.0)),
                           system_options={**(job.get("system_options") or {}), "autotune_cache": cache},
                           log=sys.stderr)
    return {"rows": rows, "header": header(job.get("command", ""), torch.cuda.get_device_name())}


def _task(cfg: Config, chip: Mapping[str, Any], options: Mapping[str, Any]) -> Task:
    config = {"suite": cfg.suite, "kernel": cfg.kernel, "problem": dict(cfg.problem), "systems": list(cfg.systems),
              "note": cfg.note}
    ident = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()
    return Task(ident, {"config": config, "chip": dict(chip), **options})


def _failed_rows(cfg: Config, error: str) -> list[dict]:
    """Rows of a config no worker measured: invalid, with the reason."""
    rows = []
    for system in cfg.systems:
        row = {"suite": cfg.suite, "kernel": cfg.kernel, "config": dict(cfg.problem), "system": system, "ms": None,
               "tflops": None, "rel_err": None, "valid": False, "error": f"remote: {error}"[:400]}
        if cfg.note:
            row["note"] = cfg.note
        rows.append(row)
    return rows


_PROVENANCE = ("device", "driver", "cuda", "torch", "tilelang", "pt_tvm", "python", "git_commit")


def run_remote(configs: Sequence[Config], vdev: Any, *, tracker: str, key: str, options: Mapping[str, Any],
               timeout_s: float = 1800.0, log: Any = None) -> tuple[list[dict], dict]:
    """(rows in config order, header fields): each config measured whole on one of the tracker's ``key`` workers.

    ``options`` go to :func:`run_config` (``rep_ms``, ``workers``, ``system_options``, ``command``).
    The header fields are the workers' shared provenance (``device``, versions, commit; a field
    on which they differ lists every value) and ``parts``: which worker measured which config.
    """
    log = sys.stdout if log is None else log  # the stream of the call, not of import time
    tasks = [_task(c, vdev.to_dict(), options) for c in configs]

    def progress(o) -> None:
        rows = (o.result or {}).get("rows") or []
        state = "error: " + (o.error or str((o.result or {}).get("error")))[:200] if not rows else f"{len(rows)} rows"
        print(f"{o.task.payload['config']['kernel']} {o.task.payload['config']['problem']} on "
              f"{o.worker or '-'}: {state}", file=log, flush=True)

    outcomes = {o.task.id: o for o in Fanout(tracker, key, BENCH, timeout_s=timeout_s, log=log).run(tasks, progress)}
    rows, parts = [], []
    for cfg, task in zip(configs, tasks):
        o = outcomes[task.id]
        answer = o.result or {}
        if answer.get("rows"):
            rows += answer["rows"]
            parts.append({"worker": o.worker, "kernel": cfg.kernel, "config": dict(cfg.problem),
                          **{k: answer["header"].get(k) for k in _PROVENANCE}})
        else:
            rows += _failed_rows(cfg, o.error or str(answer.get("error", "no rows")))
    head: dict = {"parts": parts}
    for k in _PROVENANCE:
        values = sorted({str(p[k]) for p in parts})
        head[k] = values[0] if len(values) == 1 else values
    return rows, head
