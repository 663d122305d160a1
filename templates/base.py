"""The template contract: a parameterized TileLang kernel builder plus its PyTorch reference.

A template separates the *problem* (shapes, dtype, masking: what is computed)
from the *tile* (block sizes: how it is cut into tiles), because pt-tvm's
inter-EU search chooses the tile while the user fixes the problem.
Templates carry no schedule: the pipelined loop is a plain
``T.Pipelined(n, num_stages=num_stages)``; pt-tvm writes the schedule.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import tilelang
import tilelang.language as T
from tilelang.transform import PassConfigKey
from tvm.script.ir_builder import IRBuilder

from pt_tvm.errors import PtTvmError
from pt_tvm.passes import HINTS_ATTR, check_emitted, pass_configs

__all__ = ["Template", "TemplateError", "MAX_THREADS", "FAST_MATH", "size", "bucket", "priced", "operand", "named",
           "check_strides", "strided"]

MAX_THREADS = 1024  # threads per block on every chip pt-tvm models (CUDA's and HIP's limit)


# exp2 -> ex2.approx and friends, as TileLang's own attention and Mamba examples compile
FAST_MATH = {PassConfigKey.TL_ENABLE_FAST_MATH.value: True}


def size(name: str, value: int, dynamic: bool) -> Any:
    """A kernel's size: ``value``, or (``dynamic``) a symbolic ``name``, a kernel argument that ``value`` only
    prices: one kernel for every size, as the ops' token buckets compile them."""
    return T.dynamic(name) if dynamic else value


def bucket(length: int, least: int = 1, most: int | None = None) -> int:
    """The next power of two at or above ``length`` (and ``least``; at most ``most``): the size a kernel serving a
    bucket of sizes is compiled or priced for (the ops' token buckets, decoding's KV-length buckets)."""
    size = max(least, 1 << max(0, length - 1).bit_length())
    return size if most is None else min(most, size)


def named(name: str, alloc: Callable[..., Any], *args: Any) -> Any:
    """``alloc(*args)`` named ``name``, where a helper allocates for the tile program that calls it: the builder
    names only buffers bound to a Python name in the program itself, and pt-tvm's plans and the emitted CUDA name
    them."""
    buf = alloc(*args)
    IRBuilder.name(name, buf)
    return buf


def operand(shape: tuple, dtype: str, strides: tuple = ()) -> Any:
    """A global tensor's type: packed, or with ``strides`` (elements, one per dim) where it is a view of a larger
    tensor (some columns of a matrix, the heads of a fused projection): static, so TileLang builds its TMA
    descriptor over them (a symbolic stride makes TileLang 0.1.15 load it an element at a time)."""
    return T.StridedTensor(shape, tuple(strides), dtype) if strides else T.Tensor(shape, dtype)


def check_strides(template: str, problem: Mapping[str, Any], dims: Mapping[str, tuple]) -> None:
    """Each problem parameter of ``dims`` (absent: ``()``) is ``()``, a packed tensor, or one positive stride in
    elements per dim named there (all but the last, unit-strided dim), each a multiple of 8: a TMA descriptor's
    strides are whole 16-byte units (8 elements of fp16/bf16)."""
    for key, names in dims.items():
        strides = problem.get(key, ())
        if not isinstance(strides, (tuple, list)) or (strides and (
                len(strides) != len(names) or any(not isinstance(v, int) or isinstance(v, bool) or v <= 0 or v % 8
                                                  for v in strides))):
            raise TemplateError(f"{template}: parameter {key!r} must be () for a packed tensor or its "
                                f"({', '.join(names)}) strides in elements, {len(names)} positive multiples of 8 "
                                f"(16 bytes), got {strides!r}")


def strided(make: Callable[[tuple], Any], shape: tuple, strides: tuple) -> Any:
    """``make(shape)``, a packed tensor, or (``strides``: all dims' but the last, whose stride is 1) a view at those
    strides of ``make``'s values in storage just large enough: the views ``make_inputs`` gives a strided problem."""
    if not strides:
        return make(shape)
    strides = (*strides, 1)
    return make((1 + sum((n - 1) * st for n, st in zip(shape, strides)),)).as_strided(shape, strides)


def priced(func: Any, hints: Mapping[str, int]) -> Any:
    """``func`` with its symbolic sizes priced at ``hints`` (pt-tvm's extraction reads them); unchanged without."""
    return func.with_attr(HINTS_ATTR, dict(hints)) if hints else func


class TemplateError(PtTvmError, ValueError):
    """An unknown template, or a parameter a template does not take or accept."""


