"""The benchmark grids: which problems each suite measures, and against which systems.

``attention`` is the FlashAttention-3 paper's forward grid (fp16 and bf16; head
dims 64/128/256; sequence lengths 512..16k at 16k tokens per batch and hidden
2048, so ``heads = 2048 / dim``; causal and not) plus GQA with 8 KV heads.
``attention-core`` is a ~26-point slice of it for routine runs. ``gemm`` is
square 2k..16k and the LLaMA-3 8B/70B projection shapes at 8192 tokens, plus
GEMM + row sum; ``gemm-core`` is its routine slice. ``all`` is the two full
grids; ``smoke`` is three headline points. ``layers`` and ``layers-full`` are whole
LLaMA-3-8B and Mamba2-1.3B layers (:mod:`benchmarks.layers`).
"""
from __future__ import annotations

from typing import Callable, Sequence

from . import decode, layers
from .suite import Config
from .systems import PEERS_BY_SUITE, SYSTEMS

__all__ = ["SUITES", "suite_configs", "subsample", "filter_systems", "LLAMA3_SHAPES"]

_DTYPES = ("float16", "bfloat16")
_DIMS = (64, 128, 256)
_SEQLENS = (512, 1024, 2048, 4096, 8192, 16384)
_TOKENS = 16384   # batch * seq_len (FlashAttention-3 paper, Fig. 5-7)
_HIDDEN = 2048    # heads * dim
_GQA_KV_HEADS = 8

# (model, projection) -> (N, K) of y[M, N] = x[M, K] @ W[K, N]; gate and up projections have the same shape.
LLAMA3_SHAPES = {
    ("llama3-8b", "qkv"): (6144, 4096),
    ("llama3-8b", "o"): (4096, 4096),
    ("llama3-8b", "up"): (14336, 4096),
    ("llama3-8b", "down"): (4096, 14336),
    ("llama3-70b", "qkv"): (10240, 8192),
    ("llama3-70b", "o"): (8192, 8192),
    ("llama3-70b", "up"): (28672, 8192),
    ("llama3-70b", "down"): (8192, 28672),
}
_LLAMA_TOKENS = 8192  # M


def _fa(suite: str, dtype: str, dim: int, seq_len: int, causal: bool, kv_heads: int | None = None) -> Config:
    heads = _HIDDEN // dim
    problem = dict(batch=_TOKENS // seq_len, heads=heads, kv_heads=kv_heads or heads, seq_len=seq_len, dim=dim,
                   causal=causal, dtype=dtype)
    note = f"gqa {heads}/{kv_heads}" if kv_heads and kv_heads != heads else ""
    return Config(suite, "flash_attention", problem, PEERS_BY_SUITE["attention"], note)


def _attention() -> list[Config]:
    """The FA3 paper's grid (72 points) plus GQA with 8 KV heads where heads > 8 (dims 64, 128; 24 points)."""
    grid = [_fa("attention", dt, d, s, c) for dt in _DTYPES for d in _DIMS for c in (False, True) for s in _SEQLENS]
    gqa = [_fa("attention", dt, d, s, c, _GQA_KV_HEADS) for dt in _DTYPES for d in _DIMS if _HIDDEN // d > _GQA_KV_HEADS
           for c in (False, True) for s in (1024, 4096, 16384)]
    return grid + gqa


def _attention_core() -> list[Config]:
    """26 points: fp16 over dims x {1k, 4k, 16k} x causal; bf16 at 4k; GQA fp16 d128 at 4k."""
    out = [_fa("attention-core", "float16", d, s, c) for d in _DIMS for c in (False, True) for s in (1024, 4096, 16384)]
    out += [_fa("attention-core", "bfloat16", d, 4096, c) for d in _DIMS for c in (False, True)]
    out += [_fa("attention-core", "float16", 128, 4096, c, _GQA_KV_HEADS) for c in (False, True)]
    return out


def _gemm_cfg(suite: str, kernel: str, M: int, N: int, K: int, dtype: str, note: str = "") -> Config:
    return Config(suite, kernel, dict(M=M, N=N, K=K, dtype=dtype), PEERS_BY_SUITE["gemm"], note)


def _gemm() -> list[Config]:
    """Square 2k..16k and the LLaMA-3 projections (M = 8192 tokens) for GEMM; square 2k..16k for GEMM + row sum."""
    out = []
    for dt in _DTYPES:
        out += [_gemm_cfg("gemm", "gemm", n, n, n, dt, f"square {n}") for n in (2048, 4096, 8192, 16384)]
        out += [_gemm_cfg("gemm", "gemm", _LLAMA_TOKENS, N, K, dt, f"{model} {proj}")
                for (model, proj), (N, K) in LLAMA3_SHAPES.items()]
    for dt in _DTYPES:
        out += [_gemm_cfg("gemm", "gemm_rowsum", n, n, n, dt, f"square {n}") for n in (2048, 4096, 8192, 16384)]
    return out


