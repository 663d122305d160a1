"""``python -m benchmarks run --suite NAME [--out FILE] [--systems a,b]``: measure on the local GPU."""
from __future__ import annotations

import argparse
import shlex
import sys

from .configs import suite_configs
from .suite import header, run_configs, write_run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="measure a suite on the local GPU and write its JSON")
    p.add_argument("--suite", default="smoke")
    p.add_argument("--out", default="benchmarks/results/latest.json")
    p.add_argument("--systems", help="comma-separated subset of systems")
    args = parser.parse_args(argv)
    import torch

    from pt_tvm import hw

    vdev = hw.from_device()
    configs = suite_configs(args.suite)
    if args.systems:
        keep = set(args.systems.split(","))
        configs = [c.__class__(c.suite, c.kernel, c.problem, tuple(s for s in c.systems if s in keep), c.note)
                   for c in configs]
    head = header("python -m benchmarks " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:])),
                  torch.cuda.get_device_name())
    rows = run_configs(configs, vdev)
    write_run(args.out, head, rows)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
