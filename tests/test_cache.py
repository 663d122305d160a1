"""Plan cache: key stability, round trip, corrupt entries, concurrent writers (CPU only)."""
from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import warnings

import pytest
import tilelang.testing

from pt_tvm import extract, hw, templates
from pt_tvm.cache import (
    FORMAT,
    PlanCache,
    PlanCacheWarning,
    atomic_write,
    model_fingerprint,
    plan_key,
    structure_key,
)
from pt_tvm.plan import ExecutionPlan
from pt_tvm.search import SearchSpace, search


def _graph(**problem):
    return extract(templates.get("gemm").build(**{"M": 512, "N": 512, "K": 512, **problem}), "h100")


@pytest.fixture(scope="module")
def gemm():
    g = _graph()
    return g, search([g], hw.get("h100")).best.plan


# ---------------------------------------------------------------- keys
def test_same_input_same_key(gemm):
    g, _ = gemm
    again = _graph()
    assert structure_key(g) == structure_key(again)
    assert len(structure_key(g)) == 64 and int(structure_key(g), 16) >= 0
    assert plan_key(g, "h100", {"seed": 0}) == plan_key(again, "h100", {"seed": 0})


def test_renamed_function_hits(gemm):
    g, _ = gemm
    renamed = extract(templates.get("gemm").build(M=512, N=512, K=512).with_attr("global_symbol", "my_mm"), "h100")
    assert renamed.name == "my_mm" != g.name
    assert structure_key(renamed) == structure_key(g)
    assert plan_key(renamed, "h100") == plan_key(g, "h100")


@pytest.mark.parametrize("problem", [{"M": 256}, {"K": 1024}, {"dtype": "bfloat16"}])
def test_shape_or_dtype_changes_key(gemm, problem):
    g, _ = gemm
    other = _graph(**problem)
    assert structure_key(other) != structure_key(g)
    assert plan_key(other, "h100") != plan_key(g, "h100")


def test_work_the_search_reads_changes_key(gemm):
    g, _ = gemm
    t = g.stasks[0]
    more_sfu = g.with_stasks([dataclasses.replace(t, sfu_ops=t.sfu_ops + 1), *g.stasks[1:]])
    fewer_trips = dataclasses.replace(g, loop=dataclasses.replace(g.loop, trip_count=4.0))
    assert len({structure_key(g), structure_key(more_sfu), structure_key(fewer_trips)}) == 3


def test_target_and_extra_change_key(gemm):
    g, _ = gemm
    keys = {plan_key(g, "h100"), plan_key(g, "a100"), plan_key(g, "h100", {"seed": 1}),
            plan_key(g, "h100", {"space": SearchSpace()}), plan_key(g, "h100", {"space": SearchSpace(max_stage=2)})}
    assert None not in keys and len(keys) == 5
    assert plan_key(g, "h100", {"space": SearchSpace()}) == plan_key(g, "h100", {"space": SearchSpace()})


