"""GPU experiment (issue 14 item 3): an attention layer's two ops on the kernels of its length's bucket.

With ``ops.configure(dynamic_tokens=True)``, ``ops.qkv_rope`` (the fused QKV projection with RoPE) compiles with a
symbolic row count and sequence length, and ``ops.attention_qkv`` runs over its output's heads as views on the
varlen kernel of the length's bucket, so a model compiles one kernel pair per bucket instead of one per length.
Per LLaMA-3-8B shape (hidden 4096, 32 query heads, 8 key/value heads, head dim 128, causal, batch 1, bf16): the
two ops with the exact length's kernels, the same on the bucket's, and the eager layer's PyTorch (``F.linear``,
the rotation, cuDNN/FlashAttention-2 SDPA as PyTorch picks it), each output checked against float32 on fresh
random inputs (NaN-prefilled), CUDA-graph replay in alternating rounds.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.dynamic_qkv $OUT``.
Writes ``dynamic_qkv.json``.
"""
import logging
import os
import sys
import time

import torch
import torch.nn.functional as F

from benchmarks.experiments.variants import bucket_stores, compare_buckets, save_rows, store_kernels, through
from benchmarks.layers.models import _rope_tables, rope
from pt_tvm import ops
from pt_tvm.templates.flash_attention import visible_pairs

SEQLENS = (777, 1500, 2500)
HIDDEN, HEADS, KV_HEADS, DIM, DTYPE = 4096, 32, 8, 128, torch.bfloat16


def _eager(x, w, cos, sin, dtype=DTYPE):
    """The layer's attention in PyTorch (in ``dtype``): projection, rotation of the query and key heads, SDPA."""
    x, w, cos, sin = (t.to(dtype) for t in (x, w, cos, sin))
    b, s, _ = x.shape
    q, k, v = F.linear(x, w).view(b, s, -1, DIM).split([HEADS, KV_HEADS, KV_HEADS], dim=2)
    q, k = rope(q, cos, sin), rope(k, cos, sin)
    out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True,
                                         enable_gqa=True)
    return out.transpose(1, 2)


def _ops(x, w, cos, sin):
    return ops.attention_qkv(ops.qkv_rope(x, w, cos, sin, KV_HEADS), KV_HEADS, causal=True)


def main(out_dir):
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")  # the ops log each schedule choice
    t0 = time.time()
    stores = bucket_stores(out_dir)
    fns = {**{n: through(s, _ops) for n, s in stores.items()}, "eager": _eager}
    rows = []
    for L in SEQLENS:
        cos, sin = _rope_tables(L, DIM, 500000.0, "cuda", DTYPE)

        def make(seed):
            g = torch.Generator("cuda").manual_seed(seed)
            w = torch.randn((HEADS + 2 * KV_HEADS) * DIM, HIDDEN, generator=g, device="cuda") / HIDDEN ** 0.5
            return torch.randn(1, L, HIDDEN, generator=g, device="cuda").to(DTYPE), w.to(DTYPE), cos, sin

        flops = (2 * L * HIDDEN * (HEADS + 2 * KV_HEADS) * DIM
                 + 4 * HEADS * DIM * visible_pairs(L, L, causal=True))
        info = compare_buckets(f"L={L:<5}", fns, "eager", make, lambda *a: _eager(*a, dtype=torch.float32),
                               2 * L * HIDDEN + 2 * (HEADS + 2 * KV_HEADS) * DIM * HIDDEN, flops, "bfloat16")
        rows.append({"seqlen": L, "hidden": HIDDEN, "heads": HEADS, "kv_heads": KV_HEADS, "dim": DIM,
                     "causal": True, "kernels": store_kernels(stores), "systems": info})
        save_rows(out_dir, "dynamic_qkv", rows)
    print(f"total {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
