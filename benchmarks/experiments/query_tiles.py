"""GPU experiment (issue 15 item 5): FlashAttention at head dim 64 with each query tile, 64, 128 and 192 rows (the
last over three consumer warpgroups), the search's best plan at each beside cuDNN SDPA, on encoders' ragged
lengths (ViT-B/16, ViT-L/14, Whisper) and the attention suites' head-dim-64 configs: what the cost model's price of
a third consumer warpgroup against two rests on. Every output checked against the float32 reference on fresh
inputs (NaN-prefilled), then timed in alternating rounds from CUDA graphs settled at each one's own clock, inputs
rotated past the L2. Each row also carries its kernels as measured candidates (tile, plan, ms), so
``python -m benchmarks model-check query_tiles.json`` re-prices them.

    python -m benchmarks.experiments.query_tiles $OUT [gqa]

``gqa``: LLaMA-3.2-1B/3B's attention instead (32 query heads over 8 key/value heads of 64, causal): prefill at
1 x 2048 and 4 x 4096 tokens, and 777 new tokens over a 2500-token KV cache.
"""
import json
import os
import sys
import time

import torch

from benchmarks.experiments.variants import best_pinned, graphed_if_right, pinned_kernel
from benchmarks.suite import header
from benchmarks.systems import build_system
from pt_tvm import hw, templates
from pt_tvm.measure import SETTLE_MS, time_samplers

NAME = "flash_attention"
SHAPES = [  # (label, problem); head dim 64, float16
    ("ViT-L/14 336 px 32 x 577", {"batch": 32, "seq_len": 577, "heads": 16, "kv_heads": 16}),
    ("ViT-B/16 224 px 64 x 197", {"batch": 64, "seq_len": 197, "heads": 12, "kv_heads": 12}),
    ("Whisper encoder 8 x 1500", {"batch": 8, "seq_len": 1500, "heads": 20, "kv_heads": 20}),
    ("16 x 1024", {"batch": 16, "seq_len": 1024, "heads": 32, "kv_heads": 32}),
    ("4 x 4096", {"batch": 4, "seq_len": 4096, "heads": 32, "kv_heads": 32}),
    ("1 x 16384", {"batch": 1, "seq_len": 16384, "heads": 32, "kv_heads": 32}),
    ("16 x 1024 causal", {"batch": 16, "seq_len": 1024, "heads": 32, "kv_heads": 32, "causal": True}),
    ("4 x 4096 causal", {"batch": 4, "seq_len": 4096, "heads": 32, "kv_heads": 32, "causal": True}),
    ("1 x 16384 causal", {"batch": 1, "seq_len": 16384, "heads": 32, "kv_heads": 32, "causal": True}),
]
GQA = {"heads": 32, "kv_heads": 8, "causal": True}
SETS = {"": SHAPES, "gqa": [("prefill 1 x 2048, GQA 32/8", {"batch": 1, "seq_len": 2048, **GQA}),
                            ("prefill 4 x 4096, GQA 32/8", {"batch": 4, "seq_len": 4096, **GQA}),
                            ("777 over 2500 keys, GQA 32/8", {"batch": 8, "seq_len": 777, "seq_len_k": 2500, **GQA})]}
ROWS = (64, 128, 192)  # query tiles (block_M)
ROUNDS = 11
PEER = "cudnn-sdpa"


def main(out_dir: str, name: str = "") -> None:
    t_start = time.time()
    shapes = SETS[name]
    vdev, tmpl = hw.from_device(), templates.get(NAME)
    params = [{**problem, "dim": 64, **({"block_M": m} if m else {})} for _, problem in shapes for m in (0, *ROWS)]
    picks = best_pinned(NAME, params, vdev)
    print(f"searched and compiled {len(picks)} kernels in {time.time() - t_start:.0f} s", flush=True)
    rows, per = [], 1 + len(ROWS)
    for i, (label, _) in enumerate(shapes):
        found = picks[per * i:per * (i + 1)]
        (pick, _), pinned = found[0], dict(zip(ROWS, found[1:]))
        problem = next(p for b, p in found if b is not None)  # as resolved by any search that found a plan
        config = {k: v for k, v in problem.items() if k not in tmpl.tile}
        row, samplers, cands = {"shape": label, "kernel": NAME, "system": "pt-tvm", "config": config}, {}, []
        for m, (best, p) in pinned.items():
            if best is None:
                cands.append({"tile": {"block_M": m}, "error": p})
                continue
            entry = {"tile": dict(best.plan.tile), "plan": best.plan.to_dict(), "note": best.note,
                     "predicted_ms": best.seconds * 1e3, "pick": pick is not None and best.plan == pick.plan}
            sampler = graphed_if_right(tmpl, pinned_kernel(NAME, best, p, vdev), p, vdev, entry)
            if sampler is not None:
                samplers[m] = sampler
            cands.append(entry)
        fn, info = build_system(PEER, tmpl, config, vdev)
        row[PEER] = dict(info)
        if fn is not None:
            sampler = graphed_if_right(tmpl, fn, config, vdev, row[PEER])
            if sampler is not None:
                samplers[PEER] = sampler
        for key, t in time_samplers(samplers, rounds=ROUNDS, round_ms=150.0, settle_ms=SETTLE_MS).items():
            entry = row[PEER] if key == PEER else next(c for c in cands if c["tile"]["block_M"] == key)
            entry.update(ms=t.ms, p20_ms=t.p20, p80_ms=t.p80)
        row["candidates"] = cands
        rows.append(row)
        with open(os.path.join(out_dir, f"query_tiles{'-' + name if name else ''}.json"), "w") as f:
            json.dump({"header": header(f"python -m benchmarks.experiments.query_tiles $OUT {name}".rstrip(),
                                        torch.cuda.get_device_name()), "rows": rows}, f, indent=1, default=str)
        torch.cuda.empty_cache()
    print(f"\n{'shape':<28} {PEER + ' us':>14}  " + "  ".join(f"{f'{m} rows: us (pred)':>24}" for m in ROWS)
          + "  pick")
    for r in rows:
        peer = r[PEER].get("ms")
        cells = []
        for c in r["candidates"]:
            over = f"{peer / c['ms']:5.3f}x" if peer and "ms" in c else ""
            cells.append(f"{c['ms'] * 1e3:8.1f} {over} ({c['predicted_ms'] * 1e3:6.1f})" if "ms" in c else "-")
        picked = next((c["tile"]["block_M"] for c in r["candidates"] if c.get("pick")), "-")
        print(f"{r['shape']:<28} {peer * 1e3 if peer else float('nan'):14.1f}  " + "  ".join(f"{c:>24}" for c in cells)
              + f"  {picked}")
    print(f"total {time.time() - t_start:.0f} s")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"], *sys.argv[2:3])
