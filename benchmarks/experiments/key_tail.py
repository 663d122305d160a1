"""GPU experiment: FlashAttention's ragged key tail as a step of its own after the loop (tile ``key_tail=1``)
against the whole masked key block (``key_tail=0``), each the search's best plan with that value pinned, on
non-causal shapes whose key length is no multiple of the key tile: encoders (ViT-B/16 at 224 px, ViT-L/14 at 336
px, Whisper's 1500 frames), cross-attention over a KV cache, and issue 14's 8 x 1500 pair. Records, per shape,
both kernels' predicted and measured times (what the search's preference for the tail, ``Template.prefer``, rests
on), beside cuDNN's and FlashAttention-2's SDPA as PyTorch users call them (BHSD views of the same tensors): every
output checked against the float32 reference on fresh inputs (NaN-prefilled), then timed in alternating rounds from
CUDA graphs settled at each one's own clock, inputs rotated past the L2 (the suites' way).

    python -m benchmarks.experiments.key_tail $OUT
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
SHAPES = [  # (label, problem)
    ("8 x 1500, d128 bf16 (issue 14's pair)", {"batch": 8, "seq_len": 1500, "heads": 16, "kv_heads": 16, "dim": 128,
                                               "dtype": "bfloat16"}),
    ("8 x 1500, d128", {"batch": 8, "seq_len": 1500, "heads": 16, "kv_heads": 16, "dim": 128}),
    ("4 x 4000, d128", {"batch": 4, "seq_len": 4000, "heads": 16, "kv_heads": 16, "dim": 128}),
    ("Whisper encoder 8 x 1500, d64", {"batch": 8, "seq_len": 1500, "heads": 20, "kv_heads": 20, "dim": 64}),
    ("ViT-L/14 336 px 32 x 577, d64", {"batch": 32, "seq_len": 577, "heads": 16, "kv_heads": 16, "dim": 64}),
    ("ViT-B/16 224 px 64 x 197, d64", {"batch": 64, "seq_len": 197, "heads": 12, "kv_heads": 12, "dim": 64}),
    ("777 over 2500 keys, GQA 4", {"batch": 8, "seq_len": 777, "seq_len_k": 2500, "heads": 16, "kv_heads": 4,
                                   "dim": 128}),
    ("8 x 1500, d256", {"batch": 8, "seq_len": 1500, "heads": 8, "kv_heads": 8, "dim": 256}),
]
ROUNDS = 15
PEERS = ("cudnn-sdpa", "fa2-sdpa")


def main(out_dir: str) -> None:
    t_start = time.time()
    vdev, tmpl = hw.from_device(), templates.get(NAME)
    picks = best_pinned(NAME, [{**problem, "key_tail": kt} for _, problem in SHAPES for kt in (0, 1)], vdev)
    print(f"searched and compiled {len(picks)} kernels in {time.time() - t_start:.0f} s", flush=True)
    rows = []
    for i, (label, _) in enumerate(SHAPES):
        row, samplers = {"shape": label}, {}

        def add(key, fn, problem, entry):
            sampler = graphed_if_right(tmpl, fn, problem, vdev, entry)
            if sampler is not None:
                samplers[key] = sampler
            row[key] = entry

        for kt in (0, 1):
            best, problem = picks[2 * i + kt]
            if best is None:
                row[kt] = {"error": problem}
                continue
            add(kt, pinned_kernel(NAME, best, problem, vdev), problem, {
                "problem": problem, "tile": dict(best.plan.tile), "plan": best.note,
                "predicted_ms": best.seconds * 1e3, "flops": tmpl.flops(problem)})
        problem = next(p for b, p in picks[2 * i:2 * i + 2] if b is not None)
        problem = {k: v for k, v in problem.items() if k != "key_tail"}
        for peer in PEERS:
            fn, info = build_system(peer, tmpl, problem, vdev)
            if fn is None:
                row[peer] = info
            else:
                add(peer, fn, problem, dict(info))
        for key, t in time_samplers(samplers, rounds=ROUNDS, round_ms=150.0, settle_ms=SETTLE_MS).items():
            row[key].update(ms=t.ms, p20_ms=t.p20, p80_ms=t.p80)
        rows.append(row)
        with open(os.path.join(out_dir, "key_tail.json"), "w") as f:
            json.dump({"header": header("python -m benchmarks.experiments.key_tail $OUT",
                                        torch.cuda.get_device_name()), "rows": rows}, f, indent=1, default=str)
        torch.cuda.empty_cache()
    print(f"\n{'shape':<40} {'whole us':>9} {'tail us':>9} {'measured':>9} {'predicted':>9}  "
          + "  ".join(f"{p + ' us':>15}" for p in PEERS) + "  tiles (whole; tail)")
    for r in rows:
        w, t = r[0], r[1]
        peers = "  ".join(f"{r[p]['ms'] * 1e3:15.1f}" if "ms" in r[p] else f"{'-':>15}" for p in PEERS)
        if "ms" in w and "ms" in t:
            print(f"{r['shape']:<40} {w['ms'] * 1e3:9.1f} {t['ms'] * 1e3:9.1f} {t['ms'] / w['ms']:9.3f} "
                  f"{t['predicted_ms'] / w['predicted_ms']:9.3f}  {peers}  {_tile(w)}; {_tile(t)}")
        else:
            print(f"{r['shape']:<40} {w.get('error', '')[:60]} | {t.get('error', '')[:60]}  {peers}")
    print(f"total {time.time() - t_start:.0f} s")


def _tile(entry: dict) -> str:
    t = entry["tile"]
    return f"{t['block_M']}x{t['block_N']} {entry['plan'].split(',')[1].strip()}"


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