def test_model_fingerprint_reads_the_code_that_chooses_plans(monkeypatch, tmp_path):
    """The fingerprint is a sha256 over the source of the packages that choose plans (pt_tvm, pt_tvm.passes,
    pt_tvm.templates): the same code gives the same one, a changed module another."""
    from pt_tvm import cache

    fingerprint = model_fingerprint()
    assert len(fingerprint) == 64 and int(fingerprint, 16) >= 0
    (tmp_path / "chooser").mkdir()
    (tmp_path / "chooser" / "__init__.py").write_text("")
    (tmp_path / "chooser" / "cost.py").write_text("STRETCH = 1.3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(cache, "_MODEL_PACKAGES", (*cache._MODEL_PACKAGES, "chooser"))
    seen = set()
    try:
        for source in ("STRETCH = 1.3\n", "STRETCH = 1.3\n", "STRETCH = 1.2\n"):
            (tmp_path / "chooser" / "cost.py").write_text(source)
            model_fingerprint.cache_clear()
            seen.add(model_fingerprint())
    finally:
        model_fingerprint.cache_clear()
    assert len(seen) == 2 and fingerprint not in seen


def test_extra_without_stable_identity_is_not_cached(gemm):
    g, _ = gemm
    assert plan_key(g, "h100", {"priority": lambda t: 0}) is None
    assert plan_key(g, "h100", {"opts": [object()]}) is None


# ---------------------------------------------------------------- store
def test_round_trip(gemm, tmp_path):
    g, plan = gemm
    cache = PlanCache(str(tmp_path))
    key = plan_key(g, "h100")
    assert cache.get(key) is None and len(cache) == 0
    path = cache.put(key, plan, meta={"seconds": 1.5e-5})
    assert path == os.path.join(str(tmp_path), "plans-v1", f"{key}.json")
    assert cache.get(key) == plan
    assert PlanCache(str(tmp_path)).get(key) == plan  # another instance, same directory
    with open(path) as f:
        doc = json.load(f)
    assert doc["format"] == FORMAT and doc["key"] == key and doc["meta"] == {"seconds": 1.5e-5}
    assert ExecutionPlan.from_dict(doc["plan"]) == plan


def test_default_directory_from_env(tmp_path, monkeypatch):
    monkeypatch.setenv("PT_TVM_CACHE_DIR", str(tmp_path / "root"))
    assert PlanCache().directory == str(tmp_path / "root" / "plans-v1")
    assert not (tmp_path / "root").exists()  # nothing is created before the first put


def test_key_must_be_a_file_name(tmp_path, gemm):
    with pytest.raises(ValueError, match="plan cache key"):
        PlanCache(str(tmp_path)).put("../escape", gemm[1])


def _truncated(text: str) -> bytes:
    return text[: len(text) // 2].encode()


def _wrong_format(text: str) -> bytes:
    return json.dumps({**json.loads(text), "format": "pt-tvm.plan-cache/0"}).encode()


def _other_key(text: str) -> bytes:
    return json.dumps({**json.loads(text), "key": "0" * 64}).encode()


def _broken_plan(text: str) -> bytes:
    doc = json.loads(text)
    del doc["plan"]["steps"]
    return json.dumps(doc).encode()


@pytest.mark.parametrize("corrupt", [_truncated, _wrong_format, _other_key, _broken_plan,
                                     lambda _: b"\xff\xfe\x00garbage\x80", lambda _: b"[1, 2]"])
def test_corrupt_entry_warns_is_removed_and_rebuilt(gemm, tmp_path, corrupt):
    g, plan = gemm
    cache = PlanCache(str(tmp_path))
    key = plan_key(g, "h100")
    path = cache.put(key, plan)
    with open(path) as f:
        text = f.read()
    with open(path, "wb") as f:
        f.write(corrupt(text))
    with pytest.warns(PlanCacheWarning, match=r"corrupt plan cache entry .*rebuilding"):
        assert cache.get(key) is None
    assert not os.path.exists(path)
    cache.put(key, plan)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache.get(key) == plan


def _writer(directory: str, key: str, plan: ExecutionPlan, writer: int, puts: int, start) -> None:
    warnings.simplefilter("error", PlanCacheWarning)  # a torn read fails the writer
    cache = PlanCache(directory)
    start.wait()
    for i in range(puts):
        cache.put(key, plan, meta={"writer": writer, "put": i})
        assert cache.get(key) == plan


def test_concurrent_writers_leave_one_readable_entry(gemm, tmp_path):
    g, plan = gemm
    key = plan_key(g, "h100")
    ctx = multiprocessing.get_context("fork")
    start = ctx.Barrier(4)
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), key, plan, w, 20, start)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    cache = PlanCache(str(tmp_path))
    assert os.listdir(cache.directory) == [f"{key}.json"]  # no temporary files left behind
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache.get(key) == plan
    with open(cache.path(key)) as f:
        meta = json.load(f)["meta"]
    assert meta["writer"] in range(4) and meta["put"] in range(20)


def test_clear_and_len(gemm, tmp_path):
    _, plan = gemm
    cache = PlanCache(str(tmp_path))
    cache.clear()  # no directory yet
    for k in ("a1", "b2", "c3"):
        cache.put(k, plan)
    cache.put("a1", plan)
    assert len(cache) == 3
    cache.clear()
    assert len(cache) == 0 and cache.get("b2") is None


def test_atomic_write_creates_parents_and_replaces(tmp_path):
    path = str(tmp_path / "a" / "b" / "x.json")
    atomic_write(path, "one")
    atomic_write(path, "two")
    with open(path) as f:
        assert f.read() == "two"
    assert os.listdir(tmp_path / "a" / "b") == ["x.json"]


if __name__ == "__main__":
    tilelang.testing.main()
