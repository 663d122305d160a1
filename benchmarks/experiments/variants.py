"""One GPU experiment shape shared by the plan experiments: per config, named variants (candidates) of one
search, each checked on every output against the float32 reference on fresh random inputs (NaN-prefilled),
then timed with a peer (cuBLAS unless named) in alternating rounds, inputs rotated past the L2. Prints a
table, writes JSON after every config (a run cut off by its time limit keeps what it finished)."""
import concurrent.futures
import json
import multiprocessing
import os
import time
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import torch

from benchmarks.suite import header
from benchmarks.systems import build_system
from pt_tvm import hw, ops, templates
from pt_tvm.compiler import planned_func, schedule_template
from pt_tvm.cost import estimate
from pt_tvm.measure import (
    QUEUED,
    REL_TOL,
    as_outputs,
    capture,
    check_call,
    input_sets,
    kernel_outputs,
    time_interleaved,
    time_replayed,
)
from pt_tvm.ops import kernels
from pt_tvm.plan import ExecutionPlan
from pt_tvm.search import Candidate, SearchResult, SearchSpace
from pt_tvm.tune import compile_jobs, warm

__all__ = ["describe", "priced", "compare", "compare_gemms", "bucket_line", "save_rows", "bucket_stores", "through",
           "store_kernels", "compare_buckets", "check_and_time", "best_pinned", "pinned_kernel", "graphed_if_right"]

Picks = Callable[[SearchResult, hw.VDevice], Mapping[str, Candidate | None]]


def bucket_line(label: str, info: Mapping[str, Mapping[str, float]], peer: str) -> str:
    """One config of a bucket experiment: the peer's time, the exact shape's and the bucket's kernel over it, and
    the bucket's time over the exact one's."""
    ms = {name: info[name]["ms"] for name in (peer, "exact", "bucket")}
    return (f"{label} {peer} {ms[peer]:.4f} ms  exact {ms['exact']:.4f} ({ms[peer] / ms['exact']:.2f}x)  bucket "
            f"{ms['bucket']:.4f} ({ms[peer] / ms['bucket']:.2f}x)  bucket/exact time {ms['bucket'] / ms['exact']:.3f}")


def before(items: Iterable, deadline_s: float, t_start: float, label: Callable[[Any], str] = str) -> Iterator:
    """``items`` while the run is within ``deadline_s`` of ``t_start``; each one after, its ``label`` printed as not
    timed (a device call's time limit keeps what finished)."""
    for item in items:
        if time.time() - t_start > deadline_s:
            print(f"{label(item)}: not timed, past {deadline_s} s", flush=True)
            continue
        yield item


def save_rows(out_dir: str, experiment: str, rows: Sequence[dict]) -> None:
    """``rows`` as ``<out_dir>/<experiment>.json`` under the run's header (its command
    ``python -m benchmarks.experiments.<experiment> $OUT``); written after every config."""
    with open(os.path.join(out_dir, f"{experiment}.json"), "w") as f:
        json.dump({"header": header(f"python -m benchmarks.experiments.{experiment} $OUT",
                                    torch.cuda.get_device_name()), "rows": rows}, f, indent=1, default=str)


def bucket_stores(out_dir: str) -> dict[str, kernels.KernelStore]:
    """Two kernel stores with their plans under ``out_dir/plans``: ``exact`` (a kernel per shape) and ``bucket``
    (``dynamic_tokens``: a kernel per bucket of token counts)."""
    return {name: kernels.KernelStore(ops.Config(cache_dir=os.path.join(out_dir, "plans"), dynamic_tokens=dyn))
            for name, dyn in (("exact", False), ("bucket", True))}


def through(store: kernels.KernelStore, op: Callable) -> Callable:
    """``op`` run with ``store``'s kernels."""
    def call(*args):
        with kernels.using(store):
            return op(*args)
    return call


def store_kernels(stores: Mapping[str, kernels.KernelStore]) -> dict[str, list]:
    """Each store's compiled kernels as ``[template, problem]`` pairs (what a bucket experiment's row records)."""
    return {n: [[name, dict(problem)] for name, problem, _ in s._kernels] for n, s in stores.items()}


