"""The benchmark grids: which problems each suite measures, and against which systems."""
from __future__ import annotations

from .suite import Config
from .systems import PEERS_BY_SUITE

__all__ = ["SUITES", "suite_configs"]


def _smoke() -> list[Config]:
    """A few points that show the headline bars in one short run."""
    att = PEERS_BY_SUITE["attention"]
    return [
        Config("attention", "flash_attention", dict(batch=8, heads=16, kv_heads=16, seq_len=4096, dim=128,
                                                    causal=False, dtype="float16"), att),
        Config("attention", "flash_attention", dict(batch=4, heads=16, kv_heads=16, seq_len=4096, dim=256,
                                                    causal=False, dtype="float16"), att),
        Config("gemm", "gemm", dict(M=8192, N=8192, K=8192, dtype="float16"), PEERS_BY_SUITE["gemm"]),
    ]


SUITES = {"smoke": _smoke}


def suite_configs(name: str) -> list[Config]:
    if name == "all":
        return [c for n, f in SUITES.items() if n != "smoke" for c in f()]
    if name not in SUITES:
        raise SystemExit(f"unknown suite {name!r} (known: {', '.join(sorted(SUITES))}, all)")
    return SUITES[name]()
