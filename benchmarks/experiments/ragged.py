"""GPU experiment (issue 14 items 1-2): every template at ragged shapes against the nearest tile-multiple shape,
in one process on one GPU. Bar: the ragged shape's TFLOP/s (its own useful FLOPs) within 5% of the
tile-multiple one's.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.ragged $OUT [TEMPLATE ...]``
(every pair: about 17 minutes on one H200, more than a device call, the attention pairs about 3.5, the
layers' kernels, conv1d and decoding about 6.5; name templates, e.g.
``gemm chunk_state``, to run a part). Per pair, both shapes are searched (the model's pick), compiled in
parallel, checked on every output against the float32 reference on fresh random inputs (NaN-prefilled), then
timed in alternating rounds with inputs rotated past the L2, two ways: from CUDA graphs, each kernel run
untimed for ``SETTLE_MS`` before its share of a round so that it is timed at the clock its own load sets (the
suites' and the tuner's way: the headline and the bar), and queued unsettled (this experiment's way until
2026-11-30, kept beside it: at the power cap the two kernels then share the clock the other left; one H200,
8 x 1500 attention, 0.92-0.93 queued against 0.944-0.950 settled). The twin's kernel is timed a second time on
input sets of its own beside the two, so that each ratio comes with the spread of identical kernels in its own
rounds (two samplers of one kernel in another script ran 3% apart on 2026-11-30; in the pairs' rounds on
2026-12-01 the attention twins came within 0.5%). "Nearest tile multiple": each ragged size rounded
to the nearest multiple of 128 (GEMM's M, N, K; attention's lengths) or of the chunk (Mamba2's sequence), ties
up. Packed variable-length attention: a batch of ragged lengths against the same batch with each length
rounded so, FLOPs counted over the visible (query, key) pairs of the lengths run. Prints a table, writes
``ragged.json`` after every pair (a cut run keeps what it measured).
"""
import concurrent.futures
import json
import multiprocessing
import os
import sys
import time

import torch

from benchmarks.experiments.variants import before
from benchmarks.suite import header
from pt_tvm import hw, templates
from pt_tvm.compiler import planned_func, schedule_template
from pt_tvm.measure import (
    REL_TOL,
    SETTLE_MS,
    Queued,
    as_outputs,
    capture,
    check_call,
    input_sets,
    kernel_outputs,
    time_samplers,
)
from pt_tvm.templates.flash_attention import visible_pairs
from pt_tvm.tune import compile_jobs, warm

