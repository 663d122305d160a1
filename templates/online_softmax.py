"""The online-softmax step of attention kernels (FlashAttention's running max and sum), as TileLang macros.

A key block's scores ``acc_s`` (``rows x block_N``, float32, masked entries
``-inf``) update the running row max, rescale the running sum ``logsum`` and
the output accumulator ``acc_o``, and leave ``acc_s_cast`` holding the block's
probabilities ready for ``P @ V``. Scores are scaled by ``scale`` (the softmax
scale times ``log2(e)``) inside ``exp2``. The macros expand to the same top-level
tile ops as the statements written inline, so kernels built from them extract
to the same sTasks. The head dims both attention templates take are checked here too.
"""
# No ``from __future__ import annotations``: T.macro reads its parameters' annotations.
import tilelang.language as T

from .base import named

__all__ = ["ACCUM", "LOG2E", "alloc_tiles", "update_max", "guard_empty_rows", "rescale_and_exponentiate", "normalize",
           "normalize_or_zero", "head_dim_error"]

ACCUM = "float32"
LOG2E = 1.44269504  # exp(v) = exp2(v * log2(e)): exp2 is the SFU instruction
_HEAD_DIM_STEP, _MAX_HEAD_DIM = 16, 256  # the QK^T gemm's K steps divide a head dim; FlashAttention's most


def head_dim_error(dim) -> "str | None":
    """Why ``dim`` is no head dim the attention templates take (Phi-2's 80 and Phi-3's 96 are), or None."""
    if isinstance(dim, int) and not isinstance(dim, bool) and not dim % _HEAD_DIM_STEP and 0 < dim <= _MAX_HEAD_DIM:
        return None
    return f"must be a multiple of {_HEAD_DIM_STEP} up to {_MAX_HEAD_DIM}, got {dim!r}"


def alloc_tiles(block_M: int, block_N: int, dim: int, dtype: str, row_max: bool) -> tuple:
    """One attention block's buffers, allocated in the tile program that calls it and named (:func:`named`):
    ``Q_shared``, ``K_shared``, ``V_shared``; the scores ``acc_s`` and ``acc_s_cast`` (the input dtype, the ``P V``
    gemm's A operand); the output accumulator ``acc_o``; the online softmax's ``scores_max``, ``scores_max_prev``,
    ``scores_scale``, ``scores_sum``, ``logsum``; and, with ``row_max``, the max a row exponentiates against
    where it may have seen no key (None without)."""
    shapes = {"Q_shared": (T.alloc_shared, (block_M, dim), dtype),
              "K_shared": (T.alloc_shared, (block_N, dim), dtype),
              "V_shared": (T.alloc_shared, (block_N, dim), dtype),
              "acc_s": (T.alloc_fragment, (block_M, block_N), ACCUM),
              "acc_s_cast": (T.alloc_fragment, (block_M, block_N), dtype),
              "acc_o": (T.alloc_fragment, (block_M, dim), ACCUM),
              **{name: (T.alloc_fragment, (block_M,), ACCUM)
                 for name in ("scores_max", "scores_max_prev", "scores_scale", "scores_sum", "logsum",
                              *(("row_max",) if row_max else ()))}}
    tiles = tuple(named(name, alloc, shape, kind) for name, (alloc, shape, kind) in shapes.items())
    return tiles if row_max else (*tiles, None)


@T.macro
def update_max(acc_s, scores_max, scores_max_prev):
    """``scores_max`` becomes the running row max over this block; the previous one goes to ``scores_max_prev``."""
    T.copy(scores_max, scores_max_prev)
    T.fill(scores_max, -T.infinity(ACCUM))
    T.reduce_max(acc_s, scores_max, dim=1, clear=False)
    for i in T.Parallel(acc_s.shape[0]):
        scores_max[i] = T.max(scores_max[i], scores_max_prev[i])


@T.macro
def guard_empty_rows(scores_max, row_max):
    """``row_max``: the running max, 0 where a row has seen no unmasked key yet (max ``-inf``), so that
    ``exp2`` of its ``-inf`` scores gives 0 instead of ``exp2(-inf + inf)`` = NaN."""
    for i in T.Parallel(scores_max.shape[0]):
        row_max[i] = T.if_then_else(scores_max[i] == -T.infinity(ACCUM), 0, scores_max[i])


@T.macro
def rescale_and_exponentiate(acc_s, acc_s_cast, acc_o, row_max, scores_max_prev, scores_scale, scores_sum, logsum,
                             scale: float):
    """Probabilities ``exp2((s - max) * scale)`` of the block into ``acc_s`` and ``acc_s_cast``; ``logsum`` and
    ``acc_o`` rescaled by ``exp2((max_prev - max) * scale)`` and ``logsum`` grown by the block's row sums."""
    for i in T.Parallel(acc_s.shape[0]):
        scores_scale[i] = T.exp2(scores_max_prev[i] * scale - row_max[i] * scale)
    for i, j in T.Parallel(acc_s.shape[0], acc_s.shape[1]):
        acc_s[i, j] = T.exp2(acc_s[i, j] * scale - row_max[i] * scale)
    T.reduce_sum(acc_s, scores_sum, dim=1)
    for i in T.Parallel(acc_s.shape[0]):
        logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
    T.copy(acc_s, acc_s_cast)
    for i, j in T.Parallel(acc_o.shape[0], acc_o.shape[1]):
        acc_o[i, j] *= scores_scale[i]


@T.macro
def normalize(acc_o, logsum):
    """The output rows divided by their softmax sums."""
    for i, j in T.Parallel(acc_o.shape[0], acc_o.shape[1]):
        acc_o[i, j] /= logsum[i]


@T.macro
def normalize_or_zero(acc_o, logsum):
    """:func:`normalize`, with 0 for rows that saw no key (sum 0) instead of ``0 / 0``."""
    for i, j in T.Parallel(acc_o.shape[0], acc_o.shape[1]):
        acc_o[i, j] = T.if_then_else(logsum[i] > 0, acc_o[i, j] / logsum[i], 0)
