"""GPU experiment (issue 14 item 1): what dense attention costs on the varlen kernel of its lengths' buckets.

With ``ops.configure(dynamic_tokens=True)``, ``ops.attention`` over ``[batch, seqlen, heads, dim]`` runs as a
packed batch of equal lengths on the ``flash_attention_varlen`` kernel of the lengths' buckets (the next power of
two), so a model compiles one kernel per bucket instead of one per length. Per LLaMA-3-8B attention shape
(32 query heads, 8 key/value heads, head dim 128, causal, batch 1, bf16): the op with the exact length's kernel,
the op on the bucket's kernel, the bucket's kernel with GQA packed and not, packed with 64-key tiles, and packed 3
stages deep (the search's best plan of each, those tile parameters pinned), and cuDNN/FlashAttention-2 SDPA as
PyTorch picks it (``enable_gqa``), each output checked against float32 on fresh random inputs (NaN-prefilled),
CUDA-graph replay in alternating rounds.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.dynamic_attention $OUT [LENGTH
...]`` (default 777, 1500 and 2500 tokens).
Writes ``dynamic_attention.json``.
"""
import logging
import os
import sys
import time

import torch
import torch.nn.functional as F

from benchmarks.experiments.depth import at_depth
from benchmarks.experiments.variants import bucket_stores, compare_buckets, save_rows, store_kernels, through
from pt_tvm import hw, ops, templates
from pt_tvm.compiler import schedule_template
from pt_tvm.templates.base import bucket
from pt_tvm.templates.flash_attention import visible_pairs

SEQLENS = (777, 1500, 2500)
# the exact kernel's key tile at 777 (64) and depth (3, where the varlen search prices 2 and 3 alike)
PINS = ({"pack_gqa": 0}, {"pack_gqa": 1}, {"pack_gqa": 1, "block_N": 64}, {"pack_gqa": 1, "depth": 3})
HEADS, KV_HEADS, DIM, DTYPE = 32, 8, 128, torch.bfloat16


def _reference(q, k, v):
    """Float32 causal GQA attention (equal lengths), ``[batch, seqlen, heads, dim]``."""
    out = F.scaled_dot_product_attention(*(t.float().transpose(1, 2) for t in (q, k, v)), is_causal=True,
                                         enable_gqa=True)
    return out.transpose(1, 2)


def _sdpa(q, k, v):
    """The peer as its users call it: SDPA over ``[batch, heads, seqlen, dim]`` views, GQA by ``enable_gqa``."""
    return F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True,
                                          enable_gqa=True).transpose(1, 2)


def _pinned(L: int, pins: dict):
    """The bucket's varlen kernel (the search's best plan with the tile parameters ``pins`` pinned; ``depth``: that
    plan with its loop pipelines so deep) over a ``[1, L, ...]`` batch viewed as one packed sequence, as the op
    calls it."""
    vdev = hw.from_device()
    tile = {k: v for k, v in pins.items() if k != "depth"}
    params = {"batch": 1, "heads": HEADS, "kv_heads": KV_HEADS, "max_seqlen_q": bucket(L), "max_seqlen_k": bucket(L),
              "dim": DIM, "causal": True, "dtype": "bfloat16", **tile}
    result, _, build = schedule_template("flash_attention_varlen", vdev, params=params)
    best = at_depth(result.best, pins["depth"], vdev) if "depth" in pins else result.best
    plan = f"{best.plan.tile} {best.note}"
    print(f"L={L} {pins}: {plan}", flush=True)
    kernel = templates.get("flash_attention_varlen").compile(build(best), vdev.tvm_target())
    cu = torch.tensor([0, L], dtype=torch.int32, device="cuda")
    return (lambda q, k, v: kernel(*(t.view(-1, *t.shape[2:]) for t in (q, k, v)), cu, cu).view(q.shape)), plan


def main(out_dir, lengths=SEQLENS):
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")  # the ops log each schedule choice
    t0 = time.time()
    stores = bucket_stores(out_dir)
    fns = {**{n: through(s, lambda q, k, v: ops.attention(q, k, v, causal=True)) for n, s in stores.items()},
           "sdpa": _sdpa}
    rows = []
    for L in lengths:
        def make(seed):
            g = torch.Generator("cuda").manual_seed(seed)
            return tuple(torch.randn(1, L, h, DIM, generator=g, device="cuda").to(DTYPE)
                         for h in (HEADS, KV_HEADS, KV_HEADS))

        pinned = {"bucket, " + ", ".join(f"{k}={v}" for k, v in pins.items()): _pinned(L, pins) for pins in PINS}
        info = compare_buckets(f"L={L:<5}", {**fns, **{n: fn for n, (fn, _) in pinned.items()}}, "sdpa", make,
                               _reference, 2 * L * (HEADS + 2 * KV_HEADS) * DIM,
                               4 * HEADS * DIM * visible_pairs(L, L, causal=True), "bfloat16")
        print("  " + "  ".join(f"{n} {info[n]['ms'] / info['exact']['ms']:.3f}" for n in pinned) + " of exact",
              flush=True)
        rows.append({"seqlen": L, "heads": HEADS, "kv_heads": KV_HEADS, "dim": DIM, "causal": True,
                     "kernels": store_kernels(stores), "pinned_plans": {n: p for n, (_, p) in pinned.items()},
                     "systems": info})
        save_rows(out_dir, "dynamic_attention", rows)
    print(f"total {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"], tuple(map(int, sys.argv[2:])) or SEQLENS)
