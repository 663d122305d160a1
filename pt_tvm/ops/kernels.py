"""Kernels per shape for pt-tvm's ops: a plan from the plan cache, else the search's (or tuning's), compiled once.

The first call of a (template, problem, device) looks the plan up in the plan cache
(:class:`pt_tvm.cache.PlanCache`, keyed by :func:`pt_tvm.cache.template_key`); on a miss the
cost-model search picks it (:func:`pt_tvm.schedule_template`), or, when the user asks for
tuning, the GPU measures the search's best few (:func:`pt_tvm.tune.tune_template`). The planned
PrimFunc is compiled (:meth:`pt_tvm.templates.Template.compile`), the choice logged once on logger
``pt_tvm.ops``, and the kernel kept in memory: later calls of the shape do no search and no compile.
On disk, the plan cache keeps the plan and TileLang's kernel cache (``~/.tilelang/cache``) the
compiled binary, so a new process rebuilds the PrimFunc from the cached plan and TileLang loads
the binary instead of running nvcc.
"""
from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import time
import warnings
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator, Mapping

import torch

from .. import hw, templates
from ..cache import PlanCache, PlanCacheWarning, model_fingerprint, template_key
from ..compiler import schedule_template
from ..cost import load_calibration
from ..passes import ScheduleMismatch, apply_plan, extract_stask_graph
from ..plan import PlanError
from ..search import SearchSpace
from ..templates import Template, TemplateError
from ..templates.base import bucket
from ..tune import DEFAULT_TOP_K, tune_template
from .checks import ArgumentError, ArgumentTypeError

__all__ = ["Config", "KernelStore", "TUNE_ENV", "DYNAMIC_ENV", "configure", "current", "using", "launch", "chip_of",
           "compile_kernel", "rows", "tokens"]

log = logging.getLogger("pt_tvm.ops")

TUNE_ENV = "PT_TVM_TUNE"  # "1": tune every new shape on the GPU (Config.tune's default)
DYNAMIC_ENV = "PT_TVM_DYNAMIC_TOKENS"  # "1": a kernel per bucket of token counts (Config.dynamic_tokens)
_ON = ("1", "true", "yes", "on")
_SEARCH = SearchSpace()
_SEED = 0


@dataclass(frozen=True)
class Config:
    """How a new shape gets its plan.

    Attributes
    ----------
    tune : bool
        Measure the search's ``top_k`` best plans on the GPU and keep the fastest, instead of
        the cost model's pick (minutes per shape). Default: ``$PT_TVM_TUNE`` set to 1/true/yes/on.
    top_k : int
        Plans measured per shape when tuning.
    cache_dir : str, optional
        Plan cache root (default :func:`pt_tvm.cache.default_cache_dir`).
    dynamic_tokens : bool
        The GEMM ops (``matmul``, ``linear``, ``swiglu``) and the SSD ops (``chunk_state``, ``chunk_scan``,
        ``ssd_chunk_scan``) compile one kernel per bucket of token counts or sequence lengths (the next power of
        two, :func:`bucket`) with a symbolic count, its plan searched at the bucket, instead of one kernel per
        exact count (the fastest, but each new count searches and compiles); ``attention`` over ``[batch,
        seqlen, ...]`` tensors runs as a packed batch on the varlen kernel of the lengths' buckets
        (``attention_qkv`` still compiles per length). Default:
        ``$PT_TVM_DYNAMIC_TOKENS`` set to 1/true/yes/on.
    """

    tune: bool = False
    top_k: int = DEFAULT_TOP_K
    cache_dir: str | None = None
    dynamic_tokens: bool = False

    def __post_init__(self) -> None:
        for flag in ("tune", "dynamic_tokens"):
            if not isinstance(getattr(self, flag), bool):
                raise ArgumentTypeError(f"pt_tvm.ops.configure: {flag!r} must be a bool, got {getattr(self, flag)!r}")
        if not isinstance(self.top_k, int) or isinstance(self.top_k, bool) or self.top_k < 1:
            raise ArgumentError(f"pt_tvm.ops.configure: 'top_k' must be a positive int, got {self.top_k!r}")

    @classmethod
    def from_env(cls) -> "Config":
        return cls(tune=os.environ.get(TUNE_ENV, "").strip().lower() in _ON,
                   dynamic_tokens=os.environ.get(DYNAMIC_ENV, "").strip().lower() in _ON)


