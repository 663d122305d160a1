"""The fan-out in simulation: a tracker, N servers whose measurement only sleeps, and M jobs through
:class:`pt_tvm.fanout.Fanout`. How busy the tracker keeps the servers, and what each job costs the client.

    python -m benchmarks.fanout_scale --servers 64 --jobs 10000 --sleep 2.0 --out scale.json

Reports wall time against the ideal (jobs x sleep / servers), the servers' utilization (time spent
in the measurement function over servers x wall), the turnaround (a server's time per job beyond
the sleep: tracker round trips, session set-up and tear-down), the overhead of a session as the
client sees it (session time minus the function's), and the CPU time per job of the client, the
tracker and the servers. Everything runs on this machine, so the servers' CPU competes with the
client's.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import platform
import statistics
import sys
import threading
import time

__all__ = ["sleep_job", "simulate"]


def sleep_job(job: dict) -> dict:
    """The fake measurement: sleep ``job["sleep"]`` seconds, answer a time."""
    time.sleep(float(job["sleep"]))
    return {"ms": 1.0}


def _cpu_seconds(pids: list[int]) -> float:
    import psutil  # optional: only this measurement needs it

    total = 0.0
    for pid in pids:
        try:
            t = psutil.Process(pid).cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.NoSuchProcess:
            pass
    return total


def simulate(servers: int, jobs: int, sleep_s: float, log=sys.stderr) -> dict:
    """Run ``jobs`` sleeping jobs on ``servers`` fake servers; the measurements as a dict.

    (Imports here, not at the top: the servers import this module for :func:`sleep_job` and stay light.)
    """
    import psutil  # optional: only this measurement needs it
    from tilelang import tvm  # noqa: F401  (puts the bundled TVM on the path, for the next line)
    from tvm.rpc.tracker import Tracker  # needs tornado, an optional dependency

    from pt_tvm.fanout import Fanout, Task, TrackerLink, serve  # loads tilelang; the servers load this file light

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    tracker = Tracker("127.0.0.1", port=20000 + os.getpid() % 20000, port_end=65000, silent=True)
    addr = ("127.0.0.1", tracker.port)
    stop = threading.Event()
    t0 = time.perf_counter()
    thread = threading.Thread(target=serve, args=(addr, "sim", [None] * servers), daemon=True, kwargs=dict(
        functions={"sim.sleep": "benchmarks.fanout_scale:sleep_job"}, preload=(), host="127.0.0.1",
        port=addr[1] + 1, port_end=65000, check_s=5.0, stop=stop.is_set, log=io.StringIO()))
    thread.start()
    link = TrackerLink(addr)
    while len(link.servers("sim")) < servers:
        if not thread.is_alive():
            raise RuntimeError("the servers did not start (see the log)")
        time.sleep(0.5)
    link.close()
    startup = time.perf_counter() - t0
    print(f"{servers} servers up in {startup:.0f} s", file=log, flush=True)
    me = psutil.Process()
    server_pids = [p.pid for p in me.children() if p.pid != tracker.proc._proc.pid]
    cpu0 = {"client": time.process_time(), "tracker": _cpu_seconds([tracker.proc._proc.pid]),
            "servers": _cpu_seconds(server_pids)}
    done = [0]

    def progress(_):
        done[0] += 1
        if done[0] % max(1, jobs // 20) == 0:
            print(f"  {done[0]}/{jobs} in {time.perf_counter() - t1:.0f} s", file=log, flush=True)

    tasks = [Task(f"{i:08d}", {"sleep": sleep_s}) for i in range(jobs)]
    t1 = time.perf_counter()
    outcomes = Fanout(addr, "sim", "sim.sleep", timeout_s=max(60.0, 20 * sleep_s), log=log).run(tasks, progress)
    wall = time.perf_counter() - t1
    cpu = {"client": time.process_time() - cpu0["client"],
           "tracker": _cpu_seconds([tracker.proc._proc.pid]) - cpu0["tracker"],
           "servers": _cpu_seconds(server_pids) - cpu0["servers"]}
    stop.set()
    thread.join(60)
    tracker.terminate()
    ok = [o for o in outcomes if o.result and not o.error]
    busy = sum(o.result["worker_s"] for o in ok)
    overhead = sorted(o.seconds - o.result["worker_s"] for o in ok)
    per_server = {}
    for o in ok:
        per_server[o.worker] = per_server.get(o.worker, 0) + 1
    return {
        "servers": servers, "jobs": jobs, "sleep_s": sleep_s, "ok": len(ok),
        "retried": sum(o.attempts > 1 for o in outcomes), "startup_s": round(startup, 1),
        "wall_s": round(wall, 2), "ideal_s": round(jobs * sleep_s / servers, 2),
        "utilization": round(busy / (servers * wall), 4), "jobs_per_s": round(len(ok) / wall, 2),
        "turnaround_ms": round(1e3 * (servers * wall / max(1, len(ok)) - sleep_s), 1),
        "session_overhead_ms": {"median": round(1e3 * statistics.median(overhead), 1),
                                "p90": round(1e3 * overhead[int(0.9 * (len(overhead) - 1))], 1)},
        "cpu_ms_per_job": {k: round(1e3 * v / max(1, jobs), 2) for k, v in cpu.items()},
        "jobs_per_server": {"min": min(per_server.values()), "max": max(per_server.values())},
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.fanout_scale", description=__doc__.split("\n\n")[0])
    p.add_argument("--servers", type=int, default=64)
    p.add_argument("--jobs", type=int, default=10000)
    p.add_argument("--sleep", type=float, action="append", help="seconds per job (repeatable: one run each)")
    p.add_argument("--out", help="JSON to write")
    args = p.parse_args(argv)
    runs = [simulate(args.servers, args.jobs, s) for s in (args.sleep or [2.0])]
    import psutil  # optional: only this measurement needs it

    doc = {"machine": {"cpus": os.cpu_count(), "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
                       "processor": platform.processor() or platform.machine(), "python": platform.python_version()},
           "command": "python -m benchmarks.fanout_scale " + " ".join(argv if argv is not None else sys.argv[1:]),
           "runs": runs}
    print(json.dumps(doc, indent=1))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