@dataclass(frozen=True)
class Template:
    """One kernel family.

    Attributes
    ----------
    name : str
        Registry name (``pt-tvm graph NAME``).
    builder : Callable[..., PrimFunc]
        ``builder(**problem, **tile, num_stages=n)`` returns the TileLang PrimFunc.
    reference : Callable[..., torch.Tensor]
        ``reference(*inputs, **problem)``: the float32 PyTorch result.
    problem : Mapping[str, Any]
        Default problem parameters (shapes, dtype name, flags).
    tile : Mapping[str, Any]
        Default tile parameters (block sizes, threads).
    tile_space : Mapping[str, tuple]
        Candidate values per tile parameter, for the inter-EU search.
    make_inputs : Callable
        ``make_inputs(problem, device, generator)`` -> tuple of random input tensors.
    flops : Callable[[Mapping[str, Any]], float]
        Useful floating-point operations of one call (for TFLOP/s).
    out_idx : tuple[int, ...]
        Indices of the PrimFunc parameters that are outputs (``tilelang.compile(out_idx=...)``).
    inout_idx : tuple[int, ...]
        Indices of inputs the kernel updates in place (accumulators that must be zero on entry);
        the reference returns the ``out_idx`` outputs first, then these, in this order.
    check : Callable
        ``check(problem, tile)`` raises TemplateError when the combination is invalid.
    pass_configs : Mapping[str, Any]
        TileLang pass configuration the kernel is meant to be compiled with (e.g. fast math
        for exp2-heavy kernels); pt-tvm and its baselines compile with the same configs.
    extra_seconds : Callable or None
        ``extra_seconds(problem, tile, vdev)``: predicted time of the template's other kernels
        at that tile (a split-KV decode's combine), which the search adds to each plan of the tile.
    padding_scale : Callable or None
        ``padding_scale(problem, tile)``: the factor on each plan's price of the tile for work its sTask-graph
        cannot see: rows that lengths known only at run time leave past a sequence's end (varlen attention).
    prefer : Mapping[str, Any]
        Tile values that take the place of the rest of their dimension where the cost model prices a tile with
        them near the tile without (``pt_tvm.compiler.PREFER_TOLERANCE``): a measured rule where the model's
        order of the two is known wrong.
    walked : Mapping[str, Any]
        Tile values that serve a persistent walk only: a tile with them ranks its persistent plans alone (its
        launched plans are its twin's without them, at the same price: FlashAttention's ``o_shared``).
    pipelines_take_threads : bool
        Whether the software pipelines of a chip that warp-specializes are searched at every ``threads`` value, as
        elsewhere, where a producer warp cannot stream the loads (:meth:`tile_candidates`): for a kernel with no
        tensor-core work, whose threads share its CUDA-core work out.
    """

    name: str
    builder: Callable[..., Any]
    reference: Callable[..., Any]
    problem: Mapping[str, Any]
    tile: Mapping[str, Any]
    tile_space: Mapping[str, tuple]
    make_inputs: Callable[..., tuple]
    flops: Callable[[Mapping[str, Any]], float]
    out_idx: tuple[int, ...]
    inout_idx: tuple[int, ...] = ()
    check: Callable[[Mapping[str, Any], Mapping[str, Any]], None] = field(default=lambda p, t: None)
    doc: str = ""
    pass_configs: Mapping[str, Any] = field(default_factory=dict)
    extra_seconds: Callable[[Mapping[str, Any], Mapping[str, Any], Any], float] | None = None
    padding_scale: Callable[[Mapping[str, Any], Mapping[str, Any]], float] | None = None
    prefer: Mapping[str, Any] = field(default_factory=dict)
    walked: Mapping[str, Any] = field(default_factory=dict)
    pipelines_take_threads: bool = False

    def resolve(self, **overrides: Any) -> tuple[dict, dict]:
        """Split ``overrides`` into (problem, tile) dicts over the defaults and check that tile; unknown keys
        raise."""
        problem, tile = self._split(overrides)
        _check_tile_values(self.name, tile, self.tile_space)
        self.check(problem, tile)
        return problem, tile

    def resolve_problem(self, **params: Any) -> tuple[dict, dict]:
        """``(problem, pins)``: ``params`` split into the problem over the defaults and the tile parameters
        given, which pin those dimensions of the tile search. The problem is checked against the tiles the
        search may choose (:meth:`tile_candidates`), not the default tile alone; when none fits, the error
        is the default tile's (with the pins)."""
        problem, tile = self._split(params)
        pins = {k: v for k, v in tile.items() if k in params}
        try:
            self.resolve(**problem, **pins)
        except TemplateError:
            if not self.tile_candidates(problem, pins=pins):
                raise
        return problem, pins

    def build(self, num_stages: int = 2, **overrides: Any):
        """The PrimFunc for these parameters, with TileLang's default pipelining depth."""
        problem, tile = self.resolve(**overrides)
        return self.builder(**problem, **tile, num_stages=num_stages)

    def tile_candidates(self, problem: Mapping[str, Any], features: frozenset = frozenset(),
                        pins: Mapping[str, Any] | None = None) -> list[dict]:
        """The tile space (the inter-EU level of the search) at ``problem``, each parameter in ``pins`` fixed
        to its value, minus combinations the template rejects; warp-specialized plans set their warps
        themselves, so with ``warp_specialization`` among a chip's ``features`` one ``threads`` value per tile
        suffices (software-pipelined plans at a tile's other thread counts ran 1.3-3x slower than the best
        plan on 72 of 73 measured on one H100, 2026-11-23; docs/NOTES-parity.md). A template whose pipelines take
        their threads (:attr:`pipelines_take_threads`) has the tiles at the other counts after the rest, planned where
        a producer warp cannot stream their loads (:func:`pt_tvm.search.search_tiles`)."""
        space = {**self.tile_space, **{k: (v,) for k, v in (pins or {}).items()}}
        ws = "warp_specialization" in features and "threads" in space
        out, others, seen = [], [], set()
        for values in itertools.product(*space.values()):
            tile = dict(zip(space, values))
            key = tuple((k, v) for k, v in tile.items() if not (ws and k == "threads"))
            if key in seen and not self.pipelines_take_threads:
                continue
            try:
                self.resolve(**problem, **tile)
            except TemplateError:
                continue
            (others if key in seen else out).append(tile)
            seen.add(key)
        return out + others

    def _split(self, params: Mapping[str, Any]) -> tuple[dict, dict]:
        """``params`` over the default (problem, tile), CLI strings coerced; unknown keys raise."""
        problem, tile = dict(self.problem), dict(self.tile)
        for key, value in params.items():
            if key in problem:
                problem[key] = _coerce(self.name, key, problem[key], value)
            elif key in tile:
                tile[key] = _coerce(self.name, key, tile[key], value)
            else:
                known = ", ".join(sorted([*problem, *tile]))
                raise TemplateError(f"template {self.name!r} has no parameter {key!r} (known: {known})")
        return problem, tile

    def compile(self, func: Any, target: Any) -> Any:
        """``tilelang.compile`` of one of this template's PrimFuncs with its outputs and pass configs
        (plus those its plan recorded, see :func:`pt_tvm.passes.pass_configs`), its emitted CUDA checked
        (:func:`pt_tvm.passes.check_emitted`). The sizes its symbolic sizes were priced at (``priced``) are left
        out: they change no code, and TileLang's kernel cache keys on the whole PrimFunc, so one kernel of dynamic
        sizes compiles once whatever sizes priced its plan."""
        compiled = func.without_attr(HINTS_ATTR) if func.attrs and HINTS_ATTR in func.attrs else func
        kernel = tilelang.compile(compiled, out_idx=list(self.out_idx), target=target,
                                  pass_configs=pass_configs(func, self.pass_configs))
        check_emitted(func, kernel.get_kernel_source())
        return kernel


