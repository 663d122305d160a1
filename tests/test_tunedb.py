"""Tuning database: records, keys, corrupt lines, merging, concurrent writers, claims (CPU only)."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import warnings

import pytest
import tilelang.testing
from _util import tunedb_lines

from pt_tvm import extract, hw, templates
from pt_tvm.search import search
from pt_tvm.tunedb import FORMAT, Record, Status, TuningDatabase, TuningDatabaseWarning, job_id, tuning_key


@pytest.fixture(scope="module")
def gemm():
    """(graph, key, plan dict) of a small GEMM on h100."""
    problem = {"M": 512, "N": 512, "K": 512, "dtype": "float16"}
    graph = extract(templates.get("gemm").build(**problem), "h100")
    plan = search([graph], hw.get("h100")).best.plan
    return graph, tuning_key(graph, hw.get("h100"), "gemm", problem), plan.to_dict()


def _record(key: str, plan: dict, ms: float | None, status: Status = Status.OK, **kw) -> Record:
    plan = {**plan, "note": kw.pop("variant", 0)}  # a distinct job per variant
    return Record(key, job_id(key, plan), "gemm", {"M": 512}, "h100", plan, status, ms=ms, **kw)


# ---------------------------------------------------------------- keys
def test_key_names_structure_problem_and_chip(gemm):
    graph, key, _ = gemm
    problem = {"M": 512, "N": 512, "K": 512, "dtype": "float16"}
    assert tuning_key(graph, hw.get("h100"), "gemm", problem) == key
    other = {tuning_key(graph, hw.get("h200"), "gemm", problem),  # same structure, another chip
             tuning_key(graph, hw.get("h100"), "gemm", {**problem, "M": 1024}),
             tuning_key(extract(templates.get("gemm").build(M=1024, N=512, K=512), "h100"), hw.get("h100"), "gemm",
                        problem)}
    assert key not in other and len(other) == 3


def test_job_id_is_plan_and_key(gemm):
    _, key, plan = gemm
    assert job_id(key, plan) == job_id(key, json.loads(json.dumps(plan)))
    assert job_id(key, plan) != job_id(key, {**plan, "num_stages": 9}) != job_id("0" * 64, plan)


# ---------------------------------------------------------------- records
def test_round_trip_best_and_plan(gemm, tmp_path):
    _, key, plan = gemm
    db = TuningDatabase(str(tmp_path))
    for i, ms in enumerate([0.5, 0.3, 0.4]):
        db.append(_record(key, plan, ms, variant=i, worker=f"w{i}"))
    db.append(_record(key, plan, None, Status.FAILED, variant=9, error="hung"))
    db.close()
    again = TuningDatabase(str(tmp_path))
    assert [r.ms for r in again.records(key)] == [0.5, 0.3, 0.4, None]
    assert again.best(key).ms == 0.3 and again.best(key).worker == "w1"
    assert again.best_plan(key).num_stages == plan["num_stages"]
    assert again.best("f" * 64) is None and again.best_plan("f" * 64) is None
    assert again.job(job_id(key, {**plan, "note": 9})).status is Status.FAILED


def test_best_with_a_margin_keeps_the_model_pick_unless_clearly_beaten(gemm, tmp_path):
    """Measured refinement's rule over the database: the record with the lowest predicted time (the model's pick)
    stays the best unless another measured faster by more than the margin, or it did not run."""
    _, key, plan = gemm
    db = TuningDatabase(str(tmp_path))
    for i, (ms, predicted) in enumerate([(1.0, 0.8), (0.99, 0.9), (1.2, 1.0)]):
        db.append(_record(key, plan, ms, variant=i, meta={"predicted_ms": predicted}))
    assert db.best(key).ms == 0.99 and db.best(key, 0.015).ms == 1.0
    db.append(_record(key, plan, 0.97, variant=3, meta={"predicted_ms": 0.95}))
    assert db.best(key, 0.015).ms == 0.97
    other = "e" * 64
    db.append(_record(other, plan, None, Status.FAILED, variant=0, error="hung", meta={"predicted_ms": 0.5}))
    db.append(_record(other, plan, 0.4, variant=1, meta={"predicted_ms": 0.6}))
    db.append(_record(other, plan, 0.3, variant=2, meta={"predicted_ms": 0.7}))
    assert db.best(other, 0.015).ms == 0.3  # the model's pick failed: the fastest


def test_an_ok_record_needs_a_time(gemm):
    _, key, plan = gemm
    with pytest.raises(ValueError, match="positive ms"):
        _record(key, plan, None)


def test_corrupt_lines_are_skipped_with_file_and_line(gemm, tmp_path):
    _, key, plan = gemm
    db = TuningDatabase(str(tmp_path))
    db.append(_record(key, plan, 0.5, variant=1))
    db.close()
    path = os.path.join(db.directory, os.listdir(db.directory)[0])
    good = _record(key, plan, 0.25, variant=2).to_json()
    with open(path, "a") as f:
        f.write('{"format": "pt-tvm.tuning-record/1", "key": \n')          # line 2: not JSON
        f.write(json.dumps({"format": FORMAT, "key": key}) + "\n")       # line 3: fields missing
        f.write(json.dumps({"format": "other/9"}) + "\n")                # line 4: another format
        f.write(good + "\n")                                             # line 5: fine
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        records = TuningDatabase(str(tmp_path)).records()
    assert [r.ms for r in records] == [0.5, 0.25]
    messages = [str(w.message) for w in caught if w.category is TuningDatabaseWarning]
    assert [m.split(" (")[0] for m in messages] == [f"corrupt tuning record {path}:{n}" for n in (2, 3, 4)]


def test_unfinished_last_line_waits_then_counts_as_corrupt(gemm, tmp_path):
    """A line still being written is not read (no warning); one left unfinished by a dead writer is reported."""
    _, key, plan = gemm
    db = TuningDatabase(str(tmp_path))
    db.append(_record(key, plan, 0.5, variant=1))
    path = os.path.join(db.directory, os.listdir(db.directory)[0])
    whole = _record(key, plan, 0.25, variant=2).to_json() + "\n"
    with open(path, "a") as f:
        f.write(whole[:40])
    reader = TuningDatabase(str(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(reader.records()) == 1
    with open(path, "a") as f:  # the writer finishes its line
        f.write(whole[40:])
    assert len(reader.records()) == 2
    with open(path, "a") as f:  # this writer dies mid-line
        f.write(whole[:40])
    old = time.time() - 3600
    os.utime(path, (old, old))
    with pytest.warns(TuningDatabaseWarning, match=r"jsonl:3 \(JSONDecodeError"):
        assert len(TuningDatabase(str(tmp_path)).records()) == 2


def test_merge_adds_each_record_once(gemm, tmp_path):
    _, key, plan = gemm
    a, b = TuningDatabase(str(tmp_path / "a")), TuningDatabase(str(tmp_path / "b"))
    a.append(_record(key, plan, 0.5, variant=1))
    b.append(_record(key, plan, 0.2, variant=2))
    b.append(_record(key, plan, 0.7, variant=3))
    assert a.merge(str(tmp_path / "b")) == 2
    assert a.merge(str(tmp_path / "b")) == 0
    assert b.merge(str(tmp_path / "a")) == 1
    assert sorted(r.id for r in a.records()) == sorted(r.id for r in b.records())
    assert a.best(key).ms == b.best(key).ms == 0.2


_WRITER = """
import json, sys
from pt_tvm.tunedb import Record, Status, TuningDatabase, job_id
root, key, plan, n, tag = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
db = TuningDatabase(root)
for i in range(n):
    p = {**plan, "note": f"{tag}-{i}"}
    db.append(Record(key, job_id(key, p), "gemm", {"M": 512}, "h100", p, Status.OK, ms=0.1 + i))
