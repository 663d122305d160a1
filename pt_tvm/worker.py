"""What runs inside a measurement worker's TVM RPC server process (``pt-tvm worker`` starts one per GPU).

Before it serves, each server process runs :func:`serve_init`: it pins its
GPU, imports what every session needs (so the process TVM forks per session
starts warm), and registers the functions it serves as TVM global functions
over JSON text. Functions are named ``module:function`` and travel as names,
so tests serve fakes (that sleep, hang or crash) the same way as pt-tvm's
measurement (:func:`pt_tvm.tune.measure_one`). This module stays light: a
server of fakes imports nothing else of pt-tvm.
"""
from __future__ import annotations

import importlib
import json
import os
import sys
import time
from typing import Any, Callable, Mapping, Sequence

import tvm_ffi

from .errors import one_line

__all__ = ["MEASURE", "BENCH", "DEFAULT_FUNCTIONS", "GPU_PRELOAD", "serve_init", "load_function", "listening"]

MEASURE = "pt_tvm.measure_plan"  # the global function names the servers register
BENCH = "pt_tvm.bench_config"
DEFAULT_FUNCTIONS = {MEASURE: "pt_tvm.tune:measure_one"}
# imported by the server before it forks a session per job, so each session starts warm
GPU_PRELOAD = ("torch", "tilelang", "pt_tvm.tune")


def load_function(spec: str) -> Callable[[Mapping[str, Any]], Mapping[str, Any]]:
    """The function named ``module:function`` (ValueError naming what is wrong)."""
    module, sep, name = spec.partition(":")
    if not sep or not module or not name:
        raise ValueError(f"expected MODULE:FUNCTION, got {spec!r}")
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise ValueError(f"cannot load {spec!r}: {e}") from None
    if not callable(fn):
        raise ValueError(f"{spec!r} is not callable")
    return fn


def _endpoint(fn: Callable[[Mapping[str, Any]], Mapping[str, Any]]) -> Callable[[str], str]:
    """``fn`` over JSON text, as an RPC global function: its exceptions come back as ``error``."""
    def call(text: str) -> str:
        t0 = time.perf_counter()
        try:
            out = dict(fn(json.loads(text)))
        except Exception as e:  # the job's fault; a crash or a hang instead ends the session
            out = {"error": f"worker: {one_line(e)}"}
        out["worker_s"] = time.perf_counter() - t0
        return json.dumps(out, default=str)

    return call


def serve_init(functions: Mapping[str, str], device: str | None = None, preload: Sequence[str] = ()) -> None:
    """Run by each RPC server process before it serves: pin its GPU, import ``preload``, register
    ``functions`` (global name -> ``module:function``)."""
    if device is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = device
    # TileLang and tvm_ffi ask torch.cuda.is_available() on import; by default that calls cuInit, and a
    # session forked after it could not use the GPU. NVML answers instead and leaves the driver alone.
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    for module in preload:
        importlib.import_module(module)
    for name, spec in functions.items():
        tvm_ffi.register_global_func(name, _endpoint(load_function(spec)), override=True)


def listening() -> bool:
    """Run inside a server process (sent by the supervisor): is TVM's listening thread still alive?
    (TVM's server module is loaded there: the process runs it.)"""
    state = sys.modules["tvm.rpc.server"].PopenRPCServerState.current
    return state is not None and state.thread.is_alive()
