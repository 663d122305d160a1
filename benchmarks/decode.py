"""The ``decode`` suite: decoding attention over a KV cache, pt-tvm against the kernels a server would call.

Grid: batch 1 to 128, KV lengths 1k to 128k (at most ``_MAX_TOKENS`` cached tokens per config, so that two
input sets and the reference fit one 80 GB GPU), GQA 32/8 (LLaMA-3-8B) and 64/8 (LLaMA-3-70B), head dim 128,
bfloat16, ``q_len`` 1 and 4 (speculative decoding), every sequence full, contiguous and paged (page size 16,
vLLM's default) caches. pt-tvm runs the kernels its op runs: ``dynamic`` sizes (the batch and the cache's sizes
kernel arguments, the plan priced at the config's), so configs whose plans agree share one compiled kernel
(measured as fast as the kernels of exact sizes: ``benchmarks/results/2026-11-29-h200-x2-decode-dynamic``).
Peers (:mod:`benchmarks.decode_peers`): PyTorch SDPA (cuDNN and FlashAttention-2
backends) on the contiguous cache, called as a user would for decoding; flash-attn-4's ``flash_attn_varlen_func``
with ``seqused_k`` (and its page table, its own split heuristic); FlashInfer's decode / prefill wrappers on the
paged cache.

FlashInfer (0.7.2.post1 on PyPI) is a JIT package: a 62 MB wheel of CUDA sources that nvcc and ninja compile
on first use, whose ``import`` pulls in cuda-python, cuda-tile, nccl4py, the cuDNN frontend and NVML bindings;
``benchmarks/fetch_flashinfer.sh`` packs it with those for the GPU machine (in parts: one transfer carries at
most 64 MB). Where it does not import, its rows carry the error.

Beside TFLOP/s, every row gets the KV bandwidth it achieved (``kv_tbps``: cache bytes read per second) and,
when the run measured it, its fraction of the GPU's copy bandwidth (``hbm_fraction``). ``python -m
benchmarks.decode`` runs a slice of the suite on the local GPU with the device-to-device copy measured in the
same process, compares the cost model's split choice with the measured best split, and writes the JSON and a
chart of bandwidth against kv_len.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Mapping, Sequence

import torch

from pt_tvm import hw, templates
from pt_tvm.compiler import planned_func, schedule_template
from pt_tvm.measure import REL_TOL, input_sets, rel_err, time_interleaved
from pt_tvm.plan import Style
from pt_tvm.templates.decode_attention import kv_bytes
from pt_tvm.tune import compile_jobs, warm

from .report import config_key, save_chart
from .runfile import load_run
from .suite import SETTLE_MS, Config, header, run_configs, write_run

__all__ = ["configs", "PEERS", "hbm_copy_tbps", "with_bandwidth", "split_sweep", "select", "main"]

_BATCHES = (1, 8, 32, 128)
_KV_LENS = (1024, 4096, 16384, 65536, 131072)
_GQA = ((32, 8, "llama3-8b"), (64, 8, "llama3-70b"))
_Q_LENS = (1, 4)
_PAGE = 16
_MAX_TOKENS = 1 << 21  # 2M cached tokens: 8 GiB of bf16 K and V at 8 KV heads x 128
PEERS = ("pt-tvm", "pt-tvm-model", "cudnn-sdpa", "fa2-sdpa", "fa3", "flashinfer")
_CONTIGUOUS_ONLY = ("cudnn-sdpa", "fa2-sdpa")


def _config(batch: int, kv_len: int, heads: int, kv_heads: int, model: str, q_len: int, page: int) -> Config:
    problem = dict(batch=batch, q_len=q_len, heads=heads, kv_heads=kv_heads, kv_len=kv_len, dim=128,
                   dtype="bfloat16", page_size=page, dynamic=True)
    systems = tuple(s for s in PEERS if not (page and s in _CONTIGUOUS_ONLY))
    return Config("decode", "decode_attention", problem, systems,
                  f"{model} q{q_len} {'paged' if page else 'contiguous'}")


def configs() -> list[Config]:
    """The full decode grid (batch x kv_len x GQA x q_len x layout, within the token budget)."""
    return [_config(b, n, h, kv, model, q, page)
            for h, kv, model in _GQA for q in _Q_LENS for page in (0, _PAGE) for b in _BATCHES for n in _KV_LENS
            if b * n <= _MAX_TOKENS]


# ---------------------------------------------------------------- bandwidth
def hbm_copy_tbps(gib: float = 2.0) -> float:
    """The GPU's device-to-device copy bandwidth in TB/s (bytes read plus written per second), median of many."""
    n = int(gib * (1 << 30)) // 4
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)
    t = time_interleaved({"copy": lambda s, d: d.copy_(s)}, [(src, dst)], rounds=3, warmup_ms=100.0,
                         round_ms=200.0)["copy"]
    del src, dst
    torch.cuda.empty_cache()
    return 2 * n * 4 / (t.ms * 1e-3) / 1e12


