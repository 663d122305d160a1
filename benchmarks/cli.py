"""``python -m benchmarks COMMAND``: run a suite, report it, check it against a baseline, time the search.

  run          measure a suite on the local GPU (or ``--dry-run`` on a CPU) and write its JSON
  list         print a suite's configs without running anything
  report       table.md and PNG bar charts from a run JSON
  merge        one run JSON from the shards of a run (``run --shard I/N`` on N GPUs)
  compare      exit 1 when a run is slower than a baseline beyond a threshold or a row turned invalid
  bench        run, then compare with ``--compare BASELINE.json``
  readme       regenerate README.md's results section and benchmarks/results/README.md from the index
  calibrate    fit the cost model to the pt-tvm plans a run measured
  model-check  how the cost model ranks the pt-tvm plans a run measured (first pick, rank correlation)
  search-time  pt-tvm's search time per template/config on the CPU, beside published figures
  registers    the cost model's registers a thread against ptxas's for a template's best plans (CPU, nvcc)
"""
from __future__ import annotations

import argparse
import datetime
import functools
import math
import os
import shlex
import sys
import tempfile
import time
from typing import Any, Callable, Sequence

import torch

from pt_tvm import hw
from pt_tvm.cli import parse_params
from pt_tvm.errors import PtTvmError

from . import dryrun, layers, modelcheck, registers, roofline
from .calibration import cmd_calibrate
from .compare import compare_files, ratio_moves
from .configs import SUITES, filter_systems, subsample, suite_configs
from .readme import RESULTS, ROOT, load_index, readme_section, results_index, splice
from .remote import run_remote
from .report import config_label, merge_runs, summary_lines, write_report
from .runfile import RunFileError, load_run
from .searchtime import cpu_description, default_configs, format_table, measure_search_times
from .suite import SETTLE_MS, header, run_configs, write_run

__all__ = ["main", "build_parser", "add_run_arguments", "add_compare_options", "cmd_run", "cmd_bench", "UsageError"]

OUT_DIR = os.path.join(ROOT, "out")  # git-ignored
QUICK_MAX_CONFIGS = 8


class UsageError(Exception):
    """Bad options or input: one line on stderr, exit status 2."""

_EXAMPLES = """\
examples:
  python -m benchmarks run --suite smoke
  python -m benchmarks run --suite attention-core --tune-top-k 4
  python -m benchmarks run --suite all --quick --systems pt-tvm,cudnn-sdpa,fa3
  python -m benchmarks run --suite smoke --dry-run --target h100          # CPU only
  python -m benchmarks report benchmarks/results/RUN.json --out-dir report/
  python -m benchmarks compare RUN.json BASELINE.json --threshold 0.05
  python -m benchmarks bench --suite gemm-core --compare BASELINE.json
  python -m benchmarks search-time --target h100
  python -m benchmarks readme --check                                      # README.md's tables current?

exit status: 0 ok; 1 a regression found (compare, bench --compare, readme --check: stale text) or a
pt-tvm row that failed its CPU steps (run --dry-run); 2 a usage or input error (bad option, missing,
truncated or malformed run JSON, unwritable output path), reported in one line before any work.
"""