def compare_buckets(label: str, fns: Mapping[str, Callable], peer: str, make: Callable[[int], tuple],
                    reference: Callable[..., torch.Tensor], set_bytes: int, flops: float, dtype: str) -> dict:
    """Check every system of one config against ``reference`` (float32) on fresh inputs, then time them from CUDA
    graphs in alternating rounds, inputs rotated past the L2; prints :func:`bucket_line`, returns the systems'
    figures."""
    t0 = time.time()
    check = make(1_000)
    ref = reference(*check)
    info = {}
    for name, fn in fns.items():
        (chk,) = check_call(fn, check, (ref,))
        info[name] = {"rel_err": chk.rel_err, "prefill": chk.prefill}
        assert chk.rel_err < REL_TOL[dtype] and chk.prefill == "nan", (label, name, chk)
    del check, ref
    print(f"{label}: built and checked in {time.time() - t0:.0f} s", flush=True)
    sets = input_sets(make, set_bytes, hw.from_device().l2_bytes, max_sets=8)
    way, timings = time_replayed(fns, sets, rounds=5, round_ms=150.0, settle_ms=300.0)
    for name, t in timings.items():
        info[name].update(ms=t.ms, p20_ms=t.p20, p80_ms=t.p80, tflops=flops / t.ms / 1e9, timing=way)
    print(bucket_line(label, info, peer) + f"  [{way}]", flush=True)
    return info


def check_and_time(fns: Mapping[str, Callable], tmpl, shape: Mapping, vdev: hw.VDevice, rounds: int) -> dict:
    """Every system of one config checked on its output against the float32 reference on fresh inputs
    (NaN-prefilled; a wrong one stops the run), then timed in ``rounds`` alternating rounds, inputs rotated past
    the L2; {system: its figures}."""
    make = lambda seed: tmpl.make_inputs(shape, "cuda", torch.Generator("cuda").manual_seed(seed))  # noqa: E731
    check = make(1_000)
    refs = as_outputs(tmpl.reference(*check, **shape))
    info = {}
    for name, fn in fns.items():
        (chk,) = check_call(fn, check, refs)
        info[name] = {"rel_err": chk.rel_err, "prefill": chk.prefill}
        assert chk.rel_err < REL_TOL[shape["dtype"]] and chk.prefill == "nan", (name, chk)
    del refs, check
    sets = input_sets(make, sum(t.numel() * t.element_size() for t in make(0)), vdev.l2_bytes, max_sets=4)
    for name, t in time_interleaved(fns, sets, rounds=rounds, round_ms=150.0).items():
        info[name].update(ms=t.ms, p20_ms=t.p20, p80_ms=t.p80, tflops=tmpl.flops(shape) / t.ms / 1e9)
    return info


def _search_pinned(job: tuple) -> tuple:
    """(the search's best candidate, problem) of one (template, params) job, or (None, error text)."""
    name, params, vdev = job
    try:
        result, problem, _ = schedule_template(name, vdev, params=params)
    except Exception as ex:  # a shape with no valid plan at a pinned value: reported in its row
        return None, f"{type(ex).__name__}: {ex}"[:300]
    return result.best, problem


def best_pinned(name: str, params: Sequence[Mapping[str, Any]], vdev: hw.VDevice) -> list[tuple]:
    """The search's best plan for each of ``params`` (tile parameters among them pinned), searched and then
    compiled in worker processes: ``(candidate, problem)`` each, or ``(None, error text)``."""
    workers = max(1, (os.cpu_count() or 2) - 1)
    jobs = [(name, dict(p), vdev) for p in params]
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        picks = list(pool.map(_search_pinned, jobs))
    warm([j for best, problem in picks if best is not None for j in compile_jobs(name, problem, vdev, [best])],
         workers=workers)
    return picks


def pinned_kernel(name: str, best: Candidate, problem: Mapping[str, Any], vdev: hw.VDevice) -> Callable:
    """The compiled kernel of ``best`` (from TileLang's cache after :func:`best_pinned`), called as the template's
    outputs."""
    tmpl = templates.get(name)
    return kernel_outputs(tmpl, tmpl.compile(planned_func(name, problem, best, vdev), vdev.tvm_target()))