def with_bandwidth(rows: Sequence[dict], peak_tbps: float | None = None) -> list[dict]:
    """Rows with ``kv_tbps`` (KV-cache bytes read per second) and, given the copy peak, ``hbm_fraction``."""
    out = []
    for row in rows:
        row = dict(row)
        if row.get("kernel") == "decode_attention" and row.get("ms"):
            row["kv_tbps"] = kv_bytes(row["config"]) / (row["ms"] * 1e-3) / 1e12
            if peak_tbps:
                row["hbm_fraction"] = row["kv_tbps"] / peak_tbps
        out.append(row)
    return out


# ---------------------------------------------------------------- the model's split against the measured best
def split_sweep(problem: Mapping[str, Any], vdev: Any, *, workers: int, rep_ms: float = 200.0) -> dict:
    """For each split count and combine form: the best-predicted plan with them (a warp-specialized one for the
    combine kernel, a software pipeline for the fused combine, the only style that takes it; the fused form is
    searched pinned, outside the default tile space), compiled (in ``workers`` processes), checked and timed;
    the model's pick and the measured best side by side, as ``(splits, combine)``."""
    template = templates.get("decode_attention")
    result, problem, _ = schedule_template("decode_attention", vdev, params=problem)
    pinned, _, _ = schedule_template("decode_attention", vdev, params={**problem, "fused_combine": 1})
    per_choice: dict[tuple[int, str], Any] = {}
    for c in sorted(result.ranked + pinned.ranked, key=lambda c: c.seconds):
        is_fused = c.plan.tile.get("fused_combine", 0)
        if is_fused or c.plan.style == Style.WARP_SPECIALIZED:
            per_choice.setdefault((c.plan.tile["num_splits"], "fused" if is_fused else "kernel"), c)
    choices = sorted(per_choice.items())
    warm(compile_jobs("decode_attention", problem, vdev, [c for _, c in choices]), workers)
    make = lambda seed: template.make_inputs(problem, "cuda", torch.Generator(device="cuda").manual_seed(seed))  # noqa: E731
    sets = input_sets(make, sum(t.numel() * t.element_size() for t in make(0)), vdev.l2_bytes, max_sets=4)
    check = make(99)
    ref = template.reference(*check, **problem)
    kernels, rows = {}, []
    for (splits, combine), c in choices:
        row = {"num_splits": splits, "combine": combine, "block_N": c.plan.tile["block_N"],
               "predicted_ms": c.seconds * 1e3, "note": c.note}
        try:
            kernel = template.compile(planned_func("decode_attention", problem, c, vdev), vdev.tvm_target())
            row["rel_err"] = rel_err(kernel(*check), ref)
            if row["rel_err"] <= REL_TOL[problem["dtype"]]:
                kernels[f"{splits} {combine}"] = kernel
        except Exception as e:  # a plan that does not build is a row, not a crash
            row["error"] = f"{type(e).__name__}: {str(e).strip()[-300:]}"
        rows.append(row)
    times = time_interleaved(kernels, sets, rounds=3, warmup_ms=30.0, round_ms=rep_ms / 3)
    for row in rows:
        label = f"{row['num_splits']} {row['combine']}"
        if label in times:
            row["ms"] = times[label].ms
    timed = [r for r in rows if "ms" in r]
    del sets, check, ref
    torch.cuda.empty_cache()
    best = result.best.plan.tile
    fastest = min(timed, key=lambda r: r["ms"]) if timed else None
    return {"config": dict(problem),
            "model": [best["num_splits"], "fused" if best.get("fused_combine") else "kernel"],
            "model_ws_splits": min((k[0] for k in per_choice if k[1] == "kernel"),
                                   key=lambda s: per_choice[(s, "kernel")].seconds, default=None),
            "measured_best": [fastest["num_splits"], fastest["combine"]] if fastest else None,
            "splits": rows}