def _stamp() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``run`` (shared with ``bench`` and ``pt-tvm bench``)."""
    p.add_argument("--suite", default="smoke", help=f"one of {', '.join(SUITES)}, all (default smoke)")
    p.add_argument("--out", help="run JSON to write (default out/SUITE-TARGET-DATE.json, git-ignored)")
    p.add_argument("--systems", help="comma-separated subset of systems (e.g. pt-tvm,cudnn-sdpa,fa3)")
    p.add_argument("--max-configs", type=int, metavar="N",
                   help="measure only N configs spread evenly over the suite")
    p.add_argument("--quick", action="store_true",
                   help=f"subsample the suite to {QUICK_MAX_CONFIGS} configs (unless --max-configs says otherwise)")
    p.add_argument("--tune-top-k", type=int, metavar="K",
                   help="plans pt-tvm measures per config (default 8; 1 = the cost model's choice only)")
    p.add_argument("--target", help="chip model: h100, h200, a100, mi300x or a chip file "
                                    "(default: the local GPU; h100 for a dry run without one)")
    p.add_argument("--dry-run", action="store_true",
                   help="no GPU: resolve configs, run pt-tvm's search and tilelang.lower on the CPU; ms stays null")
    p.add_argument("--workers", type=int, default=0,
                   help="compile processes beside the timed one (default: the cores but one)")
    p.add_argument("--shard", type=_shard, metavar="I/N",
                   help="only the I-th of N interleaved parts of the suite (0-based): run N shards on N GPUs "
                        "at once (CUDA_VISIBLE_DEVICES), then `merge` their JSONs")
    p.add_argument("--rep-ms", type=float, default=1000.0, metavar="MS",
                   help="timing per system and config, split into 5 interleaved rounds (default 1000)")
    p.add_argument("--settle-ms", type=float, default=SETTLE_MS, metavar="MS",
                   help="untimed calls of a system before each of its rounds, so that it is timed at the clock its "
                        f"own load sets on a power-capped GPU (default {SETTLE_MS:g}; 0: none)")
    p.add_argument("--where", type=_where, default={}, metavar="KEY=VALUE,...",
                   help="only the configs whose problem has these values (e.g. seq_len=16384,dim=64; "
                        "batch=4|16: either; kernel=NAME: that kernel's or layer's)")
    p.add_argument("--autotune-stages", type=_stages, default=None, metavar="N,N,...",
                   help="pipeline depths TileLang's autotuner tries beside the template's tiles (default 1,2,3)")
    p.add_argument("--tracker", metavar="HOST:PORT",
                   help="measure each config whole on a worker this TVM RPC tracker hands out (workers: "
                        "`pt-tvm worker --bench` in a source checkout); needs --target")
    p.add_argument("--key", default="h100", help="device key of the tracker's workers (default h100)")
    p.add_argument("--config-timeout", type=float, default=1800.0, metavar="S",
                   help="seconds per config on a worker before it is killed and retried (default 1800)")


def add_compare_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threshold", type=_threshold, default=0.05,
                   help="allowed slowdown as a fraction of the baseline time (default 0.05 = 5%%)")
    p.add_argument("--all-systems", action="store_true", help="check every system, not only pt-tvm")


def _threshold(text: str) -> float:
    """A finite, non-negative fraction."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"wants a finite fraction >= 0 (0.05 = 5%%), got {text!r}")
    return value


def _stages(text: str) -> tuple[int, ...]:
    """``N,N,...``: positive pipeline depths."""
    try:
        stages = tuple(int(v) for v in text.split(","))
    except ValueError:
        stages = ()
    if not stages or min(stages) < 1:
        raise argparse.ArgumentTypeError(f"wants positive depths like 1,2,3, got {text!r}")
    return stages


def _where(text: str) -> dict[str, str]:
    """``KEY=VALUE,...`` -> {key: value} (values compared as text with the config's; ``A|B`` takes either)."""
    try:
        return dict(item.split("=", 1) for item in text.split(",") if item)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--where wants KEY=VALUE,..., got {text!r}") from None


