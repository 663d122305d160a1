"""The worker's measurement function: a plan that does not build is the plan's error (CPU); on a GPU it
builds, checks and times a plan, and serves it through a tracker from forked sessions."""
from __future__ import annotations

import io
import json

import pytest
import tilelang.testing

from pt_tvm import hw
from pt_tvm.compiler import schedule_template
from pt_tvm.tune import measure_one
from pt_tvm.worker import _endpoint, load_function

GEMM = {"M": 1024, "N": 1024, "K": 1024, "dtype": "float16"}


@pytest.fixture(scope="module")
def gemm_plan():
    vdev = hw.get("h100")
    result, problem, _ = schedule_template("gemm", vdev, params=GEMM)
    return {"template": "gemm", "problem": problem, "plan": result.best.plan.to_dict(), "chip": vdev.to_dict(),
            "warmup_ms": 10.0, "rep_ms": 50.0}


def test_a_plan_that_does_not_build_is_its_error(gemm_plan):
    broken = {**gemm_plan, "plan": {**gemm_plan["plan"], "tile": {**gemm_plan["plan"]["tile"], "block_M": 48}}}
    out = measure_one(broken)
    assert out["error"].startswith("build: ") and "ms" not in out and out["versions"]["pt_tvm"]


def test_endpoint_answers_json_and_turns_exceptions_into_errors():
    echo = _endpoint(lambda job: {"ms": job["x"]})
    assert json.loads(echo(json.dumps({"x": 2.0})))["ms"] == 2.0
    answer = json.loads(echo(json.dumps({})))
    assert answer["error"] == "worker: KeyError: 'x'" and answer["worker_s"] >= 0


@pytest.mark.parametrize("spec, message", [("nocolon", "MODULE:FUNCTION"), ("pt_tvm.worker:nope", "cannot load"),
                                           ("no_such_module_x:f", "cannot load"), ("pt_tvm.worker:MEASURE",
                                                                                   "not callable")])
def test_load_function_names_what_is_wrong(spec, message):
    with pytest.raises(ValueError, match=message):
        load_function(spec)


@pytest.mark.gpu
def test_measure_one_on_the_gpu(gemm_plan):
    import torch

    vdev = hw.from_device()
    job = {**gemm_plan, "chip": vdev.to_dict(), "plan": {**gemm_plan["plan"], "target": vdev.name}}
    out = measure_one(job)
    assert "error" not in out, out.get("error")
    assert 0 < out["p20_ms"] <= out["ms"] <= out["p80_ms"] and out["calls"] >= 10
    assert out["rel_err"] < 2e-3 and out["versions"]["device"] == torch.cuda.get_device_name()


@pytest.mark.gpu
def test_tuning_through_a_tracker_on_the_gpu(tmp_path):
    """The real worker (pt-tvm's measurement, TileLang and torch preloaded, sessions forked) on this GPU."""
    pytest.importorskip("tornado")
    import threading

    from tilelang import tvm  # noqa: F401
    from tvm.rpc.tracker import Tracker

    from pt_tvm.cluster import Shape, tune_shapes
    from pt_tvm.fanout import TrackerLink, serve
    from pt_tvm.tunedb import Status, TuningDatabase

    vdev = hw.from_device()
    tracker = Tracker("127.0.0.1", port=9190, port_end=9990, silent=True)
    addr, stop = ("127.0.0.1", tracker.port), threading.Event()
    thread = threading.Thread(target=serve, args=(addr, "gpu", ["0"]), daemon=True,
                              kwargs={"host": "127.0.0.1", "port": tracker.port + 1, "port_end": 9999,
                                      "stop": stop.is_set, "check_s": 1.0, "log": io.StringIO()})
    thread.start()
    try:
        link = TrackerLink(addr)
        while not link.servers("gpu"):
            assert thread.is_alive()
        link.close()
        [result] = tune_shapes([Shape("gemm", GEMM)], vdev, tracker=addr, key="gpu", db=TuningDatabase(str(tmp_path)),
                               top_k=2, rep_ms=100.0, search_workers=1, log=io.StringIO())
    finally:
        stop.set()
        thread.join(30)
        tracker.terminate()
    assert [r.status for r in result.records] == [Status.OK, Status.OK], [r.error for r in result.records]
    assert result.best.versions["device"] and result.best.ms > 0


if __name__ == "__main__":
    tilelang.testing.main()
