"""``pt_tvm::decode_attention``: decoding attention over a KV cache (FlashDecoding, split-KV), contiguous
``[batch, kv_len, kv_heads, dim]`` or paged ``[num_pages, page_size, kv_heads, dim]`` with a block table, as
flash-attn's ``flash_attn_with_kvcache`` and vLLM hold it. The plan is found once per shape bucket
(:mod:`pt_tvm.decode`), so the steps of a decoding loop do no search."""
from typing import Optional

import torch
from torch import Tensor

from .. import decode

__all__ = ["decode_attention"]


@torch.library.custom_op("pt_tvm::decode_attention", mutates_args=())
def decode_attention(q: Tensor, k_cache: Tensor, v_cache: Tensor, cache_seqlens: Tensor,
                     block_table: Optional[Tensor] = None, softmax_scale: Optional[float] = None,
                     max_seqlen: Optional[int] = None) -> Tensor:
    """``q [batch, q_len, heads, dim]`` (q_len 1-16, the newest tokens, already in the cache) against each
    sequence's first ``cache_seqlens[b]`` (int32 ``[batch]``) cached keys; query ``i`` sees keys up to
    ``cache_seqlens[b] - q_len + i``. ``max_seqlen`` (the longest length) picks the plan's bucket without
    reading ``cache_seqlens`` from the device. Returns ``q``'s shape."""
    if not q.shape[0]:  # an empty batch (a serving step with no sequence): no kernel
        decode.check_shapes(q, k_cache, v_cache, cache_seqlens, block_table)
        return torch.empty_like(q)
    return decode.decode_attention(q, k_cache, v_cache, cache_seqlens, block_table, softmax_scale,
                                   max_seqlen=max_seqlen)


@decode_attention.register_fake
def _(q, k_cache, v_cache, cache_seqlens, block_table=None, softmax_scale=None, max_seqlen=None):
    decode.check_shapes(q, k_cache, v_cache, cache_seqlens, block_table)
    return torch.empty_like(q)