def graphed_if_right(tmpl, fn: Callable, problem: Mapping[str, Any], vdev: hw.VDevice, entry: dict):
    """``fn`` checked on fresh inputs (NaN-prefilled) against the float32 reference, its relative error (or why it
    failed) written into ``entry``; a CUDA-graph sampler of it over input sets rotated past the L2 where it is
    right, else None."""
    def make(seed):
        return tmpl.make_inputs(problem, "cuda", torch.Generator("cuda").manual_seed(seed))
    try:
        check = make(1_000)
        checks = check_call(fn, check, as_outputs(tmpl.reference(*check, **problem)))
        entry["rel_err"] = max(c.rel_err for c in checks)
        if entry["rel_err"] < REL_TOL[problem["dtype"]] and all(c.prefill != "unverified" for c in checks):
            nbytes = sum(t.numel() * t.element_size() for t in check)
            return capture(fn, input_sets(make, nbytes, vdev.l2_bytes, max_sets=4))
        entry["error"] = f"wrong result: rel err {entry['rel_err']:.2e}"
    except Exception as ex:  # a peer that does not take the shape: reported in its row
        entry["error"] = f"{type(ex).__name__}: {ex}"[:300]
    return None


def describe(c: Candidate) -> str:
    t = c.plan.tile
    rest = "".join(f", {k}={v}" for k, v in t.items() if k not in ("block_M", "block_N", "block_K"))
    dims = "x".join(str(t[k]) for k in ("block_M", "block_N", "block_K") if k in t)
    return (f"{dims}{rest}, {c.plan.tile_order.describe()}"
            + (", persistent" if c.plan.persistent else "") + (", stream-K" if c.plan.stream_k else "")
            + (", rows split" if c.plan.row_split else "") + (", gemms carried" if c.plan.carry_gemms else ""))


def priced(c: Candidate, plan: ExecutionPlan, vdev: hw.VDevice, label: str) -> Candidate:
    """``plan`` (a variant of ``c``'s) on ``c``'s graph, priced by the current model; its note ``c``'s and ``label``."""
    return Candidate(plan, estimate(plan, c.graph, vdev), c.graph, f"{c.note}, {label}")


def _distinct(picks: Mapping[str, Candidate | None]) -> dict[str, Candidate]:
    """A plan that is two variants is timed once, under its first name."""
    out: dict[str, Candidate] = {}
    for name, c in picks.items():
        if c is not None and all(c.plan != o.plan for o in out.values()):
            out[name] = c
    return out