def tokens(name: str, n: int, least: int) -> dict[str, Any]:
    """A template's token-count parameter ``name`` at ``n``: ``n`` itself, or, with
    :attr:`Config.dynamic_tokens`, a symbolic count (``dynamic_<name>``) priced at ``n``'s bucket (at least
    ``least``, a tile's rows), one kernel for the whole bucket."""
    if current().config.dynamic_tokens:
        return {name: bucket(n, least), f"dynamic_{name}": True}
    return {name: n}


def rows(M: int) -> dict[str, Any]:
    """A GEMM template's row count at ``M`` tokens (:func:`tokens`; buckets of at least 64 rows)."""
    return tokens("M", M, 64)


def chip_of(device: torch.device) -> hw.VDevice:
    """pt-tvm's model of the GPU holding ``device`` (probes it: called once per new shape)."""
    return hw.from_device(device.index if device.index is not None else torch.cuda.current_device())


def compile_kernel(template: Template, problem: Mapping[str, Any], func: Any, vdev: hw.VDevice) -> Callable:
    """The compiled kernel of ``func``, a planned PrimFunc of ``template`` at ``problem``, for ``vdev``.

    TileLang reads the problem from ``func``; it is passed for stand-ins that compute the template's
    reference instead (the CPU tests run the ops' dispatch through one)."""
    return template.compile(func, vdev.tvm_target())


class KernelStore:
    """Compiled kernels by (template, problem, device), and the :class:`Config` that makes new ones."""

    def __init__(self, config: Config | None = None):
        self.config = config if config is not None else Config.from_env()
        self._kernels: dict[tuple, Callable] = {}

    def kernel(self, name: str, problem: Mapping[str, Any], device: torch.device) -> Callable:
        """The kernel of template ``name`` at ``problem`` on ``device``; made on the first call of the shape."""
        key = (name, tuple(sorted(problem.items())), device)
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = self._kernels[key] = self._make(templates.get(name), problem, device)
        return kernel

    def __len__(self) -> int:
        return len(self._kernels)

    def clear(self) -> None:
        """Forget the compiled kernels (the plan cache and TileLang's kernel cache stay)."""
        self._kernels.clear()

    def _make(self, template: Template, params: Mapping[str, Any], device: torch.device) -> Callable:
        problem = {**template.problem, **params}  # the template checks it when it searches or builds
        vdev = chip_of(device)
        start = time.perf_counter()
        cache = PlanCache(self.config.cache_dir)
        extra = {"space": _SEARCH, "seed": _SEED, "calibration": load_calibration(vdev.name)}
        keys = {"tuned": template_key(template.name, problem, vdev, {**extra, "mode": "tuned"}),
                "model": template_key(template.name, problem, vdev, {**extra, "mode": "model",
                                                                     "model": model_fingerprint()})}
        try:
            for mode in ("tuned",) if self.config.tune else ("tuned", "model"):
                found = _cached(cache, keys[mode], template, problem, vdev)
                if found is not None:
                    func, graph, plan = found
                    kernel, how = compile_kernel(template, problem, func, vdev), f"plan cache ({mode})"
                    break
            else:
                best, kernel, how = self._search(template, problem, vdev)
                graph, plan = best.graph, best.plan
                key = keys["tuned" if self.config.tune else "model"]
                if key is not None:
                    cache.put(key, plan, {"template": template.name, "problem": problem, "note": best.note})
        except TemplateError as e:
            raise TemplateError(f"pt_tvm.ops: the {template.name!r} template does not take this shape: {e}") from None
        log.info("%s %s on %s (%s): %s from %s, ready in %.1f s", template.name, _problem_text(problem),
                 vdev.name, device, plan.describe(graph).splitlines()[0], how, time.perf_counter() - start)
        return kernel

    def _search(self, template: Template, problem: Mapping[str, Any], vdev: hw.VDevice) -> tuple[Any, Callable, str]:
        """(winning candidate, its compiled kernel, how it won): the cost model's pick, or the fastest measured."""
        if self.config.tune:
            tuned = tune_template(template.name, vdev, params=problem, top_k=self.config.top_k)
            how = f"tuning (best of {len(tuned.measured)}, {tuned.best.ms:.3f} ms)"
            return tuned.best.candidate, tuned.kernel, how
        result, _, build = schedule_template(template.name, vdev, params=problem, space=_SEARCH, seed=_SEED)
        kernel = compile_kernel(template, problem, build(), vdev)
        return result.best, kernel, f"search ({result.best.seconds * 1e3:.3f} ms predicted)"


