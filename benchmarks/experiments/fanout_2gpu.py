"""GPU experiment (issue #17): tuning the ``attention-core`` suite through TVM's RPC tracker with 2 workers
(one per GPU) against 1 worker, on one 2-GPU host (tracker, workers and client on that host).

Run from the project root on the GPU machine (``tornado`` installed, e.g. from a carried wheel)::

    python -m benchmarks.experiments.fanout_2gpu $OUT --max-configs 6 --top-k 4

Each run starts its own tracker and workers with an empty TileLang kernel cache (so the workers
build every plan themselves, as on machines that share nothing) and its own tuning database, then
times ``pt-tvm tune --model SHAPES.json`` (search here in processes, measurement on the workers).
``--precompile`` adds a third run: 2 workers, the client compiling each plan first into the cache
the workers share (the "client builds, workers load" variant). Writes ``fanout-2gpu.json``: wall
times, their ratio, and per shape the chosen plan and its measured time in each run.

Time: about (search) + configs x top-k x (build ~4 s + check and timing ~2 s) / workers, plus ~15 s
of start-up per run: 6 configs x 4 plans is ~3 min for one worker, ~1.5 min for two.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from benchmarks.configs import subsample, suite_configs
from pt_tvm.fanout import TrackerError, TrackerLink


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _shapes(max_configs: int | None) -> list[dict]:
    return [{"template": c.kernel, "params": dict(c.problem)}
            for c in subsample(suite_configs("attention-core"), max_configs)]


def _wait_for_workers(port: int, key: str, n: int, timeout: float = 180.0) -> None:
    deadline = time.time() + timeout
    while True:
        try:
            link = TrackerLink(("127.0.0.1", port))
            try:
                if len(link.servers(key)) >= n:
                    return
            finally:
                link.close()
        except TrackerError:  # not up yet
            pass
        if time.time() > deadline:
            raise TimeoutError(f"{n} workers did not register in {timeout:g} s")
        time.sleep(0.5)


def tune_run(name: str, gpus: str, shapes_path: str, out: str, args: argparse.Namespace,
             precompile: bool = False) -> dict:
    """One run: tracker + one worker per GPU in ``gpus``, then ``pt-tvm tune``; its JSON plus wall time."""
    key, port = "gpu", _free_port()
    scratch = tempfile.mkdtemp(prefix=f"fanout-{name}-")
    env = {**os.environ, "TILELANG_CACHE_DIR": os.path.join(scratch, "tilelang-cache")}
    pt = [sys.executable, "-m", "pt_tvm.cli"]
    logs = {n: open(os.path.join(out, f"{name}-{n}.log"), "w") for n in ("tracker", "workers", "tune")}
    procs = [subprocess.Popen([*pt, "tracker", "--host", "127.0.0.1", "--port", str(port)], env=env,
                              stdout=logs["tracker"], stderr=subprocess.STDOUT, start_new_session=True)]
    try:
        worker_env = {**env, "CUDA_VISIBLE_DEVICES": gpus}
        procs.append(subprocess.Popen([*pt, "worker", "--tracker", f"127.0.0.1:{port}", "--key", key,
                                       "--host", "127.0.0.1", "--port", str(port + 1)] +
                                      (["--no-preload"] if args.no_preload else []) + shlex.split(args.worker_args),
                                      env=worker_env, stdout=logs["workers"], stderr=subprocess.STDOUT,
                                      start_new_session=True))
        t0 = time.perf_counter()
        _wait_for_workers(port, key, len(gpus.split(",")))
        startup = time.perf_counter() - t0
        result = os.path.join(out, f"{name}.json")
        cmd = [*pt, "tune", "--model", shapes_path, "--tracker", f"127.0.0.1:{port}", "--key", key,
               "--target", args.target, "--db", os.path.join(scratch, "db"), "--top-k", str(args.top_k),
               "--rep-ms", str(args.rep_ms), "--timeout", str(args.timeout), "--out", result]
        if precompile:
            cmd.append("--precompile")
        t0 = time.perf_counter()
        code = subprocess.run(cmd, env=env, stdout=logs["tune"], stderr=subprocess.STDOUT).returncode
        wall = time.perf_counter() - t0
        doc = json.load(open(result)) if os.path.exists(result) else {}
        print(f"{name}: {len(gpus.split(','))} worker(s), tune exit {code}, wall {wall:.1f} s "
              f"(workers up in {startup:.1f} s)", flush=True)
        return {"name": name, "gpus": gpus, "precompile": precompile, "exit": code, "wall_s": round(wall, 2),
                "worker_startup_s": round(startup, 1), "shapes": doc.get("shapes", [])}
    finally:
        for p in reversed(procs):
            try:
                os.killpg(p.pid, 15)
                p.wait(20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(p.pid, 9)
        for f in logs.values():
            f.close()
        shutil.rmtree(scratch, ignore_errors=True)


def _best(run: dict) -> dict:
    """problem (as sorted JSON) -> (plan note, ms, worker) of the run's best record."""
    return {json.dumps(s["problem"], sort_keys=True): s["best"] for s in run["shapes"]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="output folder ($OUT)")
    p.add_argument("--max-configs", type=int, default=6, help="attention-core configs (default 6 of 26)")
    p.add_argument("--top-k", type=int, default=4, help="plans measured per config (default 4)")
    p.add_argument("--rep-ms", type=float, default=300.0)
    p.add_argument("--timeout", type=float, default=240.0, help="seconds per plan on a worker")
    p.add_argument("--target", default="h200")
    p.add_argument("--gpus", default="0,1", help="the two GPUs (default 0,1)")
    p.add_argument("--precompile", action="store_true", help="also a 2-worker run with the client compiling first")
    p.add_argument("--no-preload", action="store_true", help="workers import nothing before forking sessions")
    p.add_argument("--worker-args", default="", help="more `pt-tvm worker` options (a CPU rehearsal: "
                                                      "--function pt_tvm.measure_plan=MODULE:FAKE --no-preload)")
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    shapes_path = os.path.join(args.out, "shapes.json")
    with open(shapes_path, "w") as f:
        json.dump(_shapes(args.max_configs), f, indent=1)
    two = tune_run("two-workers", args.gpus, shapes_path, args.out, args)
    one = tune_run("one-worker", args.gpus.split(",")[0], shapes_path, args.out, args)
    runs = [two, one]
    if args.precompile:
        runs.append(tune_run("two-workers-precompiled", args.gpus, shapes_path, args.out, args, precompile=True))
    best_one, best_two = _best(one), _best(two)
    compare = []
    for problem, b1 in best_one.items():
        b2 = best_two.get(problem)
        compare.append({"problem": json.loads(problem),
                        "one_worker": b1 and {"ms": b1["ms"], "note": b1["meta"].get("note"), "worker": b1["worker"]},
                        "two_workers": b2 and {"ms": b2["ms"], "note": b2["meta"].get("note"), "worker": b2["worker"]},
                        "two_over_one": round(b2["ms"] / b1["ms"], 4) if b1 and b2 else None})
    ratios = [c["two_over_one"] for c in compare if c["two_over_one"]]
    summary = {"wall_two_over_one": round(two["wall_s"] / one["wall_s"], 3),
               "best_ms_two_over_one": {"min": min(ratios), "max": max(ratios)} if ratios else None,
               "configs": len(compare), "top_k": args.top_k}
    doc = {"experiment": "issue 17: tuning attention-core through TVM's RPC tracker, 2 workers vs 1",
           "command": "python -m benchmarks.experiments.fanout_2gpu " + " ".join(argv or sys.argv[1:]),
           "summary": summary, "compare": compare, "runs": runs}
    with open(os.path.join(args.out, "fanout-2gpu.json"), "w") as f:
        json.dump(doc, f, indent=1)
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