def _shard(text: str) -> tuple[int, int]:
    """``I/N`` with 0 <= I < N."""
    try:
        i, n = (int(v) for v in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard wants I/N (e.g. 0/2), got {text!r}") from None
    if not 0 <= i < n:
        raise argparse.ArgumentTypeError(f"--shard {text}: need 0 <= I < N")
    return i, n


def _configs(args: argparse.Namespace) -> list:
    configs = filter_systems(suite_configs(args.suite), args.systems.split(",") if args.systems else None)
    limit = args.max_configs if args.max_configs is not None else (QUICK_MAX_CONFIGS if args.quick else None)
    configs = subsample(configs, limit)
    where = getattr(args, "where", None) or {}
    configs = [c for c in configs
               if all(str(c.kernel if k == "kernel" else c.problem.get(k)) in v.split("|") for k, v in where.items())]
    if getattr(args, "shard", None):  # a stripe that rotates every n configs, so suites laid out in blocks
        i, n = args.shard              # of n (e.g. one seqlen after another) spread evenly over the shards
        configs = [c for k, c in enumerate(configs) if (k + k // n) % n == i]
    return configs


def _vdev(args: argparse.Namespace) -> tuple[Any, str]:
    """(chip model, device description): --target, else the local GPU, else (dry run only) h100."""
    gpu = torch.cuda.is_available()
    if getattr(args, "tracker", None):
        if not args.target:
            raise UsageError("--tracker needs --target (the chip model of the workers)")
    elif not gpu and not args.dry_run:
        raise UsageError("no CUDA GPU here; use --dry-run to exercise the harness on the CPU")
    try:
        vdev = hw.get(args.target) if args.target else (hw.from_device() if gpu else hw.get("h100"))
    except hw.HardwareError as e:
        raise UsageError(str(e)) from None
    if getattr(args, "tracker", None):
        return vdev, "remote workers"
    device = torch.cuda.get_device_name() if gpu else "none (CPU dry run)"
    return vdev, device


def _command(args: argparse.Namespace) -> str:
    argv = getattr(args, "argv", None)
    if argv is not None:
        return f"{args.prog} " + " ".join(shlex.quote(a) for a in argv)
    flags = []  # reconstructed from the options (``pt-tvm bench`` called as a function)
    for name in ("suite", "out", "systems", "max_configs", "tune_top_k", "target", "workers", "compare",
                 "threshold"):
        v = getattr(args, name, None)
        if v not in (None, "", 0):
            flags.append(f"--{name.replace('_', '-')} {shlex.quote(str(v))}")
    flags += [f"--{n.replace('_', '-')}" for n in ("quick", "dry_run", "all_systems") if getattr(args, n, False)]
    return f"{args.prog} " + " ".join(flags)


def _writable(path: str, what: str) -> str:
    """``path`` as an absolute path once its folder exists (created if needed) and a file can be written there;
    UsageError naming the problem otherwise (checked before any expensive work)."""
    path = os.path.abspath(path)
    if os.path.isdir(path):
        raise UsageError(f"{what} {path} is a directory")
    existed = os.path.exists(path)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a"):
            pass
        if not existed:
            os.remove(path)
    except OSError as e:
        raise UsageError(f"cannot write {what} {path}: {e.strerror or e}") from None
    return path


def _writable_dir(path: str, what: str) -> str:
    """``path`` once it is a folder (created if needed) that files can be written to; UsageError otherwise."""
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as e:
        raise UsageError(f"cannot write {what} {path}: {e.strerror or e}") from None
    return path


def _one_line_errors(prog: str) -> Callable:
    """Commands report bad input as one line on stderr and exit status 2, never a traceback."""

    def wrap(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
        @functools.wraps(fn)
        def run(args: argparse.Namespace) -> int:
            try:
                return fn(args)
            except (UsageError, RunFileError, PtTvmError) as e:
                message = str(e)
            except SystemExit as e:  # the suite tables' own one-line refusals (unknown suite or system)
                if not isinstance(e.code, str):
                    raise
                message = e.code
            print(f"{getattr(args, 'prog', prog)}: {message.removeprefix('benchmarks: ')}", file=sys.stderr)
            return 2

        return run

    return wrap


def cmd_run(args: argparse.Namespace) -> tuple[int, str]:
    """Run (or dry-run) a suite and write its JSON; returns (exit code, path). Options and the output path
    are checked first (UsageError)."""
    configs = _configs(args)
    if not configs:
        raise UsageError(f"suite {args.suite!r} has no configs left after filtering")
    if args.tune_top_k is not None and args.tune_top_k < 1:
        raise UsageError("--tune-top-k must be >= 1")
    layered = args.suite in layers.SUITES  # whole layers: their own build, check and timing (benchmarks.layers)
    if layered and getattr(args, "tracker", None):
        raise UsageError(f"suite {args.suite!r} runs on the local GPU only (no --tracker)")
    vdev, device = _vdev(args)
    name = f"{args.suite}{'-dry' if args.dry_run else ''}-{vdev.name}-{_stamp()}.json"
    out = _writable(args.out or os.path.join(OUT_DIR, name), "--out")
    options: dict[str, Any] = {"tune_top_k": args.tune_top_k} if args.tune_top_k else {}
    if getattr(args, "autotune_stages", None):
        options["autotune_stages"] = args.autotune_stages
    head = header(_command(args), device)
    head.update(suite=args.suite, target=vdev.name, dry_run=bool(args.dry_run), configs=len(configs),
                systems=sorted({s for c in configs for s in c.systems}),
                tune_top_k=args.tune_top_k,  # None: pt_tvm.tune's default
                shard="/".join(map(str, args.shard)) if getattr(args, "shard", None) else None)
    t0 = time.perf_counter()
    print(f"{args.suite}: {len(configs)} configs on {device} (model {vdev.name})"
          + (" -- dry run" if args.dry_run else ""), flush=True)
    if args.dry_run:
        head["sms"] = vdev.num_eus
        if layered:
            rows = layers.dry_run_configs(configs)
        else:
            rows = dryrun.dry_run_configs(configs, vdev, system_options=options)
    elif getattr(args, "tracker", None):
        rows, remote = run_remote(configs, vdev, tracker=args.tracker, key=args.key, timeout_s=args.config_timeout,
                                  options={"rep_ms": args.rep_ms, "workers": args.workers, "system_options": options,
                                           "command": head["command"]})
        head.update(remote)
    else:
        head.update(sms=torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count,
                    headline_timing="cuda-graph", settle_ms=getattr(args, "settle_ms", SETTLE_MS))

        def save_partial(rows_so_far: list) -> None:  # a run cut off (e.g. by a time limit) keeps its rows
            write_run(out, {**head, "partial": True, "wall_s": round(time.perf_counter() - t0, 1)}, rows_so_far)

        if layered:
            head["tolerance"] = layers.LAYER_TOL
            rows = layers.run_configs(configs, vdev, workers=args.workers, rep_ms=getattr(args, "rep_ms", 1000.0),
                                      settle_ms=getattr(args, "settle_ms", SETTLE_MS), on_config=save_partial)
        else:
            with tempfile.TemporaryDirectory(prefix="pt-tvm-autotune-") as cache:  # TileLang's autotuner: run-local
                rows = run_configs(configs, vdev, workers=args.workers, rep_ms=getattr(args, "rep_ms", 1000.0),
                                   settle_ms=getattr(args, "settle_ms", SETTLE_MS),
                                   system_options={**options, "autotune_cache": cache}, on_config=save_partial)
    head["wall_s"] = round(time.perf_counter() - t0, 1)
    write_run(out, head, rows)
    if args.dry_run:
        states = [r.get("valid") for r in rows]
        print(f"dry run: {states.count(True)} rows built on the CPU, {states.count(False)} failed, "
              f"{states.count(None)} rows skipped (built on a GPU only)")
    else:
        for line in summary_lines(rows):
            print(line)
    print(f"wrote {out}")
    failed = [r for r in rows if r.get("valid") is False and r["system"].startswith("pt-tvm")]
    if args.dry_run and failed:
        print(f"{len(failed)} pt-tvm row(s) failed their CPU search or lowering", file=sys.stderr)
        return 1, out
    return 0, out


def _print_comparison(run: str, baseline: str, args: argparse.Namespace) -> int:
    try:
        result = compare_files(run, baseline, threshold=args.threshold, all_systems=args.all_systems)
    except ValueError as e:  # RunFileError included: a bad file, or a dry run against a timed one
        print(f"benchmarks compare: {e}", file=sys.stderr)
        return 2
    print(result.text(args.threshold))
    if result.compared == 0:
        print("benchmarks compare: the run and the baseline have no (kernel, config, system) rows in common",
              file=sys.stderr)
        return 2
    return 0 if result.ok else 1


def _bench(args: argparse.Namespace) -> int:
    if args.compare:
        load_run(args.compare)  # a missing or broken baseline stops here, before the suite runs
    code, out = cmd_run(args)
    if not args.compare:
        return code
    print(f"comparing {out} with {args.compare}")
    return max(code, _print_comparison(out, args.compare, args))


def cmd_bench(args: argparse.Namespace) -> int:
    """Run, then (with --compare) check against the baseline, which is read and checked before the run:
    exit 1 on a regression (or a failed dry run), 2 on bad options or a bad baseline."""
    return _one_line_errors("benchmarks bench")(_bench)(args)


def _cmd_list(args: argparse.Namespace) -> int:
    configs = _configs(args)
    for c in configs:
        label = config_label({"kernel": c.kernel, "config": dict(c.problem), "note": c.note})
        print(f"{c.suite:<15} {c.kernel:<16} {label:<40} {','.join(c.systems)}")
    print(f"{len(configs)} configs, {sum(len(c.systems) for c in configs)} rows")
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    run = load_run(args.run)  # a bad run stops here, before the folder is made
    out_dir = _writable_dir(args.out_dir, "--out-dir")
    if run["header"].get("suite") in layers.SUITES:  # whole layers: their own tables, the paper's ratios
        table, pngs = layers.write_report(args.run, out_dir)
    else:
        table, pngs = write_report(args.run, out_dir, subject=args.system)
    print(f"wrote {table}" + (f" and {len(pngs)} charts" if pngs else " (no timed rows: no charts)"))
    for p in pngs:
        print(f"  {p}")
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    if not args.ratios:
        return _print_comparison(args.run, args.baseline, args)
    try:
        moves = ratio_moves(load_run(args.run), load_run(args.baseline), threshold=args.threshold)
    except ValueError as e:  # RunFileError included
        print(f"benchmarks compare: {e}", file=sys.stderr)
        return 2
    print(f"pt-tvm's speed-up over each peer, moved by more than {args.threshold:.0%} from {args.baseline} "
          f"to {args.run} ({len(moves)}):\n")
    print("| kernel | config | peer | before | after | after, queued | change |\n|---|---|---|---|---|---|---|")
    for m in moves:
        queued = f"{m.after_queued:.2f}x" if m.after_queued is not None else "—"
        print(f"| {m.kernel} | {m.config} | {m.peer} | {m.before:.2f}x | {m.after:.2f}x | {queued} | "
              f"{m.change:+.0%} |")
    return 0


def _cmd_merge(args: argparse.Namespace) -> int:
    out = _writable(args.out, "--out")
    try:
        head, rows = merge_runs(args.runs, reruns=args.rerun or (), across_commits=args.across_commits,
                                keep_first=args.keep_first)
    except ValueError as e:
        print(f"benchmarks merge: {e}", file=sys.stderr)
        return 2
    write_run(out, head, rows)
    print(f"wrote {out}: {len(rows)} rows from {len(args.runs)} runs")
    return 0


def _cmd_roofline(args: argparse.Namespace) -> int:
    try:
        print(roofline.write(args.run, args.out and _writable(args.out, "--out"), args.system))
    except ValueError as e:  # RunFileError included, and a device without a chip model
        raise UsageError(str(e)) from None
    return 0


def _cmd_registers(args: argparse.Namespace) -> int:
    try:
        rows = registers.compare_registers(args.template, args.target, parse_params(args.param), args.top)
    except (ValueError, RuntimeError) as e:  # a bad parameter or target, no nvcc, a kernel nvcc refused
        raise UsageError(str(e)) from None
    print(registers.as_json(rows) if args.json else registers.format_table(rows))
    return 0


def _cmd_model_check(args: argparse.Namespace) -> int:
    try:
        return modelcheck.cmd_model_check(args)
    except ValueError as e:  # RunFileError included, an unknown --target, a device without a chip model
        raise UsageError(str(e)) from None


def _cmd_readme(args: argparse.Namespace) -> int:
    index = load_index(args.index)
    folder = os.path.dirname(os.path.abspath(args.index))
    try:
        with open(args.readme) as f:
            before = f.read()
    except OSError as e:
        raise UsageError(f"cannot read {args.readme}: {e.strerror or e}") from None
    after = splice(before, readme_section(index.current, folder, os.path.dirname(os.path.abspath(args.readme))),
                   args.readme)
    index_md = os.path.join(folder, "README.md")
    index_before = open(index_md).read() if os.path.exists(index_md) else ""
    index_after = results_index(index, folder)
    stale = [path for path, old, new in ((args.readme, before, after), (index_md, index_before, index_after))
             if old != new]
    if args.check:
        for path in stale:
            print(f"stale: {path} (run `python -m benchmarks readme`)")
        return 1 if stale else 0
    for path, text in ((args.readme, after), (index_md, index_after)):
        with open(path, "w") as f:
            f.write(text)
    print(f"wrote {args.readme} (results section) and {index_md}" + ("" if stale else " (unchanged)"))
    return 0


def _cmd_search_time(args: argparse.Namespace) -> int:
    vdev = hw.get(args.target)
    out = None if args.no_save else _writable(
        args.out or os.path.join(OUT_DIR, f"search-time-{vdev.name}-{_stamp()}.json"), "--out")
    configs = default_configs() if not args.suite else suite_configs(args.suite)
    configs = subsample(configs, args.max_configs)
    cpu = cpu_description()  # before the searches load the machine themselves
    rows = measure_search_times(configs, vdev, repeat=args.repeat)
    print()
    print(format_table(rows, cpu))
    if out:
        head = header(_command(args), "none (CPU search only)")
        head.update(cpu, target=vdev.name, kind="search-time")
        write_run(out, head, rows)
        print(f"\nwrote {out}")
    return 0


def build_parser(prog: str = "python -m benchmarks") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0], epilog=_EXAMPLES,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("run", help="measure a suite on the local GPU (or --dry-run on a CPU) and write its JSON")
    add_run_arguments(p)
    p.set_defaults(func=lambda a: cmd_run(a)[0])

    p = sub.add_parser("bench", help="run, then compare with a baseline (--compare BASELINE.json)")
    add_run_arguments(p)
    p.add_argument("--compare", metavar="BASELINE.json", help="baseline run to check against after the run")
    add_compare_options(p)
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("list", help="print a suite's configs")
    add_run_arguments(p)
    p.set_defaults(func=_cmd_list)

    p = sub.add_parser("report", help="write table.md and PNG charts from a run JSON")
    p.add_argument("run", metavar="RUN.json")
    p.add_argument("--out-dir", required=True, metavar="DIR")
    p.add_argument("--system", default="pt-tvm", help="the system whose ratios are tabulated (default pt-tvm)")
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser("merge", help="one run JSON from several (the shards of one suite run on several GPUs)")
    p.add_argument("runs", nargs="+", metavar="RUN.json")
    p.add_argument("--out", required=True, metavar="FILE")
    p.add_argument("--rerun", metavar="RUN.json", action="append",
                   help="a run of some configs again (run --where ...), e.g. after a fix: its rows replace every "
                        "row of those configs; its commit may differ (repeat it: applied in order)")
    p.add_argument("--across-commits", action="store_true",
                   help="the runs are parts of one grid measured at different commits (each config whole in one): "
                        "each part keeps its commit")
    p.add_argument("--keep-first", action="store_true",
                   help="a config measured in several runs keeps the first run's rows (a queue of device calls "
                        "that measured some configs twice); the header counts those left out")
    p.set_defaults(func=_cmd_merge)

    p = sub.add_parser("compare", help="exit 1 when RUN regressed against BASELINE (slower or invalid)")
    p.add_argument("run", metavar="RUN.json")
    p.add_argument("baseline", metavar="BASELINE.json")
    add_compare_options(p)
    p.add_argument("--ratios", action="store_true",
                   help="list where pt-tvm's speed-up over a peer moved by more than --threshold instead (exit 0)")
    p.set_defaults(func=_cmd_compare)

    p = sub.add_parser("calibrate", help="fit the cost model to the pt-tvm plans runs measured",
                       description="Fits per-sEU occupancy scales and a per-iteration overhead to the pt-tvm "
                                   "candidates measured in benchmark run JSON files; the search then uses them.")
    p.add_argument("runs", nargs="+", help="benchmark run JSON files (python -m benchmarks run ...)")
    p.add_argument("--target", required=True, help="the chip the runs were measured on (e.g. h200)")
    p.add_argument("--out", help="directory to write <target>.json (default: the pt-tvm cache dir)")
    p.set_defaults(func=cmd_calibrate)

    p = sub.add_parser("model-check", help="how the cost model ranks the pt-tvm plans runs measured",
                       description="Re-prices every measured pt-tvm candidate with the current cost model; per "
                                   "kernel: the first pick's gap to the fastest measured plan and the Spearman "
                                   "rank correlation of price and measured time per config.")
    p.add_argument("runs", nargs="+", metavar="RUN.json",
                   help="benchmark run JSON files (.json.gz and bundles of runs, as in tests/data, too)")
    p.add_argument("--target", help="the chip the runs were measured on (default: each run's device)")
    p.add_argument("--json", action="store_true", help="print the figures and every config's check as JSON")
    p.add_argument("--offered", action="store_true",
                   help="only the measured plans whose tile the current search still offers")
    p.set_defaults(func=_cmd_model_check)

    p = sub.add_parser("registers", help="the cost model's registers a thread against ptxas's (CPU, nvcc)",
                       description="Searches a template, lowers the best software-pipelined plan of each of its "
                                   "best tiles and assembles it with nvcc: the model's registers a thread beside "
                                   "ptxas's, spills, and the blocks an SM each gives.")
    p.add_argument("template", help="template name (see `pt-tvm templates`)")
    p.add_argument("--target", default="h100", help="CUDA chip model (default h100)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="template parameter, repeatable")
    p.add_argument("--top", type=int, default=4, help="tiles to compare (default 4)")
    p.add_argument("--json", action="store_true", help="print JSON rather than a table")
    p.set_defaults(func=_cmd_registers)

    p = sub.add_parser("search-time", help="pt-tvm's CPU search time per template/config vs published figures")
    p.add_argument("--target", default="h100", help="chip model to search for (default h100)")
    p.add_argument("--suite", help="time the configs of this suite instead of the default set")
    p.add_argument("--max-configs", type=int, metavar="N", help="only N configs spread over the set")
    p.add_argument("--repeat", type=int, default=1, help="searches per config; the minimum is reported")
    p.add_argument("--out", help="JSON to write (default out/search-time-TARGET-DATE.json, git-ignored)")
    p.add_argument("--no-save", action="store_true", help="print only, write no JSON")
    p.set_defaults(func=_cmd_search_time)

    p = sub.add_parser("roofline", help="a run's rows against the chip's HBM and tensor-core rooflines")
    p.add_argument("run", metavar="RUN.json")
    p.add_argument("--out", metavar="FILE.md", help="also write the tables here")
    p.add_argument("--system", action="append", help="only these systems (repeatable; default all)")
    p.set_defaults(func=_cmd_roofline)

    p = sub.add_parser("readme", help="regenerate README.md's results section and benchmarks/results/README.md "
                                      "from the runs benchmarks/results/index.json names")
    p.add_argument("--index", default=os.path.join(RESULTS, "index.json"),
                   help="the index of current runs (default benchmarks/results/index.json)")
    p.add_argument("--readme", default=os.path.join(ROOT, "README.md"), help="the README to update")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 when either text is stale")
    p.set_defaults(func=_cmd_readme)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    args.prog, args.argv = "python -m benchmarks", argv
    return int(_one_line_errors("benchmarks")(args.func)(args) or 0)