def _cached(cache: PlanCache, key: str | None, template: Template, problem: Mapping[str, Any],
            vdev: hw.VDevice) -> tuple[Any, Any, Any] | None:
    """(planned PrimFunc, graph, plan) of the cache entry ``key``, or None on a miss. An entry that no longer
    fits the template's PrimFunc (the template changed) warns and counts as a miss; the search replaces it."""
    plan = cache.get(key) if key is not None else None
    if plan is None:
        return None
    try:
        func = template.build(**problem, **plan.tile)
        graph = extract_stask_graph(func, vdev)
        return apply_plan(func, plan, vdev, graph), graph, plan
    except (TemplateError, ScheduleMismatch, PlanError) as e:
        warnings.warn(f"plan cache entry {cache.path(key)} no longer fits template {template.name!r} "
                      f"({type(e).__name__}: {' '.join(str(e).split())}); searching again", PlanCacheWarning,
                      stacklevel=2)
        return None


def _problem_text(problem: Mapping[str, Any]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in problem.items()) + "}"


_CURRENT: contextvars.ContextVar[KernelStore] = contextvars.ContextVar("pt_tvm_ops_store", default=KernelStore())


def current() -> KernelStore:
    """The store the ops use here: the process's, unless inside :func:`using`."""
    return _CURRENT.get()


@contextlib.contextmanager
def using(store: KernelStore) -> Iterator[KernelStore]:
    """Run the ops with ``store`` (its own kernels and config) inside the ``with`` block."""
    token = _CURRENT.set(store)
    try:
        yield store
    finally:
        _CURRENT.reset(token)


def configure(**changes: Any) -> Config:
    """Change the current store's :class:`Config` (``tune``, ``top_k``, ``cache_dir``, ``dynamic_tokens``); returns
    the new one.

    Takes effect for shapes not compiled yet; ``current().clear()`` forgets the compiled ones.
    """
    unknown = set(changes) - set(Config.__dataclass_fields__)
    if unknown:
        raise ArgumentTypeError(f"pt_tvm.ops.configure: no setting {sorted(unknown)[0]!r} "
                        f"(known: {', '.join(Config.__dataclass_fields__)})")
    store = current()
    store.config = replace(store.config, **changes)
    return store.config


def launch(name: str, problem: Mapping[str, Any], *inputs: torch.Tensor) -> Any:
    """Run template ``name``'s kernel at ``problem`` on ``inputs`` (on their device); returns its outputs."""
    device = inputs[0].device
    kernel = current().kernel(name, problem, device)
    if device.type == "cuda" and device.index != torch.cuda.current_device():
        with torch.cuda.device(device):
            return kernel(*inputs)
    return kernel(*inputs)
