"""The ``pt-tvm`` command line: look at a template's sTask-graph, schedule it, benchmark it."""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from typing import Sequence

from . import cost, hw, templates
from .cluster_cli import add_commands as add_cluster_commands
from .compiler import extract, lower_planned, schedule_template
from .errors import PtTvmError
from .search import SearchSpace
from .timeline import plot_timeline, text_timeline

__all__ = ["main", "parse_params"]

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

exit status: 0 ok; 2 a usage or input error (unknown template, target or parameter, a bad chip file, an
unwritable output path, no valid plan), reported in one line on stderr.

benchmarks, calibration and the CI regression check live in a source checkout: python -m benchmarks --help
"""


def parse_params(pairs: Sequence[str]) -> dict[str, str]:
    """``--param KEY=VALUE`` pairs as the template parameters they name (values as text: templates convert)."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise templates.TemplateError(f"--param expects KEY=VALUE, got {pair!r}")  # reported like other bad input
        out[key.strip()] = value.strip()
    return out


class OutputError(PtTvmError, ValueError):
    """An output path the command cannot write, found before any work is done."""


DEFAULT_OUT = "out"  # generated files go under ./out/ unless --out says otherwise (ignored in a pt-tvm checkout)


def _writable_dir(path: str, what: str) -> str:
    """``path`` as a directory that exists (made if missing) and can be written, or an OutputError."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise OutputError(f"{what} {path!r} cannot be created: {e.strerror or e}") from None
    if not os.access(path, os.W_OK):
        raise OutputError(f"{what} {path!r} is not writable")
    return path


def _plot_path(path: str) -> str:
    """A PNG path whose folder can be written, with matplotlib installed (the ``[plot]`` extra)."""
    if importlib.util.find_spec("matplotlib") is None:  # an optional extra, checked before the search
        raise OutputError("--plot needs matplotlib: pip install 'pt-tvm[plot]'")
    _writable_dir(os.path.dirname(os.path.abspath(path)), "--plot folder")
    return path


def _cmd_templates(args: argparse.Namespace) -> int:
    for name in templates.names():
        t = templates.get(name)
        problem = " ".join(f"{k}={v}" for k, v in t.problem.items())
        tile = " ".join(f"{k}={v}" for k, v in t.tile.items())
        print(f"{name}\n  {t.doc}\n  problem: {problem}\n  tile:    {tile}")
    return 0


def _cmd_graph(args: argparse.Namespace) -> int:
    template = templates.get(args.template)
    vdev = hw.get(args.target)
    out = args.out or os.path.join(DEFAULT_OUT, args.template)
    _writable_dir(os.path.dirname(os.path.abspath(out)), "--out folder")
    func = template.build(**parse_params(args.param))
    graph = extract(func, vdev)
    print(graph.summary())
    with open(out + ".json", "w") as f:
        f.write(graph.to_json())
    with open(out + ".dot", "w") as f:
        f.write(graph.to_dot())
    print(f"wrote {out}.json and {out}.dot (render: dot -Tpng {out}.dot -o {out}.png)")
    return 0


def _cmd_schedule(args: argparse.Namespace) -> int:
    vdev = hw.get(args.target)
    template = templates.get(args.template)
    out = _writable_dir(args.out or os.path.join(DEFAULT_OUT, f"{args.template}-{vdev.name}"), "--out")
    if args.plot:
        _plot_path(args.plot)
    result, problem, build = schedule_template(args.template, vdev, params=parse_params(args.param),
                                               seed=args.seed, space=SearchSpace(random_orders=args.random_orders),
                                               jobs=args.jobs)
    best = result.best
    print(f"{args.template} {problem} on {vdev.description}")
    print(best.plan.describe(best.graph))
    traced = cost.estimate(best.plan, best.graph, vdev, trace=True)
    print(text_timeline(traced))
    flops = template.flops(problem)
    print(f"predicted: {best.seconds * 1e6:.1f} us, {flops / best.seconds / 1e12:.0f} TFLOP/s "
          f"({best.estimate.waves} waves of {best.estimate.blocks_per_eu} block(s) per {vdev.eu.name})")
    print(result.explain(args.top))
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
    p.add_argument("--out", help="output path prefix for .json/.dot (default: out/TEMPLATE)")
    p.set_defaults(func=_cmd_graph)

    p = sub.add_parser("schedule", help="search a pipelined plan for a template and emit its kernel source",
                       description="Two-level search (tiles, then order/stage/depth per tile) priced by the "
                                   "cost model; prints the plan, its simulated timeline, the runners-up, and "
                                   "writes plan.json and the emitted CUDA/HIP source. Runs on a CPU.")
    p.add_argument("template", help="template name (see `pt-tvm templates`)")
    p.add_argument("--target", default="h100", help="h100, h200, a100, mi300x or a chip .json/.toml (default h100)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="template parameter, repeatable")
    p.add_argument("--out", help="output directory (default: out/TEMPLATE-TARGET)")
    p.add_argument("--plot", metavar="FILE.png", help="also draw the simulated timeline as a Gantt chart")
    p.add_argument("--seed", type=int, default=0, help="search seed (default 0)")
    p.add_argument("--random-orders", type=int, default=4, help="random priority orders per configuration")
    p.add_argument("--top", type=int, default=5, help="runners-up to print")
    p.add_argument("--jobs", type=int, metavar="N",
                   help="search the tiles in N worker processes (0: one per CPU; default $PT_TVM_SEARCH_JOBS, else 1)")
    p.set_defaults(func=_cmd_schedule)

    add_cluster_commands(sub, parse_params)  # tracker, worker, tune, tunedb
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except PtTvmError as e:
        print(f"pt-tvm: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