# ---------------------------------------------------------------- the GPU run
_GPU_SLICE = [  # (batch, kv_len, GQA, q_len, page): every batch size, 1k..128k, both layouts and models, q_len 1, 4
    (1, 131072, 0, 1, 0), (1, 16384, 0, 1, _PAGE), (1, 1024, 1, 1, 0), (8, 65536, 1, 1, _PAGE),
    (8, 4096, 0, 4, 0), (32, 16384, 1, 4, _PAGE), (128, 4096, 0, 1, _PAGE), (128, 16384, 0, 1, 0),
]
_SWEEP = [(1, 65536, 0, 1, 0), (1, 16384, 0, 1, _PAGE), (32, 16384, 0, 1, 0), (128, 4096, 0, 1, 0)]


def _slice(entries: Sequence[tuple]) -> list[Config]:
    return [_config(b, n, *_GQA[g], q, page) for b, n, g, q, page in entries]


def chart(rows: Sequence[dict], peak: float | None, path: str) -> None:
    """Achieved KV bandwidth against kv_len, a panel per batch size (columns) and per q_len and query heads
    (rows: a line joins configs that differ in kv_len alone), a line per system (one colour throughout) and layout
    (paged dashed); the copy peak and 85% of it in black."""
    import matplotlib  # optional: only the chart needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after use("Agg"): no display on the GPU machine

    timed = [r for r in rows if r.get("kv_tbps") and r.get("valid")]
    batches = sorted({r["config"]["batch"] for r in timed})
    groups = sorted({(r["config"]["q_len"], r["config"]["heads"]) for r in timed})
    color = {system: f"C{i}" for i, system in enumerate(sorted({r["system"] for r in timed}))}  # one in every panel
    fig, axes = plt.subplots(max(1, len(groups)), max(1, len(batches)), figsize=(4.2 * max(1, len(batches)),
                             3.2 * max(1, len(groups))), squeeze=False)
    for (q_len, heads), panels in zip(groups, axes):
        for ax, b in zip(panels, batches):
            mine = [r for r in timed if r["config"]["batch"] == b and r["config"]["q_len"] == q_len
                    and r["config"]["heads"] == heads]
            for system, paged in sorted({(r["system"], bool(r["config"].get("page_size"))) for r in mine}):
                pts = sorted((r["config"]["kv_len"], r["kv_tbps"]) for r in mine
                             if r["system"] == system and bool(r["config"].get("page_size")) == paged)
                ax.plot(*zip(*pts), marker="o", ls="--" if paged else "-", c=color[system],
                        label=system + (" paged" if paged else ""))
            if peak:
                ax.axhline(peak, ls="--", c="k", lw=1, label="copy peak")
                ax.axhline(0.85 * peak, ls=":", c="k", lw=1, label="85% of it")
            ax.set_xscale("log", base=2)
            ax.set_title(f"batch {b}, q_len {q_len}, {heads} query heads", fontsize=9)
            ax.set_xlabel("kv_len")
            ax.set_ylabel("KV TB/s")
    panels = [ax for row in axes for ax in row]
    labelled = {}  # every panel's lines, once each: a panel may lack a system or layout
    for ax in panels:
        for line, label in zip(*ax.get_legend_handles_labels()):
            labelled.setdefault(label, line)
    panels[-1].legend(labelled.values(), labelled.keys(), fontsize=7)
    fig.tight_layout()
    save_chart(fig, path)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    """Measure the GPU slice (or ``--all``) with peers, the copy peak and the split sweep; write JSON and chart."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.decode", description=main.__doc__)
    ap.add_argument("--out", default="decode-run", help="folder for decode.json, splits.json and the chart")
    ap.add_argument("--all", action="store_true", help="the whole decode grid, not the GPU slice")
    ap.add_argument("--kv-at-least", type=int, default=0, metavar="N",
                    help="only the configs of kv_len >= N (the bandwidth bar's: 16384)")
    ap.add_argument("--q-lens", help="comma-separated q_len values to keep (default: all)")
    ap.add_argument("--systems", help="comma-separated subset of " + ",".join(PEERS))
    ap.add_argument("--tune-top-k", type=int, default=2)
    ap.add_argument("--rep-ms", type=float, default=300.0)
    ap.add_argument("--settle-ms", type=float, default=SETTLE_MS, help="untimed calls before each timing round")
    ap.add_argument("--only", choices=("suite", "sweep"), help="the suite slice alone, or the split sweep alone")
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--part", help="I/N: the suite's configs I, I+N, I+2N, ... (0-based), so one slice fits several "
                                   "device calls (merge the parts' decode.json with python -m benchmarks merge); "
                                   "I,J,.../N: the union of those parts")
    ap.add_argument("--skip", action="append", default=[], metavar="RUN.json",
                    help="leave out the configs a run (e.g. a part cut off by its call's time) already measured")
    ap.add_argument("--share", metavar="I/N", help="after --part and --skip, configs I, I+N, ... of what is left "
                                                  "(one GPU's share where N processes split a queue)")
    ap.add_argument("--stop-after", type=float, metavar="S",
                    help="start no config after S seconds (the rows so far are written after each config)")
    ap.add_argument("--chart", metavar="RUN.json", help="only draw bandwidth.png from a (merged) decode run")
    args = ap.parse_args(argv)
    if args.chart:
        run = load_run(args.chart)
        os.makedirs(args.out, exist_ok=True)
        chart(run["rows"], run["header"].get("hbm_copy_tbps"), os.path.join(args.out, "bandwidth.png"))
        return 0
    os.makedirs(args.out, exist_ok=True)
    vdev = hw.from_device()
    workers = args.workers or max(1, (os.cpu_count() or 2) - 1)
    t0 = time.perf_counter()
    peak = hbm_copy_tbps()
    print(f"device-to-device copy: {peak:.2f} TB/s", flush=True)
    if args.only != "sweep":
        _suite(args, vdev, peak, workers, argv)
    if args.only != "suite":
        _sweep(args, vdev, peak, workers)
    print(f"done in {time.perf_counter() - t0:.0f} s", flush=True)
    return 0


def _suite(args: argparse.Namespace, vdev: Any, peak: float, workers: int, argv: Sequence[str] | None) -> None:
    """The suite (slice) with its peers: decode.json and bandwidth.png."""
    t0 = time.perf_counter()
    chosen = configs() if args.all else _slice(_GPU_SLICE)
    q_lens = {int(q) for q in args.q_lens.split(",")} if args.q_lens else None
    chosen = [c for c in chosen if c.problem["kv_len"] >= args.kv_at_least
              and (q_lens is None or c.problem["q_len"] in q_lens)]
    chosen = select(chosen, part=args.part, skip=args.skip, share=args.share)
    if args.systems:
        keep = set(args.systems.split(","))
        chosen = [Config(c.suite, c.kernel, c.problem, tuple(s for s in c.systems if s in keep), c.note)
                  for c in chosen]
    head = header(" ".join(["python -m benchmarks.decode", *(argv or sys.argv[1:])]), torch.cuda.get_device_name())
    head.update(hbm_copy_tbps=peak, settle_ms=args.settle_ms)
    path = os.path.join(args.out, "decode.json")
    deadline = None if args.stop_after is None else t0 + args.stop_after
    rows = run_configs(chosen, vdev, rep_ms=args.rep_ms, settle_ms=args.settle_ms, workers=workers,
                       system_options={"tune_top_k": args.tune_top_k}, deadline=deadline,
                       on_config=lambda r: write_run(path, head, with_bandwidth(r, peak)))
    rows = with_bandwidth(rows, peak)
    head["suite_s"] = head["wall_s"] = round(time.perf_counter() - t0, 1)
    measured = len({config_key(r) for r in rows})
    head.update(configs=measured, **({"partial": True} if measured < len(chosen) else {}))  # --stop-after cut it
    write_run(path, head, rows)
    chart(rows, peak, os.path.join(args.out, "bandwidth.png"))


def select(chosen: Sequence[Config], *, part: str | None = None, skip: Sequence[str] = (),
           share: str | None = None) -> list[Config]:
    """The configs of ``part`` (``I/N`` or ``I,J/N``: those at positions I, J modulo N), less those a run in
    ``skip`` measured, then ``share`` (``I/N``: every N-th of the rest from I)."""
    chosen = list(chosen)
    if part:
        parts, n = _parts(part)
        chosen = [c for j, c in enumerate(chosen) if j % n in parts]
    done = {config_key(row) for path in skip for row in load_run(path, need_rows=False)["rows"]}
    chosen = [c for c in chosen if _key(c) not in done]
    if share:
        i, n = _part(share)
        chosen = chosen[i::n]
    return chosen


def _key(c: Config) -> str:
    """A config's identity as its rows record it (:func:`benchmarks.report.config_key` of the resolved problem)."""
    problem, _ = templates.get(c.kernel).resolve(**c.problem)
    return config_key({"kernel": c.kernel, "config": dict(problem), "note": c.note})