def _gemm_core() -> list[Config]:
    """12 points: fp16 square 4k/8k and the LLaMA-3 8B projections, bf16 square 8k, a 70B MLP, GEMM + row sum."""
    out = [_gemm_cfg("gemm-core", "gemm", n, n, n, "float16", f"square {n}") for n in (4096, 8192)]
    out += [_gemm_cfg("gemm-core", "gemm", _LLAMA_TOKENS, N, K, "float16", f"{model} {proj}")
            for (model, proj), (N, K) in LLAMA3_SHAPES.items() if model == "llama3-8b"]
    out.append(_gemm_cfg("gemm-core", "gemm", 8192, 8192, 8192, "bfloat16", "square 8192"))
    out += [_gemm_cfg("gemm-core", "gemm", _LLAMA_TOKENS, *LLAMA3_SHAPES[("llama3-70b", p)], "float16",
                      f"llama3-70b {p}") for p in ("up", "down")]
    out += [_gemm_cfg("gemm-core", "gemm_rowsum", 8192, 8192, 8192, dt, "square 8192") for dt in _DTYPES]
    out.append(_gemm_cfg("gemm-core", "gemm_rowsum", 4096, 4096, 4096, "float16", "square 4096"))
    return out


def _mamba() -> list[Config]:
    """Mamba2-1.3B chunk kernels (64 heads, headdim 64, dstate 128, chunk 256, one group), batch 1 and 64."""
    shapes = [(1, s) for s in (1024, 4096, 16384)] + [(64, s) for s in (1024, 4096)]
    return [Config("mamba", kernel, dict(batch=b, seqlen=s, dtype="float16"), PEERS_BY_SUITE["mamba"],
                   f"mamba2-1.3b b{b} s{s}") for kernel in ("chunk_state", "chunk_scan") for b, s in shapes]


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


SUITES: dict[str, Callable[[], list[Config]]] = {
    "smoke": _smoke,
    "attention": _attention,
    "attention-core": _attention_core,
    "gemm": _gemm,
    "gemm-core": _gemm_core,
    "mamba": _mamba,
    "decode": decode.configs,
    **layers.SUITES,
}
_ALL = ("attention", "gemm")  # the full grids; the core suites are slices of them


def suite_configs(name: str) -> list[Config]:
    """The configs of a suite; ``all`` is the full attention and GEMM grids."""
    if name == "all":
        return [c for n in _ALL for c in SUITES[n]()]
    if name not in SUITES:
        raise SystemExit(f"unknown suite {name!r} (known: {', '.join(sorted(SUITES))}, all)")
    return SUITES[name]()


def _features(c: Config) -> set:
    return {("note", c.note)} | {(k, repr(v)) for k, v in c.problem.items()}


def _cover(configs: Sequence[Config], k: int) -> list[int]:
    """Greedy: each pick adds the most not-yet-covered parameter values, a value of a parameter with
    ``n`` distinct values weighing ``1/n`` (so every parameter counts alike); ties go to the earliest."""
    feats = [_features(c) for c in configs]
    distinct: dict[str, set] = {}
    for f in feats:
        for key, value in f:
            distinct.setdefault(key, set()).add(value)
    weight = {key: 1.0 / len(values) for key, values in distinct.items()}
    chosen: list[int] = []
    covered: set = set()
    while len(chosen) < min(k, len(configs)):
        left = [i for i in range(len(configs)) if i not in chosen]
        gain = {i: sum(weight[key] for key, v in feats[i] - covered) for i in left}
        if max(gain.values()) <= 0:
            covered = set()  # everything seen once: start a second sweep
            continue
        pick = max(left, key=lambda i: (round(gain[i], 9), -i))
        chosen.append(pick)
        covered |= feats[pick]
    return chosen


def subsample(configs: Sequence[Config], k: int | None) -> list[Config]:
    """``k`` configs that cover the suite's kernels and parameter values, kept in suite order.

    Every kernel gets at least one pick (while ``k`` allows) and otherwise a share
    proportional to its configs; within a kernel, :func:`_cover` picks. Deterministic;
    all configs when ``k`` is None. (Evenly spaced picks alias with the grid's nesting:
    they can return one sequence length only.)
    """
    configs = list(configs)
    if k is None or k >= len(configs):
        return configs
    groups: dict[str, list[int]] = {}
    for i, c in enumerate(configs):
        groups.setdefault(c.kernel, []).append(i)
    quota = {g: 0 for g in groups}
    for g in list(groups)[:max(k, 0)]:
        quota[g] = 1
    while sum(quota.values()) < k:  # the rest by largest remaining share
        g = max(groups, key=lambda g: (len(groups[g]) * k / len(configs) - quota[g]
                                       if quota[g] < len(groups[g]) else float("-inf")))
        quota[g] += 1
    picked = [groups[g][j] for g in groups for j in _cover([configs[i] for i in groups[g]], quota[g])]
    return [configs[i] for i in sorted(picked)]


def filter_systems(configs: Sequence[Config], systems: Sequence[str] | None) -> list[Config]:
    """Keep only ``systems`` (in each config's own order); unknown names raise SystemExit."""
    if not systems:
        return list(configs)
    unknown = sorted(set(systems) - set(SYSTEMS) - set(layers.SYSTEMS))
    if unknown:
        known = ", ".join(dict.fromkeys([*SYSTEMS, *layers.SYSTEMS]))
        raise SystemExit(f"unknown system(s) {', '.join(unknown)} (known: {known})")
    keep = set(systems)
    return [Config(c.suite, c.kernel, c.problem, tuple(s for s in c.systems if s in keep), c.note) for c in configs]
