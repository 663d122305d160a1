"""Tuning over TVM's RPC tracker, on a CPU: a tracker and fake measurement servers on localhost.

The servers run ``_fake_workers.measure`` (it sleeps, hangs or dies on request)
behind :func:`pt_tvm.worker.serve`, which restarts a server whose loop died.
Covers the fan-out (spread, a worker killed mid-job, a hung job, a refused
job, no workers), the tuning client (records, resume, two clients on one
database, a crashing worker) and the ``pt-tvm tune`` command.
"""
from __future__ import annotations

import io
import json
import os
import signal
import socket
import threading
import time

import pytest
import tilelang.testing

pytest.importorskip("tornado", reason="the RPC tracker needs tornado (pip install 'pt-tvm[cluster]')")

from _fake_workers import Cluster, fake_ms  # noqa: E402
from _util import tunedb_lines  # noqa: E402
from tvm.rpc.base import TrackerCode  # noqa: E402

import pt_tvm.cluster as cluster_module  # noqa: E402
from benchmarks.cli import main as bench_main  # noqa: E402
from benchmarks.configs import SUITES, suite_configs  # noqa: E402
from benchmarks.suite import Config  # noqa: E402
from pt_tvm.cli import main  # noqa: E402
from pt_tvm.cluster import DatabaseLedger, Shape, tune_shapes  # noqa: E402
from pt_tvm.fanout import Fanout, Task, TrackerLink  # noqa: E402
from pt_tvm.tunedb import Record, Status, TuningDatabase  # noqa: E402
from pt_tvm.worker import MEASURE  # noqa: E402

SERVERS = 3
SHAPES = [Shape("gemm", {"M": 512, "N": 512, "K": 512}), Shape("gemm", {"M": 1024, "N": 512, "K": 512})]


@pytest.fixture(scope="module")
def cluster():
    c = Cluster()
    c.start("fake", SERVERS)
    yield c
    c.close()


def _fanout(cluster, key="fake", **kw) -> Fanout:
    return Fanout(cluster.addr, key, MEASURE, **{"timeout_s": 10.0, "wait_for_workers_s": 30.0, **kw})


# ---------------------------------------------------------------- the fan-out
def test_tasks_spread_over_the_servers(cluster):
    tasks = [Task(f"t{i}", {"fake": {"sleep": 0.2, "ms": 1.0 + i}}) for i in range(12)]
    t0 = time.perf_counter()
    outcomes = _fanout(cluster).run(tasks)
    wall = time.perf_counter() - t0
    assert sorted(o.task.id for o in outcomes) == sorted(t.id for t in tasks)
    assert all(o.result["ms"] == 1.0 + int(o.task.id[1:]) and o.attempts == 1 and not o.error for o in outcomes)
    assert len({o.worker for o in outcomes}) == SERVERS
    assert wall < 12 * 0.2  # not one after another


def test_sessions_from_helper_processes(cluster, tmp_path):
    """Lanes past ``local_sessions`` call from helper processes (TVM's client keeps 32 sessions a process):
    answers, errors and a hang come back the same way."""
    tasks = [Task(f"t{i}", {"fake": {"sleep": 0.1, "ms": 1.0 + i}}) for i in range(6)]
    tasks += [Task("bad", {"fake": {"error": "wrong result"}}), Task("hang", {"fake": {"hang": True}})]
    outcomes = {o.task.id: o for o in _fanout(cluster, local_sessions=0, timeout_s=1.5).run(tasks)}
    assert all(outcomes[f"t{i}"].result["ms"] == 1.0 + i for i in range(6))
    assert outcomes["bad"].result["error"] == "wrong result" and outcomes["bad"].attempts == 1
    assert outcomes["hang"].result is None and outcomes["hang"].attempts == 2 and "expired" in outcomes["hang"].error
    cluster.wait_for("fake", SERVERS, timeout=10)


