"""The ``pt-tvm`` command line: look at a template's sTask-graph, schedule it, benchmark it."""
from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

__all__ = ["main"]

_DESCRIPTION = """\
pt-tvm turns a TileLang kernel into an sTask-graph (its tile ops and their data
dependences) and maps it onto a GPU's specialized execution units (TMA copy
engine, tensor cores, CUDA cores, SFU). Templates are built-in TileLang kernels:
see `pt-tvm templates`. Targets: h100, h200 (Hopper), a100, mi300x, or a chip file.
"""

_EXAMPLES = """\
examples:
  pt-tvm templates
  pt-tvm schedule flash_attention --target h100
  pt-tvm schedule flash_attention --target h100 --param dim=256 --plot fa256.png
  pt-tvm schedule gemm --target a100 --param M=4096 --param N=4096 --param K=4096
  pt-tvm graph flash_attention --target h100
  pt-tvm graph flash_attention --target h100 --param dim=64 --param causal=true --out fa
  pt-tvm graph gemm --target a100 --param M=2048 --param dtype=bfloat16
  pt-tvm bench --suite smoke --compare benchmarks/results/BASELINE.json
  pt-tvm bench --suite smoke --dry-run --target h100
"""


def _params(pairs: Sequence[str]) -> dict[str, str]:
    from .templates import TemplateError

    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise TemplateError(f"--param expects KEY=VALUE, got {pair!r}")  # reported like other bad input
        out[key.strip()] = value.strip()
    return out


def _cmd_templates(args: argparse.Namespace) -> int:
    from . import templates

    for name in templates.names():
        t = templates.get(name)
        problem = " ".join(f"{k}={v}" for k, v in t.problem.items())
        tile = " ".join(f"{k}={v}" for k, v in t.tile.items())
        print(f"{name}\n  {t.doc}\n  problem: {problem}\n  tile:    {tile}")
    return 0


def _cmd_graph(args: argparse.Namespace) -> int:
    from . import extract, hw, templates

    template = templates.get(args.template)
    vdev = hw.get(args.target)
    func = template.build(**_params(args.param))
    graph = extract(func, vdev)
    print(graph.summary())
    out = args.out or args.template
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out + ".json", "w") as f:
        f.write(graph.to_json())
    with open(out + ".dot", "w") as f:
        f.write(graph.to_dot())
    print(f"wrote {out}.json and {out}.dot (render: dot -Tpng {out}.dot -o {out}.png)")
    return 0


def _cmd_schedule(args: argparse.Namespace) -> int:
    from . import cost, hw, templates
    from .compiler import lower_planned, schedule_template
    from .search import SearchSpace
    from .timeline import plot_timeline, text_timeline

    vdev = hw.get(args.target)
    template = templates.get(args.template)
    result, problem, build = schedule_template(args.template, vdev, params=_params(args.param),
                                               seed=args.seed, space=SearchSpace(random_orders=args.random_orders))
    best = result.best
    print(f"{args.template} {problem} on {vdev.description}")
    print(best.plan.describe(best.graph))
    traced = cost.estimate(best.plan, best.graph, vdev, trace=True)
    print(text_timeline(traced))
    flops = template.flops(problem)
    print(f"predicted: {best.seconds * 1e6:.1f} us, {flops / best.seconds / 1e12:.0f} TFLOP/s "
          f"({best.estimate.waves} waves of {best.estimate.blocks_per_eu} block(s) per {vdev.eu.name})")
    print(result.explain(args.top))
    out = args.out or f"{args.template}-{vdev.name}"
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "plan.json"), "w") as f:
        f.write(best.plan.to_json())
    art = lower_planned(build(), vdev.tvm_target(), template.pass_configs)
    ext = "cu" if vdev.target_kind == "cuda" else "hip"
    with open(os.path.join(out, f"kernel.{ext}"), "w") as f:
        f.write(art.kernel_source)
    print(f"wrote {out}/plan.json and {out}/kernel.{ext}")
    if args.plot:
        plot_timeline(traced, args.plot, f"{args.template} on {vdev.name}: {best.note}")
        print(f"wrote {args.plot}")
    return 0


