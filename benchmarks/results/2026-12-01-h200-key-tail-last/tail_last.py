"""Probe (2026-12-01, one H200): FlashAttention at 8 x 1500 tokens with its ragged key block taken last, after
the pipelined loop over the 11 whole blocks, at a gemm width of 96 keys instead of 128 (1504 keys computed instead
of 1536). Its K and V rows are loaded before the loop (the producer's TMA, beside Q), so the step after the loop
waits on nothing; its score tiles are fragments of their own, live only after the loop's are dead (ptxas: 168
registers, no spill, no serialized wgmma, where the same step taken first in the prologue serialized every wgmma,
2026-11-30-h200-ragged-settled/key_tail.py). Against the search's pick of the template at 1500 (twice) and 1536,
timed as the ragged experiment times a pair (settled CUDA graphs, and queued). Every output is checked against
float32.

    python benchmarks/results/2026-12-01-h200-key-tail-last/tail_last.py $OUT
"""
import json
import math
import os
import sys

import tilelang.language as T
import torch

import pt_tvm
from pt_tvm import cost, hw, templates, verify
from pt_tvm.compiler import planned_func, schedule_template
from pt_tvm.graph import Placement
from pt_tvm.measure import SETTLE_MS, Queued, capture, input_sets, rel_err, time_samplers
from pt_tvm.templates.online_softmax import ACCUM, LOG2E, normalize, rescale_and_exponentiate, update_max

BATCH, HEADS, DIM, DTYPE = 8, 16, 128, "bfloat16"