def test_a_server_that_cannot_be_reached_costs_no_attempt(cluster):
    """The tracker hands out a server nobody can connect to (registered, then gone): the job never
    started, so it runs on the next server as its first attempt."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead_port = s.getsockname()[1]
    holders = [TrackerLink(cluster.addr) for _ in range(SERVERS)]
    for h in holders:  # take the real servers' turns (they come back after TVM's unmatched-key timeout)
        h.request("fake")
    ghost = TrackerLink(cluster.addr)
    assert ghost._ask(TrackerCode.PUT, "fake", [dead_port, "fake:ghost"], "127.0.0.1") == TrackerCode.SUCCESS
    try:
        [o] = _fanout(cluster, retries=0).run([Task("t", {"fake": {"ms": 4.0}})])
    finally:
        for link in [ghost, *holders]:
            link.close()
    assert o.result["ms"] == 4.0 and o.attempts == 1 and not o.error
    assert [lost.split(": ")[0] for lost in o.lost] == [f"127.0.0.1:{dead_port}"]


def test_a_worker_killed_mid_job_loses_only_that_attempt(cluster, tmp_path):
    """The whole server (its process and the session's) dies while it runs a job: the job runs again
    on another server, the other jobs are untouched, and ``serve`` brings the server back."""
    pidfile = str(tmp_path / "pid")
    tasks = [Task("victim", {"fake": {"sleep": 3.0, "pidfile": pidfile, "ms": 7.0}})]
    tasks += [Task(f"t{i}", {"fake": {"sleep": 0.1}}) for i in range(6)]
    killed = {}

    def kill_when_running() -> None:
        deadline = time.time() + 30
        while not os.path.exists(pidfile) and time.time() < deadline:
            time.sleep(0.05)
        session, server = (int(p) for p in open(pidfile).read().split())
        os.remove(pidfile)  # the retry writes it again
        os.kill(server, signal.SIGKILL)
        os.kill(session, signal.SIGKILL)
        killed["server"] = server

    killer = threading.Thread(target=kill_when_running)
    killer.start()
    outcomes = {o.task.id: o for o in _fanout(cluster).run(tasks)}
    killer.join()
    victim = outcomes.pop("victim")
    assert killed and victim.result["ms"] == 7.0 and victim.attempts == 2 and not victim.error
    [lost] = victim.lost
    assert lost.split(": ")[0] != victim.worker and "kShutdown" in lost  # retried on another server
    assert all(o.attempts == 1 and o.result["ms"] > 0 for o in outcomes.values())
    cluster.wait_for("fake", SERVERS, timeout=30)  # restarted by serve()


def test_a_hung_job_is_killed_retried_elsewhere_then_failed(cluster):
    tasks = [Task("hang", {"fake": {"hang": True}}), Task("fine", {"fake": {"sleep": 0.1, "ms": 2.0}})]
    t0 = time.perf_counter()
    outcomes = {o.task.id: o for o in _fanout(cluster, timeout_s=1.5).run(tasks)}
    assert time.perf_counter() - t0 < 15
    hung = outcomes["hang"]
    assert hung.result is None and hung.attempts == 2
    first, second = hung.error.split("; ")
    assert "expired" in first and "expired" in second and first.split(":")[1] != second.split(":")[1]
    assert outcomes["fine"].result["ms"] == 2.0
    cluster.wait_for("fake", SERVERS, timeout=10)  # a killed session leaves its server serving


def test_an_error_answer_is_final(cluster):
    [o] = _fanout(cluster).run([Task("bad", {"fake": {"error": "wrong result: relative error 0.5"}})])
    assert o.attempts == 1 and o.result["error"].startswith("wrong result") and not o.error


def test_no_server_for_the_key_fails_the_tasks_unrecorded(cluster):
    outcomes = _fanout(cluster, key="nobody", wait_for_workers_s=1.0).run([Task("x", {})])
    assert [(o.attempts, o.result) for o in outcomes] == [(0, None)]
    assert "no server of key 'nobody'" in outcomes[0].error


def test_tracker_link_refuses_a_non_tracker(cluster):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        silent = threading.Thread(target=lambda: s.accept()[0].sendall(b"\0\0\0\0"), daemon=True)
        silent.start()
        with pytest.raises(ConnectionError, match="not a TVM RPC tracker"):
            TrackerLink(s.getsockname())


def test_a_job_another_client_holds_waits_for_its_record(cluster, tmp_path):
    """A job claimed by another client is not run: its record is taken when it comes; a job whose
    claim lapses unrecorded (that client died) is run here."""
    other, mine = TuningDatabase(str(tmp_path)), TuningDatabase(str(tmp_path))
    ledger = DatabaseLedger(mine, claim_s=30.0)
    tasks = [Task("a" * 64, {"template": "gemm", "problem": {}, "plan": {"n": 1}, "fake": {"ms": 2.0}}),
             Task("b" * 64, {"template": "gemm", "problem": {}, "plan": {"n": 2}, "fake": {"ms": 3.0}})]
    for t in tasks:
        ledger.expect(t, "k" * 64, "h100", {})
    assert other.claim(tasks[0].id, 60.0) and other.claim(tasks[1].id, 1.0)

    def finish_first() -> None:
        time.sleep(1.0)
        other.append(Record("k" * 64, tasks[0].id, "gemm", {}, "h100", {"n": 1}, Status.OK, ms=5.0))
        other.release(tasks[0].id)

    threading.Thread(target=finish_first).start()
    outcomes = {o.task.id[0]: o for o in _fanout(cluster, ledger=ledger).run(tasks)}
    assert outcomes["a"].settled and outcomes["a"].attempts == 0
    assert not outcomes["b"].settled and outcomes["b"].result["ms"] == 3.0
    lines = tunedb_lines(mine)
    assert sorted((line["job"][0], line["ms"]) for line in lines) == [("a", 5.0), ("b", 3.0)]


# ---------------------------------------------------------------- the tuning client
def _tune(cluster, db, shapes=SHAPES, key="fake", **kw):
    return tune_shapes(shapes, "h100", tracker=cluster.addr, key=key, db=db, **{
        "top_k": 3, "timeout_s": 10.0, "search_workers": 1, "log": io.StringIO(), **kw})


def test_tune_records_every_plan_and_resumes(cluster, tmp_path):
    db = TuningDatabase(str(tmp_path))
    results = _tune(cluster, db)
    assert [len(r.records) for r in results] == [3, 3]
    for r in results:
        assert all(x.status is Status.OK and x.key == r.planned.key for x in r.records)
        assert r.best.ms == min(fake_ms(p) for p in r.planned.plans)
        assert db.best_plan(r.planned.key).to_dict() == r.best.plan
    lines = tunedb_lines(db)
    assert len(lines) == 6 == len({line["job"] for line in lines})

    # an interrupted run: a database holding two of the six; the rerun measures only the other four
    partial = TuningDatabase(str(tmp_path / "partial"))
    for line in lines[:2]:
        partial.append(db.job(line["job"]))
    again = _tune(cluster, partial)
    assert [r.best.ms for r in again] == [r.best.ms for r in results]
    assert sorted(line["job"] for line in tunedb_lines(partial)) == sorted(line["job"] for line in lines)
    assert len(_tune(cluster, db)) == 2 and len(tunedb_lines(db)) == 6  # all settled: nothing measured again


def test_tune_precompiles_into_tilelang_cache(cluster, tmp_path, monkeypatch):
    """--precompile: each plan is compiled here (nvcc, no GPU) before it goes out."""
    compiled = []
    real = cluster_module.compile_one
    monkeypatch.setattr(cluster_module, "compile_one", lambda job: compiled.append((job[0], real(job))))
    [r] = _tune(cluster, TuningDatabase(str(tmp_path)), SHAPES[:1], precompile=True, top_k=1)
    assert compiled == [("gemm", "")] and [x.status for x in r.records] == [Status.OK]


def test_two_clients_on_one_database_measure_each_plan_once(cluster, tmp_path):
    """Two runs at once on overlapping shapes: every plan of both recorded, none twice."""
    common = Shape("gemm", {"M": 512, "N": 1024, "K": 512})
    runs = {"a": [common, SHAPES[0]], "b": [common, SHAPES[1]]}
    results, errors = {}, []

    def client(name: str) -> None:
        try:
            results[name] = _tune(cluster, TuningDatabase(str(tmp_path)), runs[name])
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=client, args=(n,)) for n in runs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors
    lines = tunedb_lines(TuningDatabase(str(tmp_path)))
    jobs = [line["job"] for line in lines]
    assert len(jobs) == len(set(jobs)) == 9  # 3 shapes x 3 plans
    assert all(line["status"] == "ok" for line in lines)
    assert results["a"][0].best.ms == results["b"][0].best.ms
    assert {r.job for r in results["a"][0].records} == {r.job for r in results["b"][0].records}


def test_tune_survives_a_worker_that_dies(cluster, tmp_path):
    cluster.start("crashy", 2, env={"PT_TVM_FAKE_CRASH_MARK": str(tmp_path / "crashed")})
    db = TuningDatabase(str(tmp_path / "db"))
    results = _tune(cluster, db, SHAPES[:1], key="crashy")
    assert os.path.exists(tmp_path / "crashed")
    records = results[0].records
    assert len(records) == 3 and all(r.status is Status.OK for r in records)
    assert sorted(r.attempts for r in records) == [1, 1, 2]
    assert len(tunedb_lines(db)) == 3


# ---------------------------------------------------------------- benchmarks over the tracker
def test_benchmarks_run_sends_whole_configs_and_merges(cluster, tmp_path, monkeypatch):
    """Every config's systems come from one worker; the rows keep suite order; a config whose
    worker hangs twice becomes invalid rows that say why."""
    out = tmp_path / "run.json"
    hang = Config("smoke", "gemm", {"M": 64, "N": 64, "K": 64, "dtype": "float16"}, ("pt-tvm", "cublas"), "hang")
    smoke = suite_configs("smoke")
    monkeypatch.setitem(SUITES, "smoke", lambda: [*smoke, hang])
    code = bench_main(["run", "--suite", "smoke", "--tracker", f"{cluster.addr[0]}:{cluster.addr[1]}", "--key", "fake",
                       "--target", "h100", "--config-timeout", "2", "--out", str(out)])
    assert code == 0
    run = json.loads(out.read_text())
    rows, head = run["rows"], run["header"]
    assert [(r["kernel"], r["system"]) for r in rows] == [(c.kernel, s) for c in [*smoke, hang] for s in c.systems]
    measured = [r for r in rows if r.get("note") != "hang"]
    for c in smoke:
        pids = {r["pid"] for r in measured if r["config"] == dict(c.problem)}
        assert len(pids) == 1  # all systems of a config in one session of one worker
    assert all(r["valid"] is False and "expired" in r["error"] for r in rows if r.get("note") == "hang")
    assert head["device"] == "fake GPU" and len(head["parts"]) == len(smoke)


# ---------------------------------------------------------------- the command
def test_tune_command_with_a_model_file(cluster, tmp_path, capsys):
    shapes = tmp_path / "shapes.json"
    shapes.write_text(json.dumps([{"template": s.template, "params": dict(s.params)} for s in SHAPES]))
    out = tmp_path / "tuned.json"
    argv = ["tune", "--model", str(shapes), "--tracker", f"{cluster.addr[0]}:{cluster.addr[1]}", "--key", "fake",
            "--target", "h100", "--db", str(tmp_path / "db"), "--top-k", "2", "--search-workers", "1",
            "--out", str(out)]
    assert main(argv) == 0
    doc = json.loads(out.read_text())
    assert [len(s["records"]) for s in doc["shapes"]] == [2, 2] and doc["wall_s"] > 0
    assert all(s["best"]["ms"] == min(r["ms"] for r in s["records"]) for s in doc["shapes"])
    assert "2/2 plans ok" in capsys.readouterr().out


@pytest.mark.parametrize("content, message", [
    ("not json", "cannot read shapes file"),
    ("[]", "non-empty JSON list"),
    ('[{"template": "gemm", "shape": {}}]', "entry 0 is not"),
    ('[{"template": "nope"}]', "unknown template 'nope'"),
    ('[{"template": "gemm", "params": {"Q": 1}}]', "no parameter 'Q'"),
])
def test_tune_command_bad_model_file(tmp_path, capsys, content, message):
    shapes = tmp_path / "shapes.json"
    shapes.write_text(content)
    argv = ["tune", "--model", str(shapes), "--tracker", "127.0.0.1:1", "--key", "k", "--target", "h100",
            "--db", str(tmp_path)]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_tune_command_bad_tracker_address(capsys):
    with pytest.raises(SystemExit):
        main(["tune", "gemm", "--tracker", "nohost", "--key", "k", "--target", "h100"])
    assert "expected HOST:PORT" in capsys.readouterr().err


if __name__ == "__main__":
    tilelang.testing.main()