def compare(configs: Sequence[dict], picks: Picks, names: Sequence[str], out_dir: str, out_name: str,
            command: str, deadline_s: float, space: SearchSpace | Callable[[dict], SearchSpace] = SearchSpace(),
            template: str = "gemm", peer: str = "cublas", also: Sequence[str] = (), settle_ms: float = 0.0,
            rounds: int = 5) -> list:
    """Search each config (``note`` is a label; ``space`` a SearchSpace or one a config), time ``picks(result,
    vdev)`` against ``peer`` (a system of :mod:`benchmarks.systems`), and the peers ``also`` beside them (those
    that build on this machine); the rows. Timed queued, or with ``settle_ms`` from CUDA graphs, each callable
    run that long before its share of a round (the suites' way)."""
    t_start = time.time()
    vdev = hw.from_device()
    tmpl = templates.get(template)
    searched = []
    for cfg in configs:
        problem = {k: v for k, v in cfg.items() if k != "note"}
        result, problem, _ = schedule_template(template, vdev, params=problem,
                                               space=space(cfg) if callable(space) else space)
        searched.append((cfg, problem, result, _distinct(picks(result, vdev))))
    keys = [(i, name) for i, (_, _, _, p) in enumerate(searched) for name in p]
    jobs = [job for _, problem, _, p in searched for job in compile_jobs(template, problem, vdev, p.values())]
    errors = dict(zip(keys, warm(jobs, workers=max(1, (os.cpu_count() or 2) - 1))))
    print(f"searched {len(configs)} configs and compiled {len(jobs)} kernels in {time.time() - t_start:.0f} s",
          flush=True)
    rows = []
    head = header(command, torch.cuda.get_device_name())
    for i, (cfg, problem, result, chosen) in before(enumerate(searched), deadline_s, t_start,
                                                    lambda item: f"{item[1][0]['dtype']} {item[1][0]['note']}"):
        make = lambda seed: tmpl.make_inputs(problem, "cuda", torch.Generator("cuda").manual_seed(seed))  # noqa: E731
        sets = input_sets(make, sum(t.numel() * t.element_size() for t in make(0)), vdev.l2_bytes, max_sets=4)
        check = make(1_000)
        refs = as_outputs(tmpl.reference(*check, **problem))
        fns, info, peer_fns = {}, {}, {}
        for name in (peer, *also):
            try:
                peer_fns[name] = build_system(name, tmpl, problem, vdev)
            except Exception as ex:  # a peer that does not take the config, or is not installed: reported
                info[name] = {"error": f"{type(ex).__name__}: {ex}"[:400]}
        for name, c in [*((n, None) for n in peer_fns), *chosen.items()]:
            entry = {"worker": errors[i, name]} if c is not None else dict(peer_fns[name][1])
            try:
                fn = peer_fns[name][0] if c is None else tmpl.compile(planned_func(template, problem, c, vdev),
                                                                       vdev.tvm_target())
                (chk,) = check_call(fn, check, refs)
                entry.update(rel_err=chk.rel_err, prefill=chk.prefill)
                if c is not None:
                    entry.update(plan=c.plan.to_dict(), kernel=describe(c), predicted_ms=c.seconds * 1e3,
                                 predicted_dram_gb=c.estimate.dram_bytes / 1e9)
                if chk.rel_err < REL_TOL[problem["dtype"]] and chk.prefill == "nan":
                    fns[name] = fn
                else:
                    entry["error"] = f"wrong result: rel err {chk.rel_err:.2e} ({chk.prefill} prefill)"
            except Exception as ex:  # reported in the row
                entry["error"] = f"{type(ex).__name__}: {ex}"[:400]
            info[name] = entry
        del refs
        if settle_ms:
            way, timings = time_replayed(fns, sets, rounds=rounds, round_ms=150.0, settle_ms=settle_ms)
        else:
            way, timings = QUEUED, time_interleaved(fns, sets, rounds=rounds, round_ms=150.0)
        for name, t in timings.items():
            info[name].update(ms=t.ms, p20_ms=t.p20, p80_ms=t.p80, tflops=tmpl.flops(problem) / t.ms / 1e9,
                              timing=way)
        info["model pick"] = {"is": next((n for n, c in chosen.items() if c.plan == result.best.plan),
                                         describe(result.best))}
        rows.append({"config": cfg, "systems": info})
        base = info[peer].get("tflops")
        line = "  ".join(f"{n} {v['tflops']:.0f} ({v['tflops'] / base:.2f}x)" if "tflops" in v and base
                         else f"{n} ERR" for n, v in info.items() if n not in (peer, "model pick"))
        print(f"{cfg['dtype']:>8} {cfg['note']:<16} {peer} {base or 0:.0f}  {line}", flush=True)
        torch.cuda.empty_cache()
        with open(os.path.join(out_dir, out_name), "w") as f:
            json.dump({"header": head, "rows": rows}, f, indent=1, default=str)
    print(f"\nTFLOP/s over {peer}'s; kernels as searched (total {time.time() - t_start:.0f} s)")
    print(f"{'config':<26}{peer:>13}" + "".join(f"{v:>16}" for v in (*also, *names)) + "  model pick")
    for r in rows:
        s, cfg = r["systems"], r["config"]
        base = s[peer].get("tflops")
        cells = [f"{s[v]['tflops']:.0f} ({s[v]['tflops'] / base:.2f}x)" if v in s and "tflops" in s[v] and base
                 else ("ERR" if v in s else "-") for v in (*also, *names)]
        print(f"{cfg['dtype'][:4] + ' ' + cfg['note']:<26}{base or 0:>13.0f}" + "".join(f"{c:>16}" for c in cells)
              + f"  {s['model pick']['is']}")
    for r in rows:
        for v in names:
            if v in r["systems"]:
                e = r["systems"][v]
                print(f"  {r['config']['dtype'][:4]} {r['config']['note']:<16} {v:<13} {e.get('kernel', '')}: "
                      f"predicted {e.get('predicted_ms', 0):.3f} ms, measured {e.get('ms', float('nan')):.3f} ms"
                      + (f"  {e['error']}" if "error" in e else ""))
    return rows


def compare_gemms(experiment: str, configs: Sequence[dict], swiglu: Sequence[dict], picks: Picks,
                  names: Sequence[str], out_dir: str, deadline_s: float, space: SearchSpace) -> None:
    """:func:`compare` over the fused SwiGLU configs (in half the time), then the GEMM configs: what
    ``python -m benchmarks.experiments.EXPERIMENT $OUT`` writes, ``EXPERIMENT-swiglu.json`` and ``EXPERIMENT.json``."""
    command = f"python -m benchmarks.experiments.{experiment} $OUT"
    compare(swiglu, picks, names, out_dir, f"{experiment}-swiglu.json", command, deadline_s / 2, space=space,
            template="gemm_swiglu")
    compare(configs, picks, names, out_dir, f"{experiment}.json", command, deadline_s, space=space)