BAR = 0.95
FA = {"heads": 16, "kv_heads": 16, "dim": 128}
SWIGLU = {"N": 14336, "K": 4096}  # LLaMA-3-8B's gate/up projection
VARLEN_Q = [1500, 3000, 777, 2500, 1200, 3100, 640, 2000]  # a prefill batch of ragged prompts
VARLEN_K = [1500, 3000, 2777, 2500, 1200, 3100, 4000, 2000]  # ... two of them after a KV cache
# (template, ragged problem, which sizes are ragged and their tile, note)
PAIRS = [
    ("gemm", {"M": 8000, "N": 4096, "K": 4096}, {"M": 128}, "ragged tokens"),
    ("gemm", {"M": 4000, "N": 4000, "K": 4000}, {"M": 128, "N": 128, "K": 128}, "ragged M, N, K"),
    ("gemm", {"M": 8000, "N": 4096, "K": 4096, "trans_B": True}, {"M": 128}, "linear, ragged tokens"),
    ("gemm", {"M": 4096, "N": 4096, "K": 4001}, {"K": 128}, "K rows of 8002 bytes"),  # TMA wants 16-byte strides
    ("gemm", {"M": 4096, "N": 4096, "K": 4004}, {"K": 128}, "K rows of 8008 bytes"),
    ("gemm", {"M": 2048, "N": 50257, "K": 768, "trans_B": True}, {"N": 128}, "GPT-2 lm_head, C rows odd"),
    ("gemm", {"M": 8192, "N": 32001, "K": 4096, "trans_B": True}, {"N": 128}, "vocab 32001, C rows odd"),
    ("gemm_rowsum", {"M": 8000, "N": 4096, "K": 4096}, {"M": 128}, "ragged tokens"),
    ("flash_attention", {"batch": 8, "seq_len": 1500, **FA}, {"seq_len": 128}, "ragged"),
    ("flash_attention", {"batch": 4, "seq_len": 3000, "causal": True, **FA}, {"seq_len": 128}, "ragged causal"),
    ("flash_attention", {"batch": 8, "seq_len": 777, "seq_len_k": 2500, "causal": True, **FA, "kv_heads": 4},
     {"seq_len": 128, "seq_len_k": 128}, "KV cache, GQA 4"),
    ("flash_attention", {"batch": 8, "seq_len": 777, "seq_len_k": 2500, "causal": True, **FA, "kv_heads": 4,
                         "pack_gqa": 0}, {"seq_len": 128, "seq_len_k": 128}, "KV cache, GQA 4, heads not packed"),
    ("flash_attention_varlen", {"batch": len(VARLEN_Q), "max_seqlen_q": max(VARLEN_Q),
                                "max_seqlen_k": max(VARLEN_K), "causal": True, **FA}, {}, "packed, ragged lengths"),
    ("chunk_state", {"batch": 4, "seqlen": 4000}, {"seqlen": 256}, "partial last chunk"),
    ("chunk_scan", {"batch": 4, "seqlen": 4000}, {"seqlen": 256}, "partial last chunk"),
    # the LLaMA-3-8B and Mamba2-1.3B layers' own kernels at the layers suite's ragged lengths
    ("gemm_swiglu", {"M": 777, **SWIGLU}, {"M": 128}, "777 tokens"),
    ("gemm_swiglu", {"M": 2500, **SWIGLU}, {"M": 128}, "2500 tokens"),
    ("gemm_rope", {"M": 777, "seqlen": 777}, {"M": 128, "seqlen": 128}, "777 tokens"),
    ("gemm_rope", {"M": 2500, "seqlen": 2500}, {"M": 128, "seqlen": 128}, "2500 tokens"),
    ("flash_attention_qkv", {"seq_len": 777}, {"seq_len": 128}, "777 tokens, GQA 4"),
    ("flash_attention_qkv", {"seq_len": 2500}, {"seq_len": 128}, "2500 tokens, GQA 4"),
    ("causal_conv1d", {"seqlen": 2500}, {"seqlen": 128}, "2500 tokens"),
    ("causal_conv1d", {"batch": 4, "seqlen": 4000}, {"seqlen": 128}, "4 x 4000 tokens"),
    ("causal_conv1d", {"batch": 4, "seqlen": 4096, "channels": 4353, "x_stride": 4353},
     {"channels": 128, "x_stride": 128}, "4353 channels (rows TMA cannot address)"),
    ("decode_attention", {"batch": 8, "kv_len": 15000}, {"kv_len": 128}, "15000 keys"),
]
DEADLINE_S = 480  # no pair starts timing after this
TWIN, AGAIN = "tile multiple", "tile multiple again"
ROUNDS = 15  # alternating timing rounds per pair: at 5 the two medians of one pair moved within each other's p20-p80