def _parts(text: str) -> tuple[set[int], int]:
    """``"I,J/N"`` -> ({I, J}, N), each 0 <= I < N."""
    try:
        first, n = text.split("/")
        parts, n = {int(x) for x in first.split(",")}, int(n)
    except ValueError:
        raise SystemExit(f"expected I/N or I,J/N (e.g. 0/3), got {text!r}") from None
    if not all(0 <= i < n for i in parts):
        raise SystemExit(f"I must be in [0, N), got {text!r}")
    return parts, n


def _part(text: str) -> tuple[int, int]:
    """``"I/N"`` -> (I, N), 0 <= I < N."""
    parts, n = _parts(text)
    if len(parts) != 1:
        raise SystemExit(f"expected one I in I/N, got {text!r}")
    return next(iter(parts)), n


def _sweep(args: argparse.Namespace, vdev: Any, peak: float, workers: int) -> None:
    """The cost model's split and combine form against the measured best: splits.json."""
    sweeps = []
    for cfg in _slice(_SWEEP):
        sweeps.append(split_sweep(cfg.problem, vdev, workers=workers))
        s = sweeps[-1]
        print(f"splits {cfg.note} b{cfg.problem['batch']} kv{cfg.problem['kv_len']}: model {s['model']} "
              f"(warp-specialized {s['model_ws_splits']}), measured best {s['measured_best']}", flush=True)
        with open(os.path.join(args.out, "splits.json"), "w") as f:
            json.dump({"hbm_copy_tbps": peak, "sweeps": sweeps}, f, indent=1, default=str)


if __name__ == "__main__":
    sys.exit(main())
