"""GPU experiment (issue 16): what batch 1, kv 16k, paged decoding's split kernel waits on before its first key block.

The split kernel runs 1.5 us behind a bare read of its bytes at its block count (19.3 against 17.8 us on one H200,
``benchmarks/results/2026-11-29-h200-decode-ceiling``). Its emitted CUDA starts each block with three waits on
memory before any key or value byte is requested: the query rows (a global load into registers, stored to shared
memory, then ``__syncthreads``), then ``cache_seqlens[b]`` and the block table's entry, on which the first key
block's address depends. Every block of the grid starts at once, so the chip reads nothing while they wait.
Variants of the emitted CUDA (a CUDA post-processing hook), each checked against the float32 reference on fresh
inputs and timed from CUDA graphs in alternating rounds beside the kernel as emitted:

- **query after prologue**: the query rows' load and store moved below the software pipeline's prologue (the
  first key and value block's copies), so they are in flight together; the loop's first ``__syncthreads``
  (before its first gemm) orders the store before the gemm reads it.
- **length known**: that, and the split's first page computed from the cache's capacity instead of the
  sequence's length (``cache_seqlens[b]`` then gates the loads, it no longer addresses them): a diagnostic of
  what the length-then-table chain costs, valid only where every sequence fills the cache (as here).

Run from the project root on the GPU machine: ``python -m benchmarks.experiments.decode_prologue $OUT``.
"""
import json
import os
import re
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import torch
from tilelang import env as tl_env
from tilelang.engine import register_cuda_postproc

from benchmarks.experiments.decode_launch import PAGED, TILE
from benchmarks.suite import header
from pt_tvm import hw, templates
from pt_tvm.compiler import schedule_template
from pt_tvm.measure import REL_TOL, capture, input_sets, rel_err, time_samplers
from pt_tvm.plan import Style
from pt_tvm.templates.decode_attention import kv_bytes

_LOOP = re.compile(r"^\s*for \(int k = 0;", re.M)


def query_after_prologue(code: str, target) -> str:
    """``code`` with the query rows' load and store (the kernel's statements up to its last store to ``Q_shared``
    before the first ``__syncthreads``) moved to just before the pipelined loop."""
    if "Q_shared" not in code or not (loop := _LOOP.search(code)):
        return code
    first_sync = code.index("__syncthreads();")
    last_q = code.rindex("Q_shared", 0, first_sync)
    start = code.index("\n", code.index("cudaTriggerProgrammaticLaunchCompletion();")) + 1
    stop = code.index("\n", last_q) + 1
    block = code[start:stop]
    assert block.count("{") == block.count("}") and loop.start() > first_sync, "unexpected kernel shape"
    return code[:start] + code[stop:loop.start()] + block + code[loop.start():]


def length_known(code: str, target) -> str:
    """:func:`query_after_prologue`, with the split's first key block taken from the capacity (16384 keys, 32
    splits of 64-key blocks: 8 blocks a split) and the page clamp left to the loads' range check."""
    code = query_after_prologue(code, target)
    if "Q_shared" not in code:
        return code
    code = code.replace("((((int64_t)cache_seqlens[(int64_t)0]) + (int64_t)2047) >> (int64_t)11)", "(int64_t)8")
    code = code.replace("((cache_seqlens[0] + 2047) >> 11)", "8")
    code = re.sub(r"\(\(\(\(\(int64_t\)cache_seqlens\[\(int64_t\)0\]\) \+ \(int64_t\)15\) >> \(int64_t\)4\) - "
                  r"\(int64_t\)1\)", "(int64_t)1023", code)
    return code.replace("(((cache_seqlens[0] + 15) >> 4) - 1)", "1023")


VARIANTS = {"query after prologue": query_after_prologue, "length known": length_known}


def main(out_dir: str) -> None:
    t0 = time.time()
    vdev = hw.from_device()
    template = templates.get("decode_attention")
    result, problem, build = schedule_template("decode_attention", vdev, params={**PAGED, **TILE})
    pick = next(c for c in result.ranked if c.plan.style == Style.SOFTWARE_PIPELINE and c.plan.num_stages == 2)
    func = build(pick)
    print(f"searched [{time.time() - t0:.0f} s]", flush=True)
    tl_env.disable_cache()  # one PrimFunc compiled per variant: no shared cache entry
    variant = threading.local()  # TileLang's lowering releases the GIL: the variants compile side by side
    posts = {"as emitted": lambda code, target: code, **VARIANTS}
    register_cuda_postproc(lambda code, target: posts[variant.name](code, target), override=True)

    def compile_variant(name):
        variant.name = name
        return name, template.compile(func, vdev.tvm_target())

    with ThreadPoolExecutor(len(posts)) as pool:
        kernels = dict(pool.map(compile_variant, posts))
    register_cuda_postproc(lambda code, target: code, override=True)
    print(f"compiled [{time.time() - t0:.0f} s]", flush=True)
    emitted = kernels["as emitted"].split.get_kernel_source()
    rewritten = {n: kernels[n].split.get_kernel_source() != emitted for n in VARIANTS}
    make = lambda seed: template.make_inputs(problem, "cuda", torch.Generator(device="cuda").manual_seed(seed))  # noqa: E731
    check = make(99)
    ref = template.reference(*check, **problem)
    errors = {n: rel_err(k(*check), ref) for n, k in kernels.items()}
    assert all(e <= REL_TOL[problem["dtype"]] for e in errors.values()), errors
    kv = kv_bytes(problem)
    sets = input_sets(make, int(kv), vdev.l2_bytes, max_sets=4)
    graphs = {}
    for n, k in kernels.items():
        graphs[f"call, {n}"] = capture(k, sets)
        graphs[f"split kernel, {n}"] = capture(k.split, sets)
    times = time_samplers(graphs, rounds=9, round_ms=100.0, settle_ms=200.0)
    rows = [{"system": n, "us": t.ms * 1e3, "p20_us": t.p20 * 1e3, "p80_us": t.p80 * 1e3,
             "kv_tbps": kv / (t.ms * 1e-3) / 1e12} for n, t in times.items()]
    with open(os.path.join(out_dir, "decode_prologue.json"), "w") as f:
        json.dump({"header": header("python -m benchmarks.experiments.decode_prologue $OUT",
                                    torch.cuda.get_device_name()),
                   "problem": problem, "tile": dict(pick.plan.tile), "plan": pick.note, "rel_err": errors,
                   "rewritten": rewritten, "rows": rows}, f, indent=1)
    for r in rows:
        print(f"{r['system']:36} {r['us']:6.2f} us ({r['p20_us']:.2f}-{r['p80_us']:.2f})  {r['kv_tbps']:.2f} TB/s")
    print("rel_err:", {n: f"{e:.1e}" for n, e in errors.items()}, "rewritten:", rewritten,
          f"[{time.time() - t0:.0f} s]")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