def _check_tile_values(template: str, tile: Mapping[str, Any], space: Mapping[str, tuple]) -> None:
    """What no kernel can launch with, whatever the template: tile parameters are positive ints (or 0 where the
    template's tile space lists it: a switch), block sizes (``block_*``) powers of two (TileLang's layouts and
    swizzles assume them) or a value the template's tile space lists (a template that offers one has checked it
    lowers), ``threads`` within a block's limit."""
    for key, value in tile.items():
        switch = value == 0 and 0 in space.get(key, ())
        if not isinstance(value, int) or isinstance(value, bool) or (value <= 0 and not switch):
            raise TemplateError(f"{template}: parameter {key!r} must be a positive int, got {value!r}")
        if key.startswith("block_") and value & (value - 1) and value not in space.get(key, ()):
            raise TemplateError(f"{template}: parameter {key!r} must be a power of two, got {value}")
    if tile.get("threads", 0) > MAX_THREADS:
        raise TemplateError(f"{template}: parameter 'threads'={tile['threads']} exceeds the {MAX_THREADS} threads "
                            f"a block can have")


def _coerce(template: str, key: str, default: Any, value: Any) -> Any:
    """Parse CLI strings into the type of the default value."""
    if not isinstance(value, str) or isinstance(default, str):
        return value
    try:
        if isinstance(default, bool):
            if value.lower() in ("1", "true", "yes"):
                return True
            if value.lower() in ("0", "false", "no"):
                return False
            raise ValueError(value)
        if isinstance(default, tuple):
            return tuple(int(v) for v in value.split(",") if v.strip())
        return type(default)(value)
    except ValueError:
        raise TemplateError(
            f"template {template!r}: parameter {key!r} expects {type(default).__name__}, got {value!r}"
        ) from None
