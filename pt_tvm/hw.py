"""Hardware model: vDevice -> EU -> sEU, the paper's description of what a chip offers.

A :class:`VDevice` is the chip: ``num_eus`` identical :class:`EU` s (streaming
multiprocessors / compute units) plus chip-wide figures (clock, DRAM and L2
bandwidth). An EU holds specialized execution units, :class:`SEU` s (the TMA
copy engine, tensor cores, CUDA cores, the special-function unit, the
load/store path), and the limits a plan must respect (shared memory,
registers, threads). Models are built from a spec alone; nothing here probes a
device. Users describe their own chip with :func:`load` (JSON or TOML with the
fields of these dataclasses) or by constructing the dataclasses directly.

Figures are per EU per clock cycle. Where a figure comes from a datasheet or a
published microbenchmark, the comment next to it names the source; figures
marked "model" are modelling assumptions that ``pt_tvm.cost`` calibration
corrects per target.
"""
from __future__ import annotations

import dataclasses
import enum
import json
import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from typing import Any, Mapping

import torch
from tilelang import tvm

from .errors import PtTvmError

__all__ = [
    "SEUKind",
    "SEU",
    "EU",
    "VDevice",
    "HardwareError",
    "for_target",
    "get",
    "names",
    "load",
    "from_device",
]


class HardwareError(PtTvmError, ValueError):
    """An unknown target or chip name, or a malformed chip description."""


class SEUKind(str, enum.Enum):
    """The kinds of specialized execution unit an sTask can run on."""

    TMA = "tma"  # bulk tensor copy engine (Hopper cp.async.bulk.tensor)
    LSU = "lsu"  # load/store path: cp.async, ld/st.global, ds_read/ds_write (ROCm)
    TENSOR_CORE = "tensor_core"  # wgmma / mma.sync / MFMA
    CUDA_CORE = "cuda_core"  # FP32/INT ALUs (VALU on AMD)
    SFU = "sfu"  # special-function unit: exp2, log2, rcp (MUFU; transcendental VALU ops on AMD)


@dataclass(frozen=True)
class SEU:
    """A specialized execution unit of an EU.

    Attributes
    ----------
    name : str
        The instruction family, e.g. ``"wgmma"``, ``"cp.async.bulk.tensor"``.
    kind : SEUKind
    is_async : bool
        Whether the issuing warp continues while the unit works (TMA, cp.async, wgmma).
    throughput : float
        Work per EU per cycle: FLOP for tensor/CUDA cores (16-bit operands for
        tensor cores), results for the SFU, bytes for copy units.
    latency : float
        Fixed cycles from issue to completion of one operation, beyond the throughput term.
    issue : float
        Cycles the issuing warp is busy per operation (what an async unit still costs its issuer).
    """

    name: str
    kind: SEUKind
    is_async: bool
    throughput: float
    latency: float
    issue: float = 0.0

    def __post_init__(self) -> None:
        where = f"sEU {self.name!r}"
        _check_str(where, "name", self.name)
        if not isinstance(self.kind, SEUKind) and self.kind not in {k.value for k in SEUKind}:
            raise HardwareError(f"{where}: field 'kind' must be one of {', '.join(k.value for k in SEUKind)}, "
                                f"got {self.kind!r}")
        object.__setattr__(self, "kind", SEUKind(self.kind))
        if not isinstance(self.is_async, bool):
            raise HardwareError(f"{where}: field 'is_async' must be true or false, got {self.is_async!r}")
        _check_number(where, "throughput", self.throughput)
        _check_number(where, "latency", self.latency, allow_zero=True)
        _check_number(where, "issue", self.issue, allow_zero=True)


