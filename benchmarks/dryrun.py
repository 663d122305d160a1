"""A dry run: everything the GPU run does except building peers, checking and timing, on a CPU.

For each config the template is resolved, pt-tvm's two-level search runs for
the target, the candidates measured refinement would compile are picked
(``pt_tvm.tune.diverse_top``), and the winner is lowered with
``tilelang.lower``; TileLang's own schedules are lowered too (``tilelang-auto``,
``tilelang-ws`` with its role-based warp specialization, and for
``tilelang-autotune`` the first config of the space its autotuner would try,
through the same ``tilelang.jit`` wrapper; the tuning itself needs a GPU).
Rows have the run's fields with ``ms``/``tflops``/``rel_err`` None and
``dry_run: true``, and ``grid``/``waves`` of TileLang's kernels on the
model's SM count. ``valid`` is True when the system's CPU step (search and
lowering) succeeded, False when it raised (``error`` says why), and None for
peers, which are only built on a GPU (``skipped`` says so).
"""
from __future__ import annotations

import sys
import time
from typing import Any, Iterable, Mapping, Sequence

from pt_tvm import templates
from pt_tvm.compiler import lower_planned, schedule_template
from pt_tvm.tune import DEFAULT_TOP_K, diverse_top

from .suite import Config, _short, error_text
from .systems import AUTOTUNE_NUM_STAGES, autotune_configs, autotune_jit, grid_blocks, role_based_ws_configs

__all__ = ["dry_run_configs"]

_PT_TVM = ("pt-tvm", "pt-tvm-model")  # both take the searched plan; pt-tvm then measures the top k on a GPU


def _lower(func: Any, vdev: Any, pass_configs: Mapping[str, Any], problem: Mapping[str, Any]) -> tuple[str, dict]:
    """``tilelang.lower`` for the model's target (no GPU needed): (device source, row fields: its characters,
    seconds, the kernel's grid, at ``problem``'s sizes, and waves on the model's SMs)."""
    t0 = time.perf_counter()
    art = lower_planned(func, vdev.tvm_target(), pass_configs)  # with the configs the plan recorded
    grid = grid_blocks(func, problem)
    return art.kernel_source, {"source_chars": len(art.kernel_source), "lower_s": round(time.perf_counter() - t0, 3),
                               "grid": grid, "waves": round(grid / vdev.num_eus, 3) if grid else None}


def _tilelang_info(system: str, template: Any, problem: Mapping[str, Any], vdev: Any,
                   autotune_stages: Sequence[int]) -> dict:
    """The CPU half of TileLang's own systems: lower the kernel each would build."""
    if system == "tilelang-autotune":
        configs = autotune_configs(template, problem, autotune_stages)
        if not configs:
            raise ValueError(f"{template.name}: no tile of the template's tile space fits this problem")
        func = autotune_jit(template, vdev, problem).get_tir(**problem, **configs[0])
        return {"autotune_configs": len(configs), "lowered_config": configs[0],
                **_lower(func, vdev, template.pass_configs, problem)[1]}
    func = template.build(num_stages=2, **problem)
    if system == "tilelang-ws":  # does TileLang's role-based scheduler change the kernel at all?
        source, lowered = _lower(func, vdev, role_based_ws_configs(template), problem)
        return {"tile": dict(template.tile), **lowered,
                "ws_changed_kernel": source != _lower(func, vdev, template.pass_configs, problem)[0]}
    return {"tile": dict(template.tile), **_lower(func, vdev, template.pass_configs, problem)[1]}


def _pt_tvm_info(cfg: Config, vdev: Any, problem: Mapping[str, Any], template: Any, top_k: int) -> dict:
    """Search, pick the refinement candidates, lower the winner: the CPU half of the pt-tvm systems."""
    t0 = time.perf_counter()
    result, _, build = schedule_template(cfg.kernel, vdev, params=problem)
    wall = time.perf_counter() - t0
    best = result.best
    _, lowered = _lower(build(), vdev, template.pass_configs, problem)
    flops = template.flops(problem)
    return {"plan": best.note, "tile": dict(best.plan.tile), "search_s": round(result.seconds, 3),
            "search_wall_s": round(wall, 3), "plans_considered": result.considered,
            "predicted_ms": best.seconds * 1e3, "predicted_tflops": flops / best.seconds / 1e12,
            "tune_candidates": [{"note": c.note, "tile": dict(c.plan.tile), "predicted_ms": c.seconds * 1e3}
                                for c in diverse_top(result, top_k)], **lowered}


def dry_run_configs(configs: Iterable[Config], vdev: Any, *, log: Any = None,
                    system_options: Mapping[str, Any] | None = None) -> list[dict]:
    """One row per (config, system), as :func:`benchmarks.suite.run_configs` writes them, without a GPU."""
    log = sys.stdout if log is None else log  # the stream of the call, not of import time
    top_k = int((system_options or {}).get("tune_top_k") or DEFAULT_TOP_K)
    stages = (system_options or {}).get("autotune_stages", AUTOTUNE_NUM_STAGES)
    rows = []
    for cfg in configs:
        template = templates.get(cfg.kernel)
        try:
            problem, _ = template.resolve(**cfg.problem)
            setup_error = ""
        except Exception as e:  # a config the template rejects is a failed row per system
            problem, setup_error = dict(cfg.problem), error_text(e)
        pt_info: dict | Exception | None = None  # computed once for pt-tvm and pt-tvm-model
        for system in cfg.systems:
            row = {"suite": cfg.suite, "kernel": cfg.kernel, "config": dict(problem), "system": system,
                   "ms": None, "tflops": None, "rel_err": None, "valid": None, "dry_run": True,
                   "target": vdev.name}
            if cfg.note:
                row["note"] = cfg.note
            try:
                if setup_error:
                    raise ValueError(setup_error)
                if system in _PT_TVM:
                    if pt_info is None:
                        try:
                            pt_info = _pt_tvm_info(cfg, vdev, problem, template, top_k)
                        except Exception as e:  # recorded on both pt-tvm rows
                            pt_info = e
                    if isinstance(pt_info, Exception):
                        raise pt_info
                    info = dict(pt_info)
                    if system != "pt-tvm":
                        info.pop("tune_candidates")
                    row.update(info, valid=True)
                elif system.startswith("tilelang-"):
                    row.update(_tilelang_info(system, template, problem, vdev, stages), valid=True)
                else:
                    row["skipped"] = "peers are built, checked and timed only on a GPU"
            except Exception as e:  # the harness records failures as rows, as on the GPU
                row.update(valid=False, error=error_text(e))
            rows.append(row)
            state = {True: "ok", False: "FAILED", None: "skipped"}[row["valid"]]
            print(f"{cfg.kernel:<16} {_short(problem):<52} {system:<17} dry-run {state}  "
                  f"{row.get('plan', '')} {row.get('error', '')}", file=log, flush=True)
    return rows
