"""``pt-tvm tracker``, ``pt-tvm worker``, ``pt-tvm tune`` and ``pt-tvm tunedb``: tuning on many GPUs."""
from __future__ import annotations

import argparse
import json
import time
from typing import Callable, Sequence

from .cluster import Shape, load_shapes, tune_shapes
from .fanout import local_devices, parse_address, serve
from .tunedb import Status, TuningDatabase
from .worker import BENCH, DEFAULT_FUNCTIONS, GPU_PRELOAD

__all__ = ["add_commands"]

_TUNE_EXAMPLES = """\
a two-machine set-up (the tracker may run anywhere both can reach):
  gpu-host$ pt-tvm tracker --port 9190
  gpu-host$ pt-tvm worker --tracker gpu-host:9190 --key h100        # one server per GPU
  laptop$   pt-tvm tune --tracker gpu-host:9190 --key h100 --target h100 --model shapes.json
shapes.json: [{"template": "flash_attention", "params": {"seq_len": 4096, "dim": 128}}, ...]
"""


def _address(text: str) -> tuple[str, int]:
    try:
        return parse_address(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _function(text: str) -> tuple[str, str]:
    name, sep, spec = text.partition("=")
    if not sep or not name or ":" not in spec:
        raise argparse.ArgumentTypeError(f"--function wants NAME=MODULE:FUNCTION, got {text!r}")
    return name, spec


def _cmd_tracker(args: argparse.Namespace) -> int:
    from tvm.rpc.tracker import Tracker  # the optional extra: tornado (pip install 'pt-tvm[cluster]')

    tracker = Tracker(args.host, port=args.port, port_end=args.port + 1, silent=not args.verbose)
    print(f"pt-tvm tracker: listening on {args.host}:{tracker.port} (Ctrl-C stops it)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        tracker.terminate()
    return 0


def _cmd_worker(args: argparse.Namespace) -> int:
    if args.servers:
        devices = [None] * args.servers
    else:
        devices = args.devices.split(",") if args.devices else local_devices()
        if not devices:
            raise SystemExit("pt-tvm worker: no GPU found (nvidia-smi -L); name them with --devices or start "
                             "unpinned servers with --servers N")
    functions = dict(args.function) if args.function else dict(DEFAULT_FUNCTIONS)
    if args.bench:
        functions[BENCH] = "benchmarks.remote:run_config"
    serve(args.tracker, args.key, devices, functions=functions, preload=() if args.no_preload else GPU_PRELOAD,
          host=args.host, port=args.port, port_end=args.port + 200, custom_addr=args.custom_addr,
          silent=not args.verbose)
    return 0


def _cmd_tune(args: argparse.Namespace) -> int:
    if bool(args.template) == bool(args.model):
        raise SystemExit("pt-tvm tune: give one of TEMPLATE (with --param) or --model SHAPES.json")
    shapes = load_shapes(args.model) if args.model else [Shape(args.template, args.parse_params(args.param))]
    db = TuningDatabase(args.db)
    t0 = time.perf_counter()
    try:
        results = tune_shapes(shapes, args.target, tracker=args.tracker, key=args.key, db=db, top_k=args.top_k,
                              timeout_s=args.timeout, retries=args.retries, warmup_ms=args.warmup_ms,
                              rep_ms=args.rep_ms, search_workers=args.search_workers, precompile=args.precompile)
    finally:
        db.close()
    wall = time.perf_counter() - t0
    for r in results:
        print(r.summary())
    print(f"tuned {len(results)} shapes in {wall:.1f} s; records in {db.directory}")
    if args.out:
        doc = {"wall_s": round(wall, 2), "tracker": f"{args.tracker[0]}:{args.tracker[1]}", "key": args.key,
               "shapes": [{"template": r.planned.shape.template, "problem": dict(r.planned.problem),
                           "key": r.planned.key, "search_s": round(r.planned.search_s, 2),
                           "best": json.loads(r.best.to_json()) if r.best else None,
                           "records": [json.loads(x.to_json()) for x in r.records]} for r in results]}
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
        print(f"wrote {args.out}")
    return 0 if all(r.best is not None for r in results) else 1


def _cmd_tunedb(args: argparse.Namespace) -> int:
    db = TuningDatabase(args.db)
    try:
        if args.action == "merge":
            for src in args.sources:
                print(f"merged {db.merge(src)} records from {src}")
            return 0
        by_key: dict[str, list] = {}
        for r in db.records():
            by_key.setdefault(r.key, []).append(r)
        for key, records in by_key.items():
            ok = [r for r in records if r.status is Status.OK]
            best = min(ok, key=lambda r: r.ms) if ok else None
            print(f"{key[:12]} {records[0].template} {records[0].chip} {len(records)} records, {len(ok)} ok"
                  + (f", best {best.ms:.4f} ms ({best.meta.get('note', '')})" if best else ""))
        print(f"{sum(map(len, by_key.values()))} records, {len(by_key)} keys in {db.directory}")
        return 0
    finally:
        db.close()


def add_commands(sub: argparse._SubParsersAction, parse_params: Callable[[Sequence[str]], dict]) -> None:
    """The cluster commands, added to ``pt-tvm``'s subcommands (``parse_params``: its ``--param`` parser)."""
    p = sub.add_parser("tracker", help="run a TVM RPC tracker that hands measurement workers to tuning clients",
                       description="TVM's RPC tracker (needs tornado: pip install 'pt-tvm[cluster]').")
    p.add_argument("--host", default="0.0.0.0", help="address to listen on (default 0.0.0.0)")
    p.add_argument("--port", type=int, default=9190, help="port (default 9190)")
    p.add_argument("--verbose", action="store_true", help="log every request")
    p.set_defaults(func=_cmd_tracker)

    p = sub.add_parser("worker", help="serve this machine's GPUs to a tracker as measurement workers",
                       description="One TVM RPC server per GPU (each entry of CUDA_VISIBLE_DEVICES, else every GPU), "
                                   "registered with the tracker under --key, serving pt-tvm's measurement function: "
                                   "build a plan, check it against the reference, time it. Runs until Ctrl-C.")
    p.add_argument("--tracker", type=_address, required=True, metavar="HOST:PORT")
    p.add_argument("--key", required=True, help="device key clients ask for (e.g. h100)")
    p.add_argument("--devices", help="comma-separated GPU indices to serve (default: all visible)")
    p.add_argument("--servers", type=int, metavar="N", help="N servers pinned to no GPU (CPU tests, fake functions)")
    p.add_argument("--host", default="0.0.0.0", help="address the servers listen on (default 0.0.0.0)")
    p.add_argument("--port", type=int, default=9091, help="first port to try (default 9091)")
    p.add_argument("--custom-addr", help="address to report to the tracker (default: as the tracker sees us)")
    p.add_argument("--function", type=_function, action="append", metavar="NAME=MODULE:FUNCTION",
                   help="serve this function instead of pt-tvm's measurement (repeatable; fakes for tests)")
    p.add_argument("--bench", action="store_true",
                   help="also serve whole benchmark configs (`benchmarks run --tracker`; run from a source checkout)")
    p.add_argument("--no-preload", action="store_true", help="import nothing before serving (fake functions)")
    p.add_argument("--verbose", action="store_true", help="log every session")
    p.set_defaults(func=_cmd_worker)

    p = sub.add_parser("tune", help="search here, measure the best plans on a tracker's workers, record them",
                       description="Searches each shape on this CPU, measures its --top-k plans on the workers the "
                                   "tracker hands out for --key (in parallel, a timeout per plan, one retry on "
                                   "another worker), and appends every result to the tuning database; plans the "
                                   "database holds are not measured again (an interrupted run resumes).",
                       epilog=_TUNE_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("template", nargs="?", help="template name (see `pt-tvm templates`)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="template parameter, repeatable")
    p.add_argument("--model", metavar="SHAPES.json", help='shapes to tune: [{"template": ..., "params": {...}}, ...]')
    p.add_argument("--tracker", type=_address, required=True, metavar="HOST:PORT")
    p.add_argument("--key", required=True, help="device key of the workers (e.g. h100)")
    p.add_argument("--target", required=True, help="the workers' chip model: h100, h200, a100, mi300x or a chip file")
    p.add_argument("--db", help="tuning database root (default: the pt-tvm cache dir)")
    p.add_argument("--top-k", type=int, default=8, help="plans measured per shape (default 8)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per plan before its worker kills it")
    p.add_argument("--retries", type=int, default=1, help="retries of a plan whose worker died or hung (default 1)")
    p.add_argument("--warmup-ms", type=float, default=50.0)
    p.add_argument("--rep-ms", type=float, default=500.0, help="timing per plan (default 500 ms)")
    p.add_argument("--search-workers", type=int, help="search processes (default: the cores, one per shape at most)")
    p.add_argument("--precompile", action="store_true",
                   help="compile each plan here first (workers sharing this TileLang cache then only load it)")
    p.add_argument("--out", metavar="FILE.json", help="also write the shapes' records and wall time as JSON")
    p.set_defaults(func=_cmd_tune, parse_params=parse_params)

    p = sub.add_parser("tunedb", help="summarize a tuning database, or merge others into it")
    p.add_argument("action", choices=("summary", "merge"))
    p.add_argument("sources", nargs="*", metavar="DIR", help="database roots to merge in (merge)")
    p.add_argument("--db", help="tuning database root (default: the pt-tvm cache dir)")
    p.set_defaults(func=_cmd_tunedb)