@dataclass(frozen=True)
class EU:
    """A homogeneous execution unit (an SM or CU) and the limits a plan must respect.

    Attributes
    ----------
    name : str
    seus : tuple[SEU, ...]
    smem_per_block : int
        Largest dynamic shared memory (LDS) one block may allocate, bytes.
    smem_per_eu : int
        Shared memory per EU, bytes.
    regs_per_eu : int
        32-bit registers per EU.
    max_regs_per_thread : int
    max_threads_per_block : int
    warp_size : int
    warpgroup_warps : int
        Warps that issue one tensor-core operation together (4 for wgmma, else 1).
    reg_alloc_granularity : int
        Per-thread register counts are allocated in multiples of this (setmaxnreg needs 8).
    min_regs_per_thread : int
        The smallest register budget a role may be given (setmaxnreg's lower bound).
    smem_bandwidth : float
        Bytes a cycle shared memory serves its readers and writers together (0: not modeled).
    """

    name: str
    seus: tuple[SEU, ...]
    smem_per_block: int
    smem_per_eu: int
    regs_per_eu: int
    max_regs_per_thread: int
    max_threads_per_block: int
    warp_size: int
    warpgroup_warps: int = 1
    reg_alloc_granularity: int = 8
    min_regs_per_thread: int = 24
    smem_bandwidth: float = 0.0

    def __post_init__(self) -> None:
        where = f"EU {self.name!r}"
        _check_str(where, "name", self.name)
        if not isinstance(self.seus, (list, tuple)):
            raise HardwareError(f"{where}: field 'seus' must be a list of sEUs, got {self.seus!r}")
        seus = tuple(s if isinstance(s, SEU) else _construct(SEU, s, f"{where}: seus[{i}]")
                     for i, s in enumerate(self.seus))
        object.__setattr__(self, "seus", seus)
        kinds = [s.kind for s in seus]
        if len(set(kinds)) != len(kinds):
            raise HardwareError(f"{where}: one sEU per kind, got {[k.value for k in kinds]}")
        missing = [k.value for k in _REQUIRED_SEUS if k not in kinds]
        if missing:
            raise HardwareError(f"{where}: field 'seus' lacks {', '.join(missing)} (every EU needs "
                                f"{', '.join(k.value for k in _REQUIRED_SEUS)})")
        for key in ("smem_per_block", "smem_per_eu", "regs_per_eu", "max_regs_per_thread", "max_threads_per_block",
                    "warp_size", "warpgroup_warps", "reg_alloc_granularity", "min_regs_per_thread"):
            _check_int(where, key, getattr(self, key))
        _check_number(where, "smem_bandwidth", self.smem_bandwidth, allow_zero=True)
        if self.warp_size not in (32, 64):
            raise HardwareError(f"{where}: field 'warp_size' must be 32 (NVIDIA) or 64 (AMD), got {self.warp_size}")
        if self.smem_per_block > self.smem_per_eu:
            raise HardwareError(f"{where}: field 'smem_per_block' ({self.smem_per_block}) exceeds 'smem_per_eu' "
                                f"({self.smem_per_eu})")
        if self.min_regs_per_thread > self.max_regs_per_thread:
            raise HardwareError(f"{where}: field 'min_regs_per_thread' ({self.min_regs_per_thread}) exceeds "
                                f"'max_regs_per_thread' ({self.max_regs_per_thread})")

    @property
    def warpgroup_threads(self) -> int:
        return self.warpgroup_warps * self.warp_size

    def has(self, kind: SEUKind | str) -> bool:
        return SEUKind(kind) in {s.kind for s in self.seus}

    def seu(self, kind: SEUKind | str) -> SEU:
        """The sEU of ``kind``; raises HardwareError when this EU has none."""
        kind = SEUKind(kind)
        for s in self.seus:
            if s.kind == kind:
                return s
        raise HardwareError(f"EU {self.name!r} has no {kind.value} sEU")


