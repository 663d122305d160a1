"""FlashAttention forward template (BSHD layout, online softmax, optional causal mask and GQA).

One block computes ``block_M`` query rows of one head: ``Q`` is staged in
shared memory once, then a plain ``T.Pipelined`` loop over key blocks copies
``K``, computes the scores, updates the running max/sum with ``exp2`` (the
softmax scale is folded with ``log2(e)``), rescales the output accumulator,
copies ``V`` and accumulates ``P @ V``.
"""
# No ``from __future__ import annotations``: T.prim_func evaluates the
# parameter annotations against the builder's locals (shapes, dtype).
import math
from typing import Any, Mapping

import tilelang.language as T
import torch

from .base import Template, TemplateError
from .online_softmax import rescale_and_exponentiate, update_max

__all__ = ["FLASH_ATTENTION"]

_DTYPES = ("float16", "bfloat16")
_DIMS = (64, 128, 256)
_ACCUM = "float32"
_LOG2E = 1.44269504


def build_flash_attention(
    batch: int, heads: int, kv_heads: int, seq_len: int, dim: int, causal: bool, dtype: str,
    block_M: int, block_N: int, threads: int, num_stages: int,
):
    """``O = softmax(Q K^T / sqrt(dim)) V`` per head; query head ``h`` reads key/value head
    ``h // (heads // kv_heads)``."""
    scale = _LOG2E / math.sqrt(dim)
    groups = heads // kv_heads
    q_shape = (batch, seq_len, heads, dim)
    kv_shape = (batch, seq_len, kv_heads, dim)
    n_blocks = T.ceildiv(seq_len, block_N)

    def q_block(bx):
        """The query block of launch index ``bx``. A causal mask launches the last, heaviest query blocks
        first (longest processing time first): the light ones then fill the last wave instead of the
        heavy ones trailing it. An expression, not a let: extraction bounds what depends on it."""
        return T.ceildiv(seq_len, block_M) - 1 - bx if causal else bx

    def kv_blocks(bx):
        """Key blocks query block ``q_block(bx)`` attends to."""
        return T.min(n_blocks, T.ceildiv((q_block(bx) + 1) * block_M, block_N)) if causal else n_blocks

    @T.prim_func
    def flash_attention(
        Q: T.Tensor(q_shape, dtype), K: T.Tensor(kv_shape, dtype), V: T.Tensor(kv_shape, dtype),
        O: T.Tensor(q_shape, dtype),
    ):
        with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared((block_M, dim), dtype)
            K_shared = T.alloc_shared((block_N, dim), dtype)
            V_shared = T.alloc_shared((block_N, dim), dtype)
            acc_s = T.alloc_fragment((block_M, block_N), _ACCUM)
            acc_s_cast = T.alloc_fragment((block_M, block_N), dtype)
            acc_o = T.alloc_fragment((block_M, dim), _ACCUM)
            scores_max = T.alloc_fragment((block_M,), _ACCUM)
            scores_max_prev = T.alloc_fragment((block_M,), _ACCUM)
            scores_scale = T.alloc_fragment((block_M,), _ACCUM)
            scores_sum = T.alloc_fragment((block_M,), _ACCUM)
            logsum = T.alloc_fragment((block_M,), _ACCUM)

            T.copy(Q[bz, q_block(bx) * block_M:(q_block(bx) + 1) * block_M, by, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(_ACCUM))
            for k in T.Pipelined(kv_blocks(bx), num_stages=num_stages):
                T.copy(K[bz, k * block_N:(k + 1) * block_N, by // groups, :], K_shared)
                if causal:
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(
                            q_block(bx) * block_M + i >= k * block_N + j, 0, -T.infinity(_ACCUM)
                        )
                else:  # same statement count as the causal body; keys past seq_len stay masked
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(k * block_N + j >= seq_len, -T.infinity(_ACCUM), 0)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                update_max(acc_s, scores_max, scores_max_prev)
                rescale_and_exponentiate(acc_s, acc_s_cast, acc_o, scores_max, scores_max_prev, scores_scale,
                                         scores_sum, logsum, scale)
                T.copy(V[bz, k * block_N:(k + 1) * block_N, by // groups, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            # the output tile is staged through Q_shared: Q is dead after the loop, and the
            # shared memory this saves is what lets head dim 256 keep two K/V stages
            T.copy(acc_o, Q_shared)
            T.copy(Q_shared, O[bz, q_block(bx) * block_M:(q_block(bx) + 1) * block_M, by, :])

    return flash_attention


def _fail(param: str, message: str) -> TemplateError:
    """A TemplateError that names the offending parameter first."""
    return TemplateError(f"flash_attention: parameter {param!r} {message}")


def _check_problem(problem: Mapping[str, Any]) -> None:
    """Reject unsupported head dims and dtypes, non-bool ``causal`` and bad GQA ratios."""
    for key in ("batch", "heads", "kv_heads", "seq_len"):
        _check_positive(key, problem[key])
    if problem["dim"] not in _DIMS:
        raise _fail("dim", f"must be one of {_DIMS}, got {problem['dim']!r}")
    if problem["dtype"] not in _DTYPES:
        raise _fail("dtype", f"must be one of {_DTYPES}, got {problem['dtype']!r}")
    if not isinstance(problem["causal"], bool):
        raise _fail("causal", f"must be a bool, got {problem['causal']!r}")
    if problem["heads"] % problem["kv_heads"]:
        raise _fail("kv_heads", f"={problem['kv_heads']} must divide heads={problem['heads']}")


def _check_tile(problem: Mapping[str, Any], tile: Mapping[str, Any]) -> None:
    """Reject blocks that do not divide ``seq_len`` or leave a warp fewer than 16 query rows."""
    for key in ("block_M", "block_N", "threads"):
        _check_positive(key, tile[key])
    if tile["threads"] % 32:
        raise _fail("threads", f"must be a multiple of 32, got {tile['threads']}")
    rows = tile["threads"] // 32 * 16
    if tile["block_M"] % rows:
        raise _fail(
            "block_M",
            f"={tile['block_M']} must be a multiple of {rows} for threads={tile['threads']}: "
            "GemmWarpPolicy.FullRow gives each warp 16 or more query rows",
        )
    for block in ("block_M", "block_N"):
        if problem["seq_len"] % tile[block]:
            raise _fail(block, f"={tile[block]} must divide seq_len={problem['seq_len']}")


def _check_positive(key: str, value: Any) -> None:
    """Shapes and block sizes are positive ints (bools excluded)."""
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise _fail(key, f"must be a positive int, got {value!r}")


def _check(problem: Mapping[str, Any], tile: Mapping[str, Any]) -> None:
    """``Template.check``: the problem first, then the tile against it."""
    _check_problem(problem)
    _check_tile(problem, tile)


def _make_inputs(problem: Mapping[str, Any], device: Any, generator: torch.Generator | None) -> tuple:
    """Standard-normal ``Q[B,S,H,D]``, ``K`` and ``V`` ``[B,S,Hkv,D]``: scores then have unit
    variance after the ``1/sqrt(D)`` scale, well inside fp16/bf16 range."""
    B, S, D = problem["batch"], problem["seq_len"], problem["dim"]
    dtype = getattr(torch, problem["dtype"])
    where = generator.device if generator is not None else device

    def randn(heads: int) -> torch.Tensor:
        return torch.randn((B, S, heads, D), generator=generator, device=where).to(device=device, dtype=dtype)

    return randn(problem["heads"]), randn(problem["kv_heads"]), randn(problem["kv_heads"])


_SCORE_BYTES = 2 << 30  # float32 scores the reference holds at once (S16384 H32 at once would be 32 GiB)


def _reference(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, **problem: Any) -> torch.Tensor:
    """Float32 attention ``[B,S,H,D]``, a few heads of one batch entry at a time to bound the ``S*S`` scores."""
    groups = Q.shape[2] // K.shape[2]
    S, H = Q.shape[1], Q.shape[2]
    mask = torch.ones(S, S, dtype=torch.bool, device=Q.device).triu(1) if problem.get("causal") else None
    out = torch.empty(Q.shape, dtype=torch.float32, device=Q.device)
    step = max(1, _SCORE_BYTES // (S * S * 4))
    for b in range(Q.shape[0]):
        for h in range(0, H, step):
            q = Q[b, :, h:h + step].float().transpose(0, 1)                                  # [h, S, D]
            kv = slice(h // groups, (min(h + step, H) - 1) // groups + 1)
            k = K[b, :, kv].float().transpose(0, 1).repeat_interleave(groups, dim=0)         # heads h0 // groups ..
            v = V[b, :, kv].float().transpose(0, 1).repeat_interleave(groups, dim=0)
            first = h - kv.start * groups                                                    # .. aligned to query h
            k, v = k[first:first + q.shape[0]], v[first:first + q.shape[0]]
            scores = (q @ k.transpose(1, 2)) / math.sqrt(Q.shape[3])
            if mask is not None:
                scores.masked_fill_(mask, float("-inf"))
            out[b, :, h:h + step] = (torch.softmax(scores, dim=-1) @ v).transpose(0, 1)
    return out


def _flops(problem: Mapping[str, Any]) -> float:
    """Two GEMMs of ``2*S*S*D`` per head; half of them for a causal mask."""
    p = problem
    full = 4.0 * p["batch"] * p["heads"] * p["seq_len"] * p["seq_len"] * p["dim"]
    return full / 2 if p["causal"] else full


FLASH_ATTENTION = Template(
    name="flash_attention",
    builder=build_flash_attention,
    reference=_reference,
    problem={
        "batch": 8, "heads": 16, "kv_heads": 16, "seq_len": 4096, "dim": 128,
        "causal": False, "dtype": "float16",
    },
    tile={"block_M": 128, "block_N": 128, "threads": 256},
    tile_space={"block_M": (64, 128), "block_N": (64, 128), "threads": (128, 256)},
    make_inputs=_make_inputs,
    flops=_flops,
    out_idx=(3,),
    check=_check,
    doc="Attention forward, BSHD: O = softmax(Q K^T / sqrt(D)) V, optional causal mask and GQA.",
    pass_configs={"tl.enable_fast_math": True},  # exp2 -> ex2.approx, as TileLang's own FA examples compile
)
