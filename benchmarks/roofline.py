"""A run's rows against the chip's rooflines: how far each kernel is from the memory bound (the bytes it must
move through HBM at the chip's bandwidth) and from the tensor-core bound (its useful FLOPs at the tensor cores'
peak). The bytes are the kernel's compulsory traffic: every parameter of its PrimFunc read or written once.

``python -m benchmarks roofline RUN.json [--out FILE.md]``: one table per kernel, a row per config and system.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from pt_tvm import hw, templates
from pt_tvm.graph import dtype_bytes
from pt_tvm.hw import SEUKind, VDevice

from .runfile import load_run

__all__ = ["Roofline", "compulsory_bytes", "peaks", "chip_of_device", "rooflines", "markdown"]

@dataclass(frozen=True)
class Roofline:
    """One timed row against both bounds: ``memory``/``compute`` are the fractions of the HBM bandwidth and of
    the tensor-core peak it reached; ``bound`` the fraction of the nearer roofline (1.0: at the roofline)."""

    kernel: str
    config: Mapping[str, Any]
    system: str
    ms: float
    tbps: float
    tflops: float
    memory: float
    compute: float

    @property
    def bound(self) -> float:
        return max(self.memory, self.compute)


@functools.lru_cache(maxsize=256)
def _bytes(kernel: str, items: tuple) -> float:
    func = templates.get(kernel).build(**dict(items))
    total = 0
    for param in func.params:
        buf = func.buffer_map[param]
        total += math.prod(int(d) for d in buf.shape) * dtype_bytes(str(buf.dtype))
    return float(total)


def compulsory_bytes(kernel: str, config: Mapping[str, Any]) -> float:
    """Bytes of every parameter of the template's kernel at ``config`` (inputs read once, outputs written once)."""
    return _bytes(kernel, tuple(sorted(config.items())))


def peaks(vdev: VDevice) -> tuple[float, float]:
    """(HBM bytes per second, tensor-core FLOP per second) of the chip model."""
    tc = vdev.eu.seu(SEUKind.TENSOR_CORE).throughput * vdev.clock_ghz * 1e9 * vdev.num_eus
    return vdev.dram_bandwidth, tc


def chip_of_device(device: str) -> VDevice:
    """The chip model of a run header's device name (``NVIDIA H100 80GB HBM3`` -> h100)."""
    for name in ("h200", "h100", "a100", "mi300x"):
        if name in device.lower().replace(" ", ""):
            return hw.get(name)
    raise ValueError(f"no chip model for device {device!r} (built-in: {', '.join(hw.names())})")


def rooflines(run: Mapping[str, Any]) -> list[Roofline]:
    """Every valid, timed row of the run against the rooflines of the chip it was measured on."""
    bandwidth, tensor_peak = peaks(chip_of_device(str(run["header"].get("device", ""))))
    out = []
    for r in run["rows"]:
        if r.get("valid") is not True or not r.get("ms") or r["kernel"] not in templates.names():
            continue
        seconds = r["ms"] * 1e-3
        moved = compulsory_bytes(r["kernel"], r["config"])
        flops = templates.get(r["kernel"]).flops(r["config"])
        out.append(Roofline(r["kernel"], r["config"], r["system"], r["ms"], moved / seconds / 1e12,
                            flops / seconds / 1e12, moved / seconds / bandwidth, flops / seconds / tensor_peak))
    return out


def _config_text(config: Mapping[str, Any], varying: Sequence[str]) -> str:
    return ", ".join(f"{k}={config[k]}" for k in varying)


def markdown(run: Mapping[str, Any], systems: Sequence[str] | None = None) -> str:
    """One table per kernel: per config and system the time, TB/s, TFLOP/s and the fractions of each roofline."""
    rows = [r for r in rooflines(run) if systems is None or r.system in systems]
    vdev = chip_of_device(str(run["header"].get("device", "")))
    bandwidth, tensor_peak = peaks(vdev)
    h = run["header"]
    lines = [f"# Rooflines: {h.get('device')} ({h.get('date', '?')}, commit {h.get('git_commit', '?')})", "",
             f"Chip model {vdev.name}: HBM {bandwidth / 1e12:.2f} TB/s, tensor cores {tensor_peak / 1e12:.0f} "
             f"TFLOP/s (dense fp16). Bytes: every kernel parameter read or written once (compulsory traffic).", ""]
    for kernel in sorted({r.kernel for r in rows}):
        mine = [r for r in rows if r.kernel == kernel]
        varying = [k for k in mine[0].config if len({str(r.config.get(k)) for r in mine}) > 1]
        lines += [f"## {kernel}", "", "| config | system | ms | TB/s | % HBM | TFLOP/s | % tensor core | "
                  "% of roofline |", "|---|---|---|---|---|---|---|---|"]
        for r in sorted(mine, key=lambda r: (tuple(r.config.get(k) for k in varying), r.system)):
            lines.append(f"| {_config_text(r.config, varying)} | {r.system} | {r.ms:.4f} | {r.tbps:.2f} | "
                         f"{100 * r.memory:.0f}% | {r.tflops:.1f} | {100 * r.compute:.0f}% | {100 * r.bound:.0f}% |")
        lines.append("")
    return "\n".join(lines)


def write(run_path: str, out: str | None, systems: Sequence[str] | None = None) -> str:
    """The roofline tables of a run file, written to ``out`` when given; returns the text."""
    text = markdown(load_run(run_path), systems)
    if out:
        with open(out, "w") as f:
            f.write(text)
    return text