def nearest(n: int, tile: int) -> int:
    """The multiple of ``tile`` nearest ``n`` (ties up), at least ``tile``."""
    return max(tile, (n + tile // 2) // tile * tile)


def tile_multiple(problem: dict, ragged: dict) -> dict:
    return {**problem, **{k: nearest(problem[k], tile) for k, tile in ragged.items()}}


def varlen_batch(lengths_q: list[int], lengths_k: list[int], problem: dict, seed: int) -> tuple:
    """``(q, k, v, cu_seqlens_q, cu_seqlens_k)`` of these lengths, standard normal."""
    g = torch.Generator("cuda").manual_seed(seed)
    dtype = getattr(torch, problem["dtype"])
    cu = [torch.tensor([0, *torch.tensor(n).cumsum(0).tolist()], dtype=torch.int32, device="cuda")
          for n in (lengths_q, lengths_k)]
    shape = lambda total, heads: (total, heads, problem["dim"])  # noqa: E731
    return (torch.randn(shape(sum(lengths_q), problem["heads"]), generator=g, device="cuda").to(dtype),
            *(torch.randn(shape(sum(lengths_k), problem["kv_heads"]), generator=g, device="cuda").to(dtype)
              for _ in range(2)), *cu)


def varlen_flops(lengths_q: list[int], lengths_k: list[int], problem: dict) -> float:
    return 4.0 * problem["heads"] * problem["dim"] * sum(visible_pairs(q, k, problem["causal"])
                                                         for q, k in zip(lengths_q, lengths_k))


def cases(name: str, ragged_problem: dict, ragged: dict) -> list[tuple]:
    """``(label, problem, make(seed), flops)`` of the ragged shape and its tile-multiple twin."""
    tmpl = templates.get(name)
    if name == "flash_attention_varlen":
        ragged_problem, _ = tmpl.resolve_problem(**ragged_problem)
        rounded_q, rounded_k = ([nearest(n, 128) for n in ls] for ls in (VARLEN_Q, VARLEN_K))
        twin = {**ragged_problem, "max_seqlen_q": max(rounded_q), "max_seqlen_k": max(rounded_k)}
        return [(label, p, lambda seed, q=q, k=k, p=p: varlen_batch(q, k, p, seed), varlen_flops(q, k, p))
                for label, p, q, k in (("ragged", ragged_problem, VARLEN_Q, VARLEN_K),
                                       ("tile multiple", twin, rounded_q, rounded_k))]
    out = []
    for label, p in (("ragged", ragged_problem), ("tile multiple", tile_multiple(ragged_problem, ragged))):
        p, pins = tmpl.resolve_problem(**p)
        p = {**p, **pins}  # a pinned tile parameter (pack_gqa) stays with the problem into the search
        out.append((label, p, lambda seed, p=p: tmpl.make_inputs(p, "cuda", torch.Generator("cuda").manual_seed(seed)),
                    tmpl.flops(p)))
    return out


def search_one(job: tuple) -> tuple:
    """The search's pick for one (template, problem) on ``vdev`` (run in a worker process)."""
    name, problem, vdev = job
    result, problem, _ = schedule_template(name, vdev, params=problem)
    return result.best, problem


def main(out_dir: str, only: list[str], pairs: list[tuple] = PAIRS) -> None:
    t_start = time.time()
    vdev = hw.from_device()
    pairs = [p for p in pairs if not only or p[0] in only]
    jobs = [(name, problem, label, make, flops) for name, rp, ragged, _ in pairs
            for label, problem, make, flops in cases(name, rp, ragged)]
    workers = max(1, (os.cpu_count() or 2) - 1)
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        picks = list(pool.map(search_one, [(name, problem, vdev) for name, problem, *_ in jobs]))
    errors = warm([job for (name, *_), (best, problem) in zip(jobs, picks)
                   for job in compile_jobs(name, problem, vdev, [best])], workers=workers)
    print(f"searched and compiled {len(jobs)} kernels in {time.time() - t_start:.0f} s", flush=True)
    rows, head = [], header(" ".join(["python -m benchmarks.experiments.ragged $OUT", *only]),
                                torch.cuda.get_device_name())
    for i, (name, ragged_problem, _, note) in before(enumerate(pairs), DEADLINE_S, t_start,
                                                     lambda item: f"{item[1][0]} {item[1][3]}"):
        tmpl = templates.get(name)
        samplers, info, made = {}, {}, {}
        for j in (2 * i, 2 * i + 1):
            _, problem, label, make, flops = jobs[j]
            best, problem = picks[j]
            entry = {"problem": problem, "tile": dict(best.plan.tile), "plan": best.note, "flops": flops,
                     "predicted_ms": best.seconds * 1e3, "worker": errors[j]}
            try:
                kernel = tmpl.compile(planned_func(name, problem, best, vdev), vdev.tvm_target())
                check = make(1_000)
                refs = as_outputs(tmpl.reference(*check, **problem))
                checks = check_call(kernel_outputs(tmpl, kernel), check, refs, inout=tmpl.inout_idx)
                entry["rel_err"] = max(c.rel_err for c in checks)
                entry["prefill"] = [c.prefill for c in checks]
                if entry["rel_err"] < REL_TOL[problem["dtype"]] and "unverified" not in entry["prefill"]:
                    made[label] = (make, sum(t.numel() * t.element_size() for t in check))
                    samplers[label] = Queued(kernel_outputs(tmpl, kernel), input_sets(*made[label], vdev.l2_bytes,
                                                                                      max_sets=4))
                else:
                    entry["error"] = f"wrong result: rel err {entry['rel_err']:.2e} ({entry['prefill']})"
                del refs
            except Exception as ex:  # reported in the row
                entry["error"] = f"{type(ex).__name__}: {ex}"[:400]
            info[label] = entry
        # each kernel on its own input sets, and the twin again on sets of its own (the timing's spread between
        # identical kernels), timed in alternating rounds: queued, then from CUDA graphs settled (the headline)
        timed = dict(info)
        if len(samplers) == 2:
            samplers[AGAIN] = Queued(samplers[TWIN].fn, input_sets(*made[TWIN], vdev.l2_bytes, max_sets=4))
            timed[AGAIN] = {"flops": info[TWIN]["flops"]}
        for label, t in time_samplers(samplers, rounds=ROUNDS, round_ms=150.0).items():
            timed[label]["queued"] = _timing(t, timed[label]["flops"])
        graphs = {label: capture(q.fn, q.sets) for label, q in samplers.items()}
        for label, t in time_samplers(graphs, rounds=ROUNDS, round_ms=150.0, settle_ms=SETTLE_MS).items():
            timed[label].update(_timing(t, timed[label]["flops"]))
        ratio, queued = _ratio(info, lambda e: e), _ratio(info, lambda e: e.get("queued", {}))
        spread = _spread(timed)
        rows.append({"template": name, "note": note, "ratio": ratio, "ratio_queued": queued, "spread": spread,
                     "bar": BAR, **info, **({AGAIN: timed[AGAIN]} if AGAIN in timed else {})})
        cells = "  ".join(f"{k} {v['tflops']:.0f} TFLOP/s ({_text(v['problem'])})" if "tflops" in v
                          else f"{k} ERR {v.get('error', '')[:80]}" for k, v in info.items())
        verdict = "" if ratio is None or queued is None else \
            f"ratio {ratio:.3f} {'ok' if ratio >= BAR else 'BELOW BAR'} (queued {queued:.3f}; twin again " \
            f"{'-' if spread is None else f'{spread:+.1%}'})"
        print(f"{name:<22} {note:<24} {cells}  {verdict}", flush=True)
        torch.cuda.empty_cache()
        with open(os.path.join(out_dir, "ragged.json"), "w") as f:
            json.dump({"header": head, "rows": rows}, f, indent=1, default=str)
    print(f"\nragged TFLOP/s over the nearest tile multiple's (bar {BAR}; CUDA graphs settled, then queued); "
          f"total {time.time() - t_start:.0f} s")
    for r in rows:
        ratio = " ".join(f"{x:.3f}" if x is not None else "ERR" for x in (r["ratio"], r.get("ratio_queued")))
        ratio += f" (twin again {r['spread']:+.1%})" if r.get("spread") is not None else ""
        print(f"  {r['template']:<22} {r['note']:<24} {ratio}  ragged {r['ragged'].get('tile')} {r['ragged']['plan']}")


def _timing(t, flops: float) -> dict:
    return {"ms": t.ms, "p20_ms": t.p20, "p80_ms": t.p80, "tflops": flops / t.ms / 1e9}


def _spread(timed: dict) -> float | None:
    """The twin's time again (its kernel on input sets of its own) over its first, less one, settled: how far
    apart the timing puts identical kernels in this pair's rounds (None where either has no time)."""
    got = [timed.get(k, {}).get("ms") for k in (AGAIN, TWIN)]
    return got[0] / got[1] - 1.0 if all(got) else None


def _ratio(info: dict, timing) -> float | None:
    """The ragged shape's TFLOP/s over its twin's, as ``timing(entry)`` holds them (None where one is missing)."""
    got = [timing(info[k]).get("tflops") for k in ("ragged", TWIN)]
    return got[0] / got[1] if all(got) else None


def _text(problem: dict) -> str:
    keys = ("M", "N", "K", "seq_len", "seq_len_k", "max_seqlen_q", "max_seqlen_k", "seqlen")
    return " ".join(f"{k}={problem[k]}" for k in keys if problem.get(k))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"], sys.argv[2:])