def _cmd_calibrate(args: argparse.Namespace) -> int:
    import dataclasses
    import json

    from . import cost, hw
    from .tune import samples_from_run

    vdev = hw.get(args.target)
    samples = []
    for path in args.runs:
        with open(path) as f:
            samples += samples_from_run(json.load(f), vdev)
    if not samples:
        raise SystemExit("pt-tvm: no measured pt-tvm candidates in the given runs (run the benchmarks with pt-tvm)")
    before = cost.Calibration(vdev.name)
    cal = dataclasses.replace(cost.calibrate(samples, vdev), source=", ".join(os.path.basename(p) for p in args.runs))
    for name, c in (("before", before), ("after", cal)):
        err = sum(abs(cost.estimate(p, g, vdev, c).seconds / s - 1) for p, g, s in samples) / len(samples)
        print(f"{name}: mean |predicted/measured - 1| = {err:.1%} over {len(samples)} measured plans")
    print(f"per-sEU occupancy scales {dict(cal.scale)}, overhead {cal.overhead} cycles/iteration")
    print(f"wrote {cost.save_calibration(cal, args.out)}")
    return 0


def _benchmarks_cli():
    """``benchmarks.cli`` from this source checkout (it is not installed with the package), or None."""
    try:
        from benchmarks import cli
    except ImportError:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        if not os.path.isfile(os.path.join(root, "benchmarks", "cli.py")):
            return None
        sys.path.insert(0, root)
        try:
            from benchmarks import cli
        except ImportError:
            return None
    return cli


def _add_bench(sub) -> None:
    """``pt-tvm bench``: ``python -m benchmarks bench`` (run a suite, then compare with --compare BASELINE)."""
    p = sub.add_parser("bench", help="run a benchmark suite, then check it against a baseline (--compare)",
                       description="Runs `python -m benchmarks run` with these options, then, with --compare, "
                                   "`python -m benchmarks compare`: exits 1 when pt-tvm got slower than the "
                                   "baseline by more than --threshold or a row turned invalid.")
    bench = _benchmarks_cli()
    if bench is None:
        def missing(args: argparse.Namespace) -> int:
            print("pt-tvm bench: needs the benchmarks/ folder of a pt-tvm source checkout", file=sys.stderr)
            return 2

        p.add_argument("rest", nargs=argparse.REMAINDER)
        p.set_defaults(func=missing)
        return
    bench.add_run_arguments(p)
    p.add_argument("--compare", metavar="BASELINE.json", help="baseline run to check against after the run")
    bench.add_compare_options(p)
    p.set_defaults(func=bench.cmd_bench, prog="pt-tvm bench")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pt-tvm", description=_DESCRIPTION, epilog=_EXAMPLES,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("templates", help="list the built-in kernel templates and their parameters")
    p.set_defaults(func=_cmd_templates)

    p = sub.add_parser("graph", help="print a template's sTask-graph and write it as JSON and DOT",
                       description="Extract the sTask-graph of a built-in template for a target.")
    p.add_argument("template", help="template name (see `pt-tvm templates`)")
    p.add_argument("--target", default="h100", help="h100, h200, a100, mi300x or a chip .json/.toml (default h100)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="template parameter, repeatable (e.g. --param dim=64)")
    p.add_argument("--out", help="output path prefix for .json/.dot (default: the template name)")
    p.set_defaults(func=_cmd_graph)

    p = sub.add_parser("schedule", help="search a pipelined plan for a template and emit its kernel source",
                       description="Two-level search (tiles, then order/stage/depth per tile) priced by the "
                                   "cost model; prints the plan, its simulated timeline, the runners-up, and "
                                   "writes plan.json and the emitted CUDA/HIP source. Runs on a CPU.")
    p.add_argument("template", help="template name (see `pt-tvm templates`)")
    p.add_argument("--target", default="h100", help="h100, h200, a100, mi300x or a chip .json/.toml (default h100)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="template parameter, repeatable")
    p.add_argument("--out", help="output directory (default: TEMPLATE-TARGET)")
    p.add_argument("--plot", metavar="FILE.png", help="also draw the simulated timeline as a Gantt chart")
    p.add_argument("--seed", type=int, default=0, help="search seed (default 0)")
    p.add_argument("--random-orders", type=int, default=4, help="random priority orders per configuration")
    p.add_argument("--top", type=int, default=5, help="runners-up to print")
    p.set_defaults(func=_cmd_schedule)

    p = sub.add_parser("calibrate", help="fit the cost model to measured plans from benchmark runs",
                       description="Fits per-sEU occupancy scales and a per-iteration overhead to the pt-tvm "
                                   "candidates measured in benchmark run JSON files; the search then uses them.")
    p.add_argument("runs", nargs="+", help="benchmark run JSON files (python -m benchmarks run ...)")
    p.add_argument("--target", required=True, help="the chip the runs were measured on (e.g. h200)")
    p.add_argument("--out", help="directory to write <target>.json (default: the pt-tvm cache dir)")
    p.set_defaults(func=_cmd_calibrate)

    _add_bench(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from .errors import USER_ERRORS

    try:
        return args.func(args)
    except USER_ERRORS as e:
        print(f"pt-tvm: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