"""


def test_concurrent_writers_lose_nothing(gemm, tmp_path):
    _, key, plan = gemm
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path), key, json.dumps(plan), "50", str(t)])
             for t in range(3)]
    assert [p.wait(60) for p in procs] == [0] * 3
    db = TuningDatabase(str(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        records = db.records()
    assert len(records) == len({r.job for r in records}) == 150 == len(tunedb_lines(db))


def test_tunedb_command_merges_and_summarizes(gemm, tmp_path, capsys):
    from pt_tvm.cli import main

    _, key, plan = gemm
    other = TuningDatabase(str(tmp_path / "other"))
    other.append(_record(key, plan, 0.4, variant=1, meta={"note": "deep pipeline"}))
    other.append(_record(key, plan, None, Status.FAILED, variant=2, error="hung"))
    other.close()
    assert main(["tunedb", "merge", str(tmp_path / "other"), "--db", str(tmp_path / "mine")]) == 0
    assert main(["tunedb", "summary", "--db", str(tmp_path / "mine")]) == 0
    out = capsys.readouterr().out
    assert "merged 2 records" in out and f"{key[:12]} gemm h100 2 records, 1 ok, best 0.4000 ms (deep pipeline)" in out


# ---------------------------------------------------------------- claims
def test_claims_are_exclusive_renewable_and_released(tmp_path):
    a, b = TuningDatabase(str(tmp_path)), TuningDatabase(str(tmp_path))
    job = "ab" * 32
    assert a.claim(job, 60) and not b.claim(job, 60)
    assert a.claim(job, 60)  # renewal by its owner
    b.release(job)           # not b's to release
    assert not b.claim(job, 60)
    a.release(job)
    assert b.claim(job, 60) and not a.claim(job, 60)


def test_stale_claims_are_taken_over(tmp_path):
    a, b = TuningDatabase(str(tmp_path)), TuningDatabase(str(tmp_path))
    assert a.claim("1" * 64, 0.05)
    time.sleep(0.1)
    assert b.claim("1" * 64, 60)  # expired
    path = os.path.join(a.directory, "claims", "2" * 64)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with open(path, "w") as f:  # a claim of a process of this host that is gone
        json.dump({"owner": "x", "host": socket.gethostname(), "pid": dead.pid, "expires": time.time() + 3600}, f)
    assert a.claim("2" * 64, 60)
    with open(path, "w") as f:
        f.write("{half a claim")  # unreadable: nobody's
    assert b.claim("2" * 64, 60)
    assert not [n for n in os.listdir(os.path.dirname(path)) if n.endswith((".stale", ".tmp"))]


def test_bad_job_id_is_refused(tmp_path):
    with pytest.raises(ValueError, match="alphanumeric"):
        TuningDatabase(str(tmp_path)).claim("../etc", 1)


if __name__ == "__main__":
    tilelang.testing.main()
