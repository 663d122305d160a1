"""pt-tvm's kernels of a layer, found without a GPU and compiled ahead of the timed process in worker processes.

:func:`kernel_calls` runs a layer with pt-tvm's ops on meta tensors under a dispatch mode that records every
``torch.ops.pt_tvm`` kernel op the layer reaches (the composite ``linear`` and ``ssd_chunk_scan`` decompose into
``gemm``, ``chunk_state`` and ``chunk_scan``): their argument shapes are exactly what the real run passes.
:class:`Warmer` replays each distinct call once on zero-filled CUDA tensors in a pool of processes (at a
lower CPU priority), so the ops' own first-call path (plan cache, else the cost-model search; TileLang's
compile) runs there and leaves its plan in pt-tvm's plan cache and its binary in TileLang's kernel cache.
The timed process then takes the same path and finds both on disk: compiling many kernels takes minutes
per kernel in one process, seconds per kernel on the pool.
"""
from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .models import LAYERS, twin
from .opsets import PT_TVM

__all__ = ["TensorSpec", "KernelCall", "kernel_calls", "Warmer", "WAIT_S"]

WAIT_S = 600.0  # longest wait for one config's kernels; past it the timed process compiles what is missing


@dataclass(frozen=True)
class TensorSpec:
    """A tensor argument: shape, dtype and, for a view the op reads as it lies (the causal conv1d's columns of the
    in-projection), its strides (None: contiguous)."""

    shape: tuple[int, ...]
    dtype: str
    strides: tuple[int, ...] | None = None

    def zeros(self, device: str) -> torch.Tensor:
        dtype = getattr(torch, self.dtype)
        if self.strides is None:
            return torch.zeros(self.shape, dtype=dtype, device=device)
        return torch.empty_strided(self.shape, self.strides, dtype=dtype, device=device).zero_()

    def __str__(self) -> str:
        strides = "" if self.strides is None else f" strides {self.strides}"
        return f"{'x'.join(map(str, self.shape))} {self.dtype}{strides}"


@dataclass(frozen=True)
class KernelCall:
    """One call of a ``torch.ops.pt_tvm`` kernel op: ``op`` (``gemm``, ``attention``, ...), its arguments with
    tensors as :class:`TensorSpec`, and its keyword arguments."""

    op: str
    args: tuple
    kwargs: tuple[tuple[str, Any], ...] = ()

    def __str__(self) -> str:
        show = [str(a) if isinstance(a, TensorSpec) else repr(a) for a in self.args]
        return f"{self.op}({', '.join(show + [f'{k}={v!r}' for k, v in self.kwargs])})"

    def run(self, device: str = "cuda") -> Any:
        """Call the op on zero-filled tensors of the recorded shapes."""
        args = [a.zeros(device) if isinstance(a, TensorSpec) else a for a in self.args]
        return getattr(torch.ops.pt_tvm, self.op)(*args, **dict(self.kwargs))


def _spec(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        strides = None if value.is_contiguous() else tuple(value.stride())
        return TensorSpec(tuple(value.shape), str(value.dtype).removeprefix("torch."), strides)
    return value


class _Recorder(TorchDispatchMode):
    """Records the pt_tvm ops that reach the dispatcher; runs every op as it would (meta: shapes only)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[KernelCall] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001 (PyTorch's signature)
        kwargs = kwargs or {}
        if func.namespace == "pt_tvm":
            self.calls.append(KernelCall(func._schema.name.split("::")[1], tuple(_spec(a) for a in args),
                                         tuple((k, _spec(v)) for k, v in sorted(kwargs.items()))))
        return func(*args, **kwargs)


def kernel_calls(layer: str, problem: Mapping[str, Any]) -> list[KernelCall]:
    """The distinct pt-tvm kernel calls of ``layer`` (a :data:`benchmarks.layers.models.LAYERS` name) with pt-tvm's
    ops on ``problem`` (``batch``, ``seqlen``, ``dtype``), in the order the layer makes them; no GPU needed."""
    dtype = getattr(torch, problem["dtype"])
    module = twin(LAYERS[layer](device="meta", dtype=dtype), PT_TVM)
    x = torch.empty(problem["batch"], problem["seqlen"], module.width, device="meta", dtype=dtype)
    with torch.no_grad(), _Recorder() as recorder:
        module(x)
    return list(dict.fromkeys(recorder.calls))


def _lower_priority() -> None:
    os.nice(10)


def _compile(call: KernelCall) -> str:
    """Worker: one kernel call on the GPU (its first call: plan, compile, run); '' or the error in one line."""
    try:
        call.run("cuda")
        torch.cuda.synchronize()
        return ""
    except Exception as e:  # a shape pt-tvm refuses is reported by the timed process too
        text = str(e).strip()
        return f"{type(e).__name__}: {text.splitlines()[-1][:300] if text else ''}"
    finally:
        torch.cuda.empty_cache()


def _outcome(future: concurrent.futures.Future) -> str:
    """A finished job's error ('' when it compiled), also when its worker died (a broken pool)."""
    e = future.exception()
    return future.result() if e is None else f"{type(e).__name__}: {e}"


class Warmer:
    """The pt-tvm kernels of ``calls`` (one list per config) compiled in ``workers`` processes, in config order;
    :meth:`wait` blocks until one config's are done. Use as a context manager (the pool shuts down at exit)."""

    def __init__(self, calls: Sequence[Sequence[KernelCall]], workers: int):
        self._calls = [list(c) for c in calls]
        self._pool = concurrent.futures.ProcessPoolExecutor(
            max_workers=max(1, workers), mp_context=multiprocessing.get_context("spawn"), initializer=_lower_priority)
        self._futures: dict[KernelCall, concurrent.futures.Future] = {}
        for config_calls in self._calls:
            for call in config_calls:
                if call not in self._futures:
                    self._futures[call] = self._pool.submit(_compile, call)

    def wait(self, i: int, timeout_s: float = WAIT_S) -> dict[str, Any]:
        """Wait for config ``i``'s kernels (at most ``timeout_s``); row fields saying how long and what failed."""
        t0 = time.perf_counter()
        futures = [self._futures[c] for c in self._calls[i]]
        done, _ = concurrent.futures.wait(futures, timeout=timeout_s)
        errors = {str(c): _outcome(f) for c, f in zip(self._calls[i], futures) if f in done and _outcome(f)}
        if all(f.done() for f in self._futures.values()):  # every kernel compiled: free the workers' GPU memory
            self._pool.shutdown(wait=False)
        return {"warm_wait_s": round(time.perf_counter() - t0, 1), "warm_kernels": len(futures),
                "warm_missing": len(futures) - len(done), **({"warm_errors": errors} if errors else {})}

    def __enter__(self) -> "Warmer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