@dataclass(frozen=True)
class VDevice:
    """A chip: ``num_eus`` copies of ``eu`` plus chip-wide figures.

    Attributes
    ----------
    name : str
        Short name (``h100``); what ``--target`` accepts.
    target : Mapping[str, Any]
        The TVM target dict TileLang lowers for, e.g. ``{"kind": "cuda", "arch": "sm_90a"}``.
    num_eus : int
    clock_ghz : float
        Clock used to convert cycles to seconds.
    dram_bandwidth : float
        Bytes per second.
    l2_bandwidth : float
        Bytes per second, for tiles re-read by many blocks.
    l2_bytes : int
    eu : EU
    features : frozenset[str]
        Emission capabilities: ``warp_specialization`` (WSSchedule with TMA
        producer and setmaxnreg), ``software_pipeline`` (T.Pipelined order/stage), ``pdl`` (programmatic
        dependent launch: a kernel's blocks placed while the one before it still runs).
    description : str
    """

    name: str
    target: Mapping[str, Any]
    num_eus: int
    clock_ghz: float
    dram_bandwidth: float
    l2_bandwidth: float
    l2_bytes: int
    eu: EU
    features: frozenset = field(default_factory=frozenset)
    description: str = ""

    def __post_init__(self) -> None:
        where = f"chip {self.name!r}"
        _check_str(where, "name", self.name)
        if not isinstance(self.eu, EU):
            object.__setattr__(self, "eu", _construct(EU, self.eu, f"{where}: eu"))
        if not isinstance(self.features, (list, tuple, set, frozenset)) or not all(isinstance(f, str)
                                                                                for f in self.features):
            raise HardwareError(f"{where}: field 'features' must be a list of names, got {self.features!r}")
        object.__setattr__(self, "features", frozenset(self.features))
        unknown = sorted(self.features - FEATURES)
        if unknown:
            raise HardwareError(f"{where}: unknown feature(s) {', '.join(map(repr, unknown))} in field 'features' "
                                f"(known: {', '.join(sorted(FEATURES))})")
        if not isinstance(self.target, Mapping):
            raise HardwareError(f"{where}: field 'target' must be a target dict, got {self.target!r}")
        object.__setattr__(self, "target", dict(self.target))
        _check_target(where, self.target)
        _check_int(where, "num_eus", self.num_eus)
        _check_int(where, "l2_bytes", self.l2_bytes)
        for key in ("clock_ghz", "dram_bandwidth", "l2_bandwidth"):
            _check_number(where, key, getattr(self, key))
        if "warp_specialization" in self.features and not (self.eu.has(SEUKind.TMA) and self.eu.warpgroup_warps > 1):
            raise HardwareError(f"{where}: feature 'warp_specialization' needs a tma sEU and warpgroups "
                                f"(eu.warpgroup_warps > 1)")

    @property
    def target_kind(self) -> str:
        return self.target["kind"]

    def tvm_target(self):
        """The TVM Target TileLang lowers for."""
        return tvm.target.Target(dict(self.target))

    def cycles_to_seconds(self, cycles: float) -> float:
        return cycles / (self.clock_ghz * 1e9)

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["features"] = sorted(self.features)
        for s in d["eu"]["seus"]:
            s["kind"] = SEUKind(s["kind"]).value
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "VDevice":
        """A chip from its description (:meth:`to_dict`'s form), every field checked."""
        try:
            return _construct(cls, d, "")
        except HardwareError as e:
            raise HardwareError(f"malformed chip description: {e}") from None


FEATURES = frozenset({"warp_specialization", "software_pipeline", "cp_async", "tma", "wgmma", "setmaxnreg", "pdl",
                      "clusters"})
"""Emission capabilities a chip may list (see :class:`VDevice`)."""
_REQUIRED_SEUS = (SEUKind.LSU, SEUKind.TENSOR_CORE, SEUKind.CUDA_CORE)