def tail_last(seq: int, block_M: int = 128, block_N: int = 128):
    """Non-causal attention over the whole key blocks, then the ``seq % block_N`` keys past them as one step at
    the next multiple of 16 keys, loaded before the loop."""
    full, tail = divmod(seq, block_N)
    width = -(-tail // 16) * 16
    scale = DIM ** -0.5 * LOG2E
    shape = (BATCH, seq, HEADS, DIM)

    @T.prim_func
    def fa_tail_last(Q: T.Tensor(shape, DTYPE), K: T.Tensor(shape, DTYPE), V: T.Tensor(shape, DTYPE),
                     Out: T.Tensor(shape, DTYPE)):
        with T.Kernel(T.ceildiv(seq, block_M), HEADS, BATCH, threads=384) as (bx, by, bz):
            Q_shared = T.alloc_shared((block_M, DIM), DTYPE)
            K_tail = T.alloc_shared((width, DIM), DTYPE)
            V_tail = T.alloc_shared((width, DIM), DTYPE)
            K_shared = T.alloc_shared((block_N, DIM), DTYPE)
            V_shared = T.alloc_shared((block_N, DIM), DTYPE)
            acc_s = T.alloc_fragment((block_M, block_N), ACCUM)
            acc_s_cast = T.alloc_fragment((block_M, block_N), DTYPE)
            acc_t = T.alloc_fragment((block_M, width), ACCUM)
            acc_t_cast = T.alloc_fragment((block_M, width), DTYPE)
            acc_o = T.alloc_fragment((block_M, DIM), ACCUM)
            scores_max = T.alloc_fragment((block_M,), ACCUM)
            scores_max_prev = T.alloc_fragment((block_M,), ACCUM)
            scores_scale = T.alloc_fragment((block_M,), ACCUM)
            scores_sum = T.alloc_fragment((block_M,), ACCUM)
            logsum = T.alloc_fragment((block_M,), ACCUM)
            T.copy(Q[bz, bx * block_M:(bx + 1) * block_M, by, :], Q_shared)
            T.copy(K[bz, full * block_N:full * block_N + width, by, :], K_tail)
            T.copy(V[bz, full * block_N:full * block_N + width, by, :], V_tail)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(ACCUM))
            for k in T.Pipelined(full, num_stages=2):
                T.copy(K[bz, k * block_N:(k + 1) * block_N, by, :], K_shared)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow,
                       clear_accum=True)
                update_max(acc_s, scores_max, scores_max_prev)
                rescale_and_exponentiate(acc_s, acc_s_cast, acc_o, scores_max, scores_max_prev, scores_scale,
                                         scores_sum, logsum, scale)
                T.copy(V[bz, k * block_N:(k + 1) * block_N, by, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            T.gemm(Q_shared, K_tail, acc_t, transpose_B=True, policy=T.GemmWarpPolicy.FullRow, clear_accum=True)
            for i, j in T.Parallel(block_M, width):
                acc_t[i, j] = T.if_then_else(j < tail, acc_t[i, j], -T.infinity(ACCUM))
            update_max(acc_t, scores_max, scores_max_prev)
            rescale_and_exponentiate(acc_t, acc_t_cast, acc_o, scores_max, scores_max_prev, scores_scale,
                                     scores_sum, logsum, scale)
            T.gemm(acc_t_cast, V_tail, acc_o, policy=T.GemmWarpPolicy.FullRow)
            normalize(acc_o, logsum)
            T.copy(acc_o, Q_shared)
            T.copy(Q_shared, Out[bz, bx * block_M:(bx + 1) * block_M, by, :])

    return fa_tail_last


def live_registers(graph, threads, capped=False):
    """verify.register_estimate over the fragments live at once (prologue steps, the loop, epilogue steps)."""
    sizes = {n: b.nbytes or 0 for n, b in graph.buffers.items() if b.scope in ("fragment", "local")}
    order = {Placement.PROLOGUE: 0, Placement.LOOP: 1, Placement.EPILOGUE: 2}
    point = lambda t: (order[t.placement], 0 if t.placement == Placement.LOOP else t.index)  # noqa: E731
    live = {}
    for t in graph.stasks:
        for b in (t.read_buffers() | t.write_buffers()) & sizes.keys():
            lo, hi = live.get(b, (point(t), point(t)))
            live[b] = (min(lo, point(t)), max(hi, point(t)))
    peak = max(sum(sizes[b] for b, (lo, hi) in live.items() if lo <= point(t) <= hi) for t in graph.stasks)
    overhead = verify._CAPPED_REG_OVERHEAD if capped else verify._REG_OVERHEAD
    return math.ceil(peak / 4 / max(threads, 1)) + overhead


def build(vdev):
    """{label: (kernel, seq, note)}: the template's picks and the tail-last kernel (the search's best plan)."""
    tmpl = templates.get("flash_attention")
    out = {}
    for label, seq in (("pick 1500", 1500), ("pick 1500 again", 1500), ("pick 1536", 1536)):
        res, problem, _ = schedule_template("flash_attention", vdev, params={
            "batch": BATCH, "seq_len": seq, "heads": HEADS, "kv_heads": HEADS, "dim": DIM, "dtype": DTYPE})
        func = planned_func("flash_attention", problem, res.best, vdev)
        out[label] = (tmpl.compile(func, vdev.tvm_target()), seq, f"{res.best.plan.tile} {res.best.note}")
    verify.register_estimate = cost.register_estimate = live_registers
    func = tail_last(1500)
    best = pt_tvm.schedule(func, vdev).best
    kernel = pt_tvm.compile(func, vdev.tvm_target(), plan=best.plan, out_idx=[3], pass_configs=tmpl.pass_configs)
    out["tail last 1500"] = (kernel, 1500, best.note)
    return out


def main(out_dir: str) -> None:
    vdev = hw.from_device()
    rows, samplers = {}, {}
    for label, (kernel, seq, note) in build(vdev).items():
        def make(seed, seq=seq):
            g = torch.Generator("cuda").manual_seed(seed)
            return tuple(torch.randn(BATCH, seq, HEADS, DIM, generator=g, device="cuda").to(getattr(torch, DTYPE))
                         for _ in range(3))
        q, k, v = make(7)
        ref = torch.nn.functional.scaled_dot_product_attention(
            *(t.float().transpose(1, 2) for t in (q, k, v))).transpose(1, 2)
        rows[label] = {"seq": seq, "plan": note, "rel_err": rel_err(kernel(q, k, v), ref),
                       "flops": 4.0 * BATCH * HEADS * DIM * seq * seq}
        samplers[label] = Queued(kernel, input_sets(make, 3 * q.numel() * q.element_size(), vdev.l2_bytes, 4))
    for label, t in time_samplers(samplers, rounds=15, round_ms=150.0).items():
        rows[label]["queued_ms"] = t.ms
    graphs = {label: capture(s.fn, s.sets) for label, s in samplers.items()}
    for label, t in time_samplers(graphs, rounds=15, round_ms=150.0, settle_ms=SETTLE_MS).items():
        rows[label].update(graph_ms=t.ms, graph_p20_ms=t.p20, graph_p80_ms=t.p80)
    with open(os.path.join(out_dir, "tail_last.json"), "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)
    twin = rows["pick 1536"]
    print(f"{'kernel':<16} {'graph us':>9} {'queued us':>9}  TFLOP/s over the 1536 pick's (graph, queued)  rel err")
    for label, r in rows.items():
        ratios = [r["flops"] / r[w] / (twin["flops"] / twin[w]) for w in ("graph_ms", "queued_ms")]
        print(f"{label:<16} {r['graph_ms'] * 1e3:9.1f} {r['queued_ms'] * 1e3:9.1f}  {ratios[0]:.3f} {ratios[1]:.3f}"
              f"  {r['rel_err']:.1e}  {r['plan'][:70]}")


if __name__ == "__main__":
    main(sys.argv[1])
