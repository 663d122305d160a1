"""GPU experiment (issue 15 item 3): FlashAttention's tile shapes beyond 128 x 128, as FlashAttention 3 picks
them on Hopper (head dim 64: 192 query rows over three consumer warpgroups; head dim 128: 176 keys a block
non-causal; head dim 256: 80 keys), against the shapes pt-tvm's search had (64 and 128 rows and keys) and
cuDNN SDPA, in one process on one GPU.

Per config, each variant is the search's best plan for a pinned tile (and, where named, pinned consumer
warpgroups or pipeline depth), checked on every output against the float32 reference on fresh random inputs
(NaN-prefilled), then every variant and cuDNN timed in alternating rounds with inputs rotated past the L2.

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.attention_tiles $OUT``.
Prints a table, writes ``attention_tiles.json`` after every config.
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
from benchmarks.systems import build_system
from pt_tvm import hw, templates
from pt_tvm.compiler import planned_func, schedule_template
from pt_tvm.measure import REL_TOL, Queued, as_outputs, check_call, input_sets, kernel_outputs, time_samplers
from pt_tvm.search import SearchSpace
from pt_tvm.tune import compile_jobs, warm

TOKENS = 16384  # batch x seq_len, as the attention suites


def _cfg(dim: int, seq_len: int, causal: bool) -> dict:
    heads = 2048 // dim
    return {"batch": TOKENS // seq_len, "heads": heads, "kv_heads": heads, "seq_len": seq_len, "dim": dim,
            "causal": causal, "dtype": "float16"}


def _tile(m: int, n: int) -> dict:
    return {"block_M": m, "block_N": n, "threads": 128, "pack_gqa": 0}


# (config, {variant: (tile, SearchSpace)}); the first variant is the shape the search had before
WS = lambda wgs: SearchSpace(consumer_wgs=(wgs,))  # noqa: E731
CONFIGS = [
    (_cfg(64, 4096, False), {"128x128": (_tile(128, 128), SearchSpace()), "192x128": (_tile(192, 128), WS(3)),
                             "128x192": (_tile(128, 192), WS(2))}),
    (_cfg(64, 16384, False), {"128x128": (_tile(128, 128), SearchSpace()), "192x128": (_tile(192, 128), WS(3)),
                              "128x192": (_tile(128, 192), WS(2))}),
    (_cfg(64, 4096, True), {"128x128": (_tile(128, 128), SearchSpace()), "64x64": (_tile(64, 64), SearchSpace()),
                            "192x128": (_tile(192, 128), WS(3))}),
    (_cfg(64, 16384, True), {"128x128": (_tile(128, 128), SearchSpace()), "192x128": (_tile(192, 128), WS(3))}),
    (_cfg(128, 4096, False), {"128x128": (_tile(128, 128), SearchSpace()), "128x176": (_tile(128, 176), WS(2)),
                              "128x192": (_tile(128, 192), WS(2))}),
    (_cfg(128, 16384, False), {"128x128": (_tile(128, 128), SearchSpace()), "128x176": (_tile(128, 176), WS(2))}),
    (_cfg(128, 16384, True), {"128x128": (_tile(128, 128), SearchSpace()), "128x176": (_tile(128, 176), WS(2))}),
    (_cfg(256, 4096, False), {"128x64": (_tile(128, 64), SearchSpace()), "128x80": (_tile(128, 80), WS(2)),
                              "128x96": (_tile(128, 96), WS(2))}),
    (_cfg(256, 4096, True), {"128x64": (_tile(128, 64), SearchSpace()), "128x80": (_tile(128, 80), WS(2))}),
    # issue 14's 1500-token pair: the ragged kernel two and three stages deep, its twin likewise
    ({**_cfg(128, 1500, False), "batch": 8}, {"depth 2": (_tile(128, 128), SearchSpace(depths=(2,))),
                                              "depth 3": (_tile(128, 128), SearchSpace(depths=(3,)))}),
    ({**_cfg(128, 1536, False), "batch": 8}, {"depth 2": (_tile(128, 128), SearchSpace(depths=(2,))),
                                              "depth 3": (_tile(128, 128), SearchSpace(depths=(3,)))}),
]
DEADLINE_S = 480  # no config starts timing after this
ROUNDS = 9


def search_one(job: tuple) -> tuple:
    """(best candidate or error text, problem) of one pinned variant (run in a worker process)."""
    config, tile, space, vdev = job
    try:
        result, problem, _ = schedule_template("flash_attention", vdev, params={**config, **tile}, space=space)
        return result.best, problem
    except Exception as ex:  # reported in the row
        return f"{type(ex).__name__}: {ex}"[:300], None


def main(out_dir: str) -> None:
    t_start = time.time()
    vdev = hw.from_device()
    tmpl = templates.get("flash_attention")
    jobs = [(cfg, tile, space, vdev) for cfg, variants in CONFIGS for tile, space in variants.values()]
    workers = max(1, (os.cpu_count() or 2) - 1)
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        picks = iter(list(pool.map(search_one, jobs)))
    searched = [(cfg, {name: next(picks) for name in variants}) for cfg, variants in CONFIGS]
    compiles = [job for _, found in searched for best, problem in found.values() if problem is not None
                for job in compile_jobs("flash_attention", problem, vdev, [best])]
    warm(compiles, workers=workers)
    print(f"searched {len(jobs)} variants, compiled {len(compiles)} kernels in {time.time() - t_start:.0f} s",
          flush=True)
    rows, head = [], header("python -m benchmarks.experiments.attention_tiles $OUT", torch.cuda.get_device_name())
    for cfg, found in before(searched, DEADLINE_S, t_start, lambda item: str(item[0])):
        problem = next(p for _, p in found.values() if p is not None)
        problem = {k: v for k, v in problem.items() if k not in tmpl.tile}
        make = lambda seed: tmpl.make_inputs(problem, "cuda", torch.Generator("cuda").manual_seed(seed))  # noqa: E731
        check = make(1_000)
        sets = input_sets(make, sum(t.numel() * t.element_size() for t in check), vdev.l2_bytes, max_sets=4)
        refs = as_outputs(tmpl.reference(*check, **problem))
        info, samplers = {}, {}
        cudnn, peer = build_system("cudnn-sdpa", tmpl, problem, vdev)
        for name, (best, p) in [("cudnn-sdpa", (None, problem)), *found.items()]:
            entry = {}
            try:
                if name == "cudnn-sdpa":
                    if cudnn is None:
                        raise RuntimeError(peer.get("error", "not built"))
                    fn = cudnn
                elif p is None:
                    raise RuntimeError(best)
                else:
                    fn = kernel_outputs(tmpl, tmpl.compile(planned_func("flash_attention", p, best, vdev),
                                                           vdev.tvm_target()))
                    entry.update(tile=dict(best.plan.tile), plan=best.note, predicted_ms=best.seconds * 1e3)
                checks = check_call(fn, check, refs)
                entry.update(rel_err=max(c.rel_err for c in checks), prefill=[c.prefill for c in checks])
                if entry["rel_err"] < REL_TOL[problem["dtype"]] and "unverified" not in entry["prefill"]:
                    samplers[name] = Queued(fn, sets)
                else:
                    entry["error"] = f"wrong result: rel err {entry['rel_err']:.2e} ({entry['prefill']})"
            except Exception as ex:  # reported in the row
                entry["error"] = f"{type(ex).__name__}: {ex}"[:400]
            info[name] = entry
        del refs
        for name, t in time_samplers(samplers, rounds=ROUNDS, round_ms=150.0).items():
            info[name].update(ms=t.ms, p20_ms=t.p20, p80_ms=t.p80, tflops=tmpl.flops(problem) / t.ms / 1e9)
        rows.append({"config": problem, "systems": info})
        base = info["cudnn-sdpa"].get("tflops")
        cells = "  ".join(f"{n} {v['tflops']:.0f}" + (f" ({v['tflops'] / base:.2f}x)" if base else "")
                          if "tflops" in v else f"{n} ERR {v.get('error', '')[:60]}" for n, v in info.items())
        print(f"D{problem['dim']} S{problem['seq_len']} {'causal' if problem['causal'] else 'full'}: {cells}",
              flush=True)
        torch.cuda.empty_cache()
        with open(os.path.join(out_dir, "attention_tiles.json"), "w") as f:
            json.dump({"header": head, "rows": rows}, f, indent=1, default=str)
    print(f"\nTFLOP/s (over cuDNN SDPA's), total {time.time() - t_start:.0f} s")
    for r in rows:
        c = r["config"]
        print(f"  D{c['dim']} B{c['batch']} S{c['seq_len']} {'causal' if c['causal'] else 'full'}")
        base = r["systems"]["cudnn-sdpa"].get("tflops")
        for n, v in r["systems"].items():
            what = f"{v['tflops']:.0f}" + (f" ({v['tflops'] / base:.3f}x)" if base else "") if "tflops" in v \
                else "ERR " + v.get("error", "")[:100]
            print(f"    {n:<11} {what:<18} {v.get('plan', '')[:90]}  pred {v.get('predicted_ms', 0):.3f} ms")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