def _construct(cls: type, spec: Any, where: str) -> Any:
    """``cls(**spec)``, or a HardwareError naming the fields that are missing or unknown."""
    prefix = f"{where}: " if where else ""
    if not isinstance(spec, Mapping):
        raise HardwareError(f"{prefix}expected an object with the fields of {cls.__name__}, got {spec!r}")
    fields = {f.name for f in dataclasses.fields(cls)}
    required = {f.name for f in dataclasses.fields(cls)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    unknown, missing = sorted(set(spec) - fields), sorted(required - set(spec))
    if unknown or missing:
        raise HardwareError(prefix + "; ".join(
            ([f"unknown field(s) {', '.join(map(repr, unknown))}"] if unknown else [])
            + ([f"missing field(s) {', '.join(map(repr, missing))}"] if missing else [])))
    return cls(**spec)


def _check_str(where: str, key: str, value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise HardwareError(f"{where}: field {key!r} must be a non-empty string, got {value!r}")


def _check_int(where: str, key: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise HardwareError(f"{where}: field {key!r} must be a positive integer, got {value!r}")


def _check_number(where: str, key: str, value: Any, allow_zero: bool = False) -> None:
    ok = not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) and \
        (value >= 0 if allow_zero else value > 0)
    if not ok:
        raise HardwareError(f"{where}: field {key!r} must be a {'non-negative' if allow_zero else 'positive'} "
                            f"finite number, got {value!r}")


def _check_target(where: str, target: Mapping[str, Any]) -> None:
    """A target dict TileLang lowers for: cuda with an ``sm_NN`` arch, or hip with a ``gfxNNN`` mcpu."""
    kind = target.get("kind")
    if kind == "cuda" and re.fullmatch(r"sm_\d+a?", str(target.get("arch", ""))):
        return
    if kind == "hip" and re.fullmatch(r"gfx\d+[a-z]?", str(target.get("mcpu", ""))):
        return
    raise HardwareError(f"{where}: field 'target': target kind must be 'cuda' with an 'sm_NN' arch or 'hip' "
                        f"with a 'gfxNNN' mcpu, got {dict(target)!r}")


# ---------------------------------------------------------------- built-in chips
_GB = 1e9
_KB = 1024

# NVIDIA Hopper (sm_90a). Per-SM rates from the NVIDIA H100 Tensor Core GPU
# Architecture whitepaper (2022): dense FP16/BF16 tensor 1024 FMA/clk/SM
# (989.4 TFLOP/s = 132 SMs x 4096 FLOP x 1.83 GHz); 128 FP32 lanes/SM;
# 228 KB shared memory per SM, 227 KB per block; 64K registers per SM.
# MUFU (exp2 etc.): 16 results/clk/SM, CUDA C Programming Guide,
# "Arithmetic Instructions" throughput table, compute capability 9.0.
# Latencies: Luo et al., "Benchmarking and Dissecting the Nvidia Hopper GPU
# Architecture" (IPDPS 2024): global-memory latency ~ 480-600 cycles (TMA
# adds its descriptor setup), wgmma m64nNk16 completion ~ 100-130 cycles.
_HOPPER_SEUS = (
    # measured: the bytes/clk one SM's TMA loads sustain from L2, on one H100: 29-41 in the warp-specialized
    # 128-row GEMM plans of benchmarks/results/2026-11-24-h100-layer-gemms (512-2500 rows, at 1.2-1.9x their
    # tensor-core time; its 256x128 and 64/128-wide plans 22-28) and 29-33 in the 8192x6144x4096, 8192^3 and
    # 16384^3 GEMMs of tests/data;
    # the per-request cost beside the bytes is pt_tvm.cost.TMA_REQUEST_CYCLES
    SEU("cp.async.bulk.tensor", SEUKind.TMA, True, throughput=38.0, latency=600.0, issue=20.0),
    SEU("st.shared/st.global", SEUKind.LSU, False, throughput=64.0, latency=30.0),  # 32 banks x 4 B per clk (smem)
    SEU("wgmma", SEUKind.TENSOR_CORE, True, throughput=4096.0, latency=120.0, issue=8.0),
    SEU("fp32", SEUKind.CUDA_CORE, False, throughput=256.0, latency=4.0),  # 128 FMA lanes = 256 FLOP/clk
    SEU("mufu", SEUKind.SFU, False, throughput=16.0, latency=20.0),
)
_HOPPER_EU = EU(
    name="SM",
    seus=_HOPPER_SEUS,
    smem_per_block=227 * _KB,
    smem_per_eu=228 * _KB,
    regs_per_eu=65536,
    max_regs_per_thread=255,
    max_threads_per_block=1024,
    warp_size=32,
    warpgroup_warps=4,
    reg_alloc_granularity=8,
    min_regs_per_thread=24,  # setmaxnreg accepts 24..256 (PTX ISA 8.x)
    smem_bandwidth=128.0,  # 32 banks x 4 B a clock
)
_HOPPER = frozenset({"warp_specialization", "software_pipeline", "cp_async", "tma", "wgmma", "setmaxnreg", "pdl",
                     "clusters"})

H100 = VDevice(
    name="h100",
    target={"kind": "cuda", "arch": "sm_90a"},
    num_eus=132,  # H100 SXM5: 132 SMs (whitepaper)
    clock_ghz=1.83,  # boost clock behind the 989.4 TFLOP/s datasheet figure
    dram_bandwidth=3.35e12,  # HBM3, H100 SXM datasheet
    l2_bandwidth=5120 * 1.83e9,  # model: 5120 B/clk, the A100 whitepaper L2 read figure (none published for H100)
    l2_bytes=50 * 1024**2,  # 50 MB (datasheet; 50 MB read by PyTorch on the lent H100)
    eu=_HOPPER_EU,
    features=_HOPPER,
    description="NVIDIA H100 SXM5 80GB (sm_90a)",
)

H200 = dataclasses.replace(
    H100,
    name="h200",
    dram_bandwidth=4.8e12,  # HBM3e, H200 datasheet (141 GB)
    l2_bytes=60 * 1024**2,  # 60 MB read by PyTorch on the lent H200 (device/KINDS.md)
    description="NVIDIA H200 SXM 141GB (sm_90a)",
)

# NVIDIA Ampere A100 SXM4 (sm_80): NVIDIA A100 Tensor Core GPU Architecture
# whitepaper (2020): 108 SMs, 1.41 GHz boost, dense FP16 tensor 312 TFLOP/s
# (= 108 x 2048 FLOP x 1.41 GHz), 64 FP32 FMA lanes/SM (19.5 TFLOP/s), 164 KB
# shared memory per SM (163 KB per block), 40 MB L2, HBM2e 2.039 TB/s (80 GB).
# MUFU 16/clk/SM (CUDA C Programming Guide, cc 8.0).
A100 = VDevice(
    name="a100",
    target={"kind": "cuda", "arch": "sm_80"},
    num_eus=108,
    clock_ghz=1.41,
    dram_bandwidth=2.039e12,
    l2_bandwidth=5120 * 1.41e9,  # L2 read bandwidth 5120 B/clk (A100 whitepaper)
    l2_bytes=40 * 1024**2,
    eu=EU(
        name="SM",
        seus=(
            SEU("cp.async", SEUKind.LSU, True, throughput=64.0, latency=500.0, issue=40.0),  # model
            SEU("mma.sync", SEUKind.TENSOR_CORE, False, throughput=2048.0, latency=32.0),
            SEU("fp32", SEUKind.CUDA_CORE, False, throughput=128.0, latency=4.0),
            SEU("mufu", SEUKind.SFU, False, throughput=16.0, latency=20.0),
        ),
        smem_per_block=163 * _KB,
        smem_per_eu=164 * _KB,
        regs_per_eu=65536,
        max_regs_per_thread=255,
        max_threads_per_block=1024,
        warp_size=32,
        warpgroup_warps=1,
        reg_alloc_granularity=8,
        min_regs_per_thread=24,
    ),
    features=frozenset({"software_pipeline", "cp_async"}),
    description="NVIDIA A100 SXM4 80GB (sm_80)",
)

# AMD Instinct MI300X (gfx942): AMD CDNA 3 architecture whitepaper and MI300X
# datasheet: 304 CUs, 2.1 GHz peak, dense FP16 matrix 1307.4 TFLOP/s
# (= 304 x 2048 FLOP x 2.1 GHz), 64 KB LDS per CU, 512 VGPRs per lane max,
# wave64, HBM3 5.3 TB/s, 256 MB Infinity Cache, 4 MB L2 per XCD.
# Transcendentals at quarter rate: 16 per CU per clk (4 SIMD x 16 lanes / 4).
MI300X = VDevice(
    name="mi300x",
    target={"kind": "hip", "mcpu": "gfx942"},
    num_eus=304,
    clock_ghz=2.1,
    dram_bandwidth=5.3e12,
    l2_bandwidth=10.0e12,  # model: Infinity Cache peak is 17.2 TB/s (datasheet)
    l2_bytes=256 * 1024**2,
    eu=EU(
        name="CU",
        seus=(
            SEU("buffer_load", SEUKind.LSU, False, throughput=64.0, latency=700.0, issue=40.0),  # model
            SEU("mfma", SEUKind.TENSOR_CORE, False, throughput=2048.0, latency=32.0),
            # 4 SIMD x 16 lanes x FMA x dual-issue
            SEU("valu", SEUKind.CUDA_CORE, False, throughput=256.0, latency=4.0),
            SEU("valu.trans", SEUKind.SFU, False, throughput=16.0, latency=20.0),
        ),
        smem_per_block=64 * _KB,
        smem_per_eu=64 * _KB,
        regs_per_eu=4 * 512 * 64,  # 4 SIMDs x 512 VGPRs x 64 lanes (32-bit)
        max_regs_per_thread=512,
        max_threads_per_block=1024,
        warp_size=64,
        warpgroup_warps=1,
        reg_alloc_granularity=8,
        min_regs_per_thread=16,
    ),
    features=frozenset({"software_pipeline"}),
    description="AMD Instinct MI300X (gfx942)",
)

_BUILTIN: dict[str, VDevice] = {d.name: d for d in (H100, H200, A100, MI300X)}
_ALIASES = {"hopper": "h100", "sm_90": "h100", "sm_90a": "h100", "sm_80": "a100", "gfx942": "mi300x"}


def names() -> list[str]:
    """Built-in chip names."""
    return sorted(_BUILTIN)


def get(name: str) -> VDevice:
    """A built-in chip by name (``h100``, ``h200``, ``a100``, ``mi300x``) or a path to a chip file."""
    key = name.lower()
    key = _ALIASES.get(key, key)
    if key in _BUILTIN:
        return _BUILTIN[key]
    if os.path.exists(name):
        return load(name)
    raise HardwareError(f"unknown chip {name!r} (built-in: {', '.join(names())}; or a .json/.toml chip file)")


def for_target(target: Any) -> VDevice:
    """The model for a TVM ``Target`` (or target dict, or chip name).

    Picks by target kind and architecture: cuda sm_90/sm_90a -> H100, sm_80 -> A100,
    hip gfx942 -> MI300X. A Target whose ``model`` attribute names a built-in chip
    (e.g. ``{"kind": "cuda", "arch": "sm_90a", "model": "h200"}``) selects it.
    """
    if isinstance(target, VDevice):
        return target
    if isinstance(target, str):
        return get(target)
    attrs = _target_attrs(target)
    kind, model = attrs.get("kind"), str(attrs.get("model", "")).lower()
    if model in _BUILTIN and _BUILTIN[model].target_kind == kind:
        return _BUILTIN[model]
    if kind == "cuda":
        arch = str(attrs.get("arch", ""))
        if arch in ("sm_90", "sm_90a"):
            return H100
        if arch in ("sm_80", "sm_86", "sm_89"):
            return A100 if arch == "sm_80" else _unsupported(attrs)
    if kind == "hip" and str(attrs.get("mcpu", "")) == "gfx942":
        return MI300X
    return _unsupported(attrs)


def _unsupported(attrs: Mapping[str, Any]) -> VDevice:
    raise HardwareError(
        f"no hardware model for target {dict(attrs)!r}; built-in: cuda sm_90/sm_90a (h100, h200), "
        f"cuda sm_80 (a100), hip gfx942 (mi300x); describe others with pt_tvm.hw.load(FILE)"
    )


def _target_attrs(target: Any) -> dict:
    """kind/arch/mcpu/model of a TVM Target or a target dict, read without TVM for dicts."""
    if isinstance(target, Mapping):
        return dict(target)
    kind = getattr(getattr(target, "kind", None), "name", None)
    if kind is None:
        raise HardwareError(f"not a TVM target: {target!r}")
    attrs = {"kind": kind}
    for key in ("arch", "mcpu", "model"):
        value = target.attrs.get(key) if hasattr(target, "attrs") else None
        if value is not None:
            attrs[key] = str(value)
    return attrs


def load(path: str) -> VDevice:
    """A chip described in a JSON or TOML file with the fields of :class:`VDevice`.

    ``base = "h100"`` (optional) starts from a built-in chip and overrides the given
    top-level fields, so a small file can describe a variant (e.g. another clock).
    """
    try:
        if path.endswith(".toml"):
            with open(path, "rb") as f:
                spec = tomllib.load(f)
        else:
            with open(path) as f:
                spec = json.load(f)
    except (OSError, ValueError) as e:
        raise HardwareError(f"cannot read chip file {path!r}: {e}") from None
    if not isinstance(spec, dict):
        raise HardwareError(f"chip file {path!r}: expected an object at the top level")
    base = spec.pop("base", None)
    try:
        if base is not None:
            spec = {**get(base).to_dict(), **spec}
        return VDevice.from_dict(spec)
    except HardwareError as e:
        raise HardwareError(f"chip file {path!r}: {e}") from None


def from_device(index: int = 0) -> VDevice:
    """The built-in model of the local CUDA GPU (probes the device; never called implicitly)."""
    name = torch.cuda.get_device_name(index)
    major, minor = torch.cuda.get_device_capability(index)
    for key in ("H200", "H100", "A100", "MI300X"):
        if key in name.upper():
            return get(key.lower())
    return for_target({"kind": "cuda", "arch": f"sm_{major}{minor}" + ("a" if major == 9 else "")})
