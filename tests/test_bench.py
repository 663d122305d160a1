"""The benchmark harness on a CPU: dry runs, suites, report, regression check, search-time (no GPU)."""
from __future__ import annotations

import copy
import json
import math
import os

import pytest
import tilelang.testing

from benchmarks import cli as bench_cli
from benchmarks.compare import compare_runs
from benchmarks.configs import SUITES, filter_systems, subsample, suite_configs
from benchmarks.report import config_label, geomean
from benchmarks.searchtime import PUBLISHED, format_table, measure_search_times
from benchmarks.suite import Config
from benchmarks.systems import PEERS_BY_SUITE

ROW_FIELDS = {"suite", "kernel", "config", "system", "ms", "tflops", "rel_err", "valid"}
HEADER_FIELDS = {"device", "driver", "cuda", "torch", "tilelang", "pt_tvm", "git_commit", "date", "command"}


def _load(path) -> dict:
    with open(path) as f:
        return json.load(f)


def _check_dry_run(run: dict) -> None:
    assert HEADER_FIELDS <= set(run["header"]) and run["header"]["dry_run"] is True
    assert run["rows"], "a dry run writes rows"
    for row in run["rows"]:
        assert ROW_FIELDS <= set(row), row
        assert row["dry_run"] is True and row["ms"] is None and row["tflops"] is None and row["rel_err"] is None
        if row["system"] in ("pt-tvm", "pt-tvm-model", "tilelang-auto"):
            assert row["valid"] is True, row.get("error")
            assert row["source_chars"] > 0 and row["lower_s"] >= 0
        else:
            assert row["valid"] is None and row["skipped"]
        if row["system"].startswith("pt-tvm"):
            assert row["plan"] and row["tile"] and row["search_s"] >= 0 and row["predicted_ms"] > 0


@pytest.fixture(scope="module")
def smoke_dry(tmp_path_factory):
    out = tmp_path_factory.mktemp("dry") / "smoke.json"
    rc = bench_cli.main(["run", "--suite", "smoke", "--dry-run", "--target", "h100", "--tune-top-k", "2",
                         "--out", str(out)])
    assert rc == 0
    return out


def test_dry_run_smoke(smoke_dry):
    run = _load(smoke_dry)
    _check_dry_run(run)
    assert run["header"]["target"] == "h100" and run["header"]["suite"] == "smoke"
    assert "--dry-run" in run["header"]["command"]
    expected = [(c.kernel, s) for c in suite_configs("smoke") for s in c.systems]
    assert [(r["kernel"], r["system"]) for r in run["rows"]] == expected
    tuned = [r for r in run["rows"] if r["system"] == "pt-tvm"]
    assert all(1 <= len(r["tune_candidates"]) <= 2 for r in tuned)


def test_dry_run_attention_subset(tmp_path):
    out = tmp_path / "att.json"
    rc = bench_cli.main(["run", "--suite", "attention-core", "--max-configs", "2", "--dry-run",
                         "--systems", "pt-tvm,tilelang-auto,fa3", "--tune-top-k", "1", "--out", str(out)])
    assert rc == 0
    run = _load(out)
    _check_dry_run(run)
    assert {r["suite"] for r in run["rows"]} == {"attention-core"}
    assert [r["system"] for r in run["rows"]] == ["pt-tvm", "tilelang-auto", "fa3"] * 2
    configs = {json.dumps(r["config"], sort_keys=True) for r in run["rows"]}
    assert len(configs) == 2


def test_run_without_gpu_needs_dry_run(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(SystemExit, match="--dry-run"):
        bench_cli.main(["run", "--suite", "smoke", "--out", str(tmp_path / "x.json")])


# --- suites -----------------------------------------------------------------------------------------------------


def test_attention_grid_is_the_fa3_grid():
    att = suite_configs("attention")
    mha = [c for c in att if c.problem["kv_heads"] == c.problem["heads"]]
    gqa = [c for c in att if c.problem["kv_heads"] != c.problem["heads"]]
    assert len(mha) == 2 * 3 * 6 * 2
    assert {c.problem["seq_len"] for c in mha} == {512, 1024, 2048, 4096, 8192, 16384}
    for c in att:
        p = c.problem
        assert p["batch"] * p["seq_len"] == 16384 and p["heads"] * p["dim"] == 2048
        assert set(c.systems) == set(PEERS_BY_SUITE["attention"])
    assert gqa and all(c.problem["kv_heads"] == 8 for c in gqa)
    assert {c.problem["dtype"] for c in att} == {"float16", "bfloat16"}
    assert 20 <= len(suite_configs("attention-core")) <= 36


def test_gemm_grid_has_square_and_llama_shapes():
    gemm = suite_configs("gemm")
    shapes = {(c.problem["M"], c.problem["N"], c.problem["K"]) for c in gemm if c.kernel == "gemm"}
    assert {(n, n, n) for n in (2048, 4096, 8192, 16384)} <= shapes
    assert {(8192, 6144, 4096), (8192, 14336, 4096), (8192, 4096, 14336), (8192, 10240, 8192),
            (8192, 28672, 8192), (8192, 8192, 28672)} <= shapes
    assert {c.kernel for c in gemm} == {"gemm", "gemm_rowsum"}
    assert {"pt-tvm", "cublas", "tilelang-auto", "torch-compile"} <= set(gemm[0].systems)
    assert len(suite_configs("all")) == len(suite_configs("attention")) + len(gemm)
    assert set(SUITES) >= {"smoke", "attention", "attention-core", "gemm", "gemm-core"}


def test_subsample_and_system_filter():
    configs = suite_configs("all")
    picked = subsample(configs, 8)
    assert len(picked) == 8 and picked == subsample(configs, 8)  # deterministic
    assert {c.kernel for c in picked} == {"flash_attention", "gemm", "gemm_rowsum"}
    assert len({c.problem.get("seq_len") for c in picked if c.kernel == "flash_attention"}) > 1
    assert subsample(configs, None) == configs
    kept = filter_systems(configs[:3], ["pt-tvm", "fa3"])
    assert all(set(c.systems) <= {"pt-tvm", "fa3"} for c in kept)
    with pytest.raises(SystemExit, match="unknown system"):
        filter_systems(configs, ["nope"])
    with pytest.raises(SystemExit, match="unknown suite"):
        suite_configs("nope")


# --- a synthetic timed run ------------------------------------------------------------------------------------

FA_PEERS = ("pt-tvm", "pt-tvm-model", "tilelang-auto", "cudnn-sdpa", "fa3")
# TFLOP/s per (seq_len, system); None: an invalid row
FA_TFLOPS = {
    1024: {"pt-tvm": 500.0, "pt-tvm-model": 480.0, "tilelang-auto": 400.0, "cudnn-sdpa": 450.0, "fa3": 550.0},
    4096: {"pt-tvm": 600.0, "pt-tvm-model": 560.0, "tilelang-auto": None, "cudnn-sdpa": 500.0, "fa3": 480.0},
}
GEMM_TFLOPS = {"pt-tvm": 600.0, "cublas": 640.0, "tilelang-auto": 400.0}


def _fa_config(seq_len: int) -> dict:
    return dict(batch=16384 // seq_len, heads=16, kv_heads=16, seq_len=seq_len, dim=128, causal=False,
                dtype="float16")


def _row(kernel: str, config: dict, system: str, tflops: float | None, flops: float) -> dict:
    row = {"suite": "synthetic", "kernel": kernel, "config": config, "system": system, "ms": None,
           "tflops": None, "rel_err": 1e-3, "valid": tflops is not None}
    if tflops is not None:
        row.update(ms=flops / (tflops * 1e12) * 1e3, tflops=tflops)
    else:
        row.update(rel_err=None, error="InternalError: Failed to set the allowed dynamic shared memory size")
    return row


def _synthetic_run() -> dict:
    rows = []
    for s, by_system in FA_TFLOPS.items():
        cfg = _fa_config(s)
        flops = 4.0 * cfg["batch"] * cfg["heads"] * s * s * cfg["dim"]
        rows += [_row("flash_attention", cfg, sys_, tf, flops) for sys_, tf in by_system.items()]
    gcfg = dict(M=8192, N=8192, K=8192, dtype="float16")
    rows += [_row("gemm", gcfg, sys_, tf, 2.0 * 8192**3) for sys_, tf in GEMM_TFLOPS.items()]
    header = {"device": "NVIDIA H100 80GB HBM3 (synthetic)", "driver": "0", "cuda": "12.8", "torch": "x",
              "tilelang": "0.1.15", "pt_tvm": "0.1.0", "git_commit": "abc", "date": "2026-01-01T00:00:00+00:00",
              "command": "synthetic"}
    return {"header": header, "rows": rows}


def _write(path, run) -> str:
    with open(path, "w") as f:
        json.dump(run, f)
    return str(path)


def test_report_table_and_charts(tmp_path):
    run_path = _write(tmp_path / "run.json", _synthetic_run())
    out_dir = tmp_path / "report"
    assert bench_cli.main(["report", run_path, "--out-dir", str(out_dir)]) == 0
    table = (out_dir / "table.md").read_text()
    for col in ("pt-tvm/pt-tvm-model", "pt-tvm/tilelang-auto", "pt-tvm/cudnn-sdpa", "pt-tvm/fa3",
                "pt-tvm/best peer", "pt-tvm/cublas", "best peer"):
        assert col in table
    # per-config ratios: 500/450, 500/550 (best peer fa3); 600/500 (best peer cudnn), 600/480
    for r in ("1.11x", "0.91x", "1.20x", "1.25x"):
        assert r in table
    assert "fa3 (550)" in table and "cudnn-sdpa (500)" in table
    fa_best = geomean([500 / 550, 600 / 500])
    assert f"**{fa_best:.2f}x** (n=2)" in table
    assert f"**{geomean([500 / 450, 600 / 500]):.2f}x** (n=2)" in table       # vs cudnn
    assert "**1.25x** (n=1)" in table                                           # vs tilelang-auto: 4k invalid
    assert f"**{600 / 640:.2f}x** (n=1)" in table                               # gemm vs cublas
    assert "invalid" in table and "Invalid rows" in table and "dynamic shared memory" in table
    assert f"pt-tvm/best peer geomean {fa_best:.2f}x over 2 configs" in table
    assert "NVIDIA H100 80GB HBM3 (synthetic)" in table
    pngs = sorted(p.name for p in out_dir.glob("*.png"))
    assert pngs == ["flash_attention_float16_d128_noncausal.png", "gemm_float16.png"]
    for name in pngs:
        assert (out_dir / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_of_a_dry_run(smoke_dry, tmp_path):
    assert bench_cli.main(["report", str(smoke_dry), "--out-dir", str(tmp_path)]) == 0
    table = (tmp_path / "table.md").read_text()
    assert "dry run" in table and "not timed" in table
    assert not list(tmp_path.glob("*.png"))


def test_config_labels():
    row = {"kernel": "flash_attention", "config": {**_fa_config(4096), "kv_heads": 8, "causal": True}}
    assert config_label(row) == "fp16 d128 s4096 b4 h16/8 causal"
    row = {"kernel": "gemm", "config": dict(M=8192, N=6144, K=4096, dtype="bfloat16"), "note": "llama3-8b qkv"}
    assert config_label(row) == "bf16 8192x6144x4096 (llama3-8b qkv)"
    assert math.isclose(geomean([2.0, 0.5]), 1.0) and geomean([]) is None


# --- regression check ---------------------------------------------------------------------------------------------


def _slow(run: dict, kernel: str, system: str, factor: float, seq_len: int | None = None) -> dict:
    run = copy.deepcopy(run)
    for r in run["rows"]:
        if r["kernel"] == kernel and r["system"] == system and (seq_len is None or r["config"]["seq_len"] == seq_len):
            r["ms"] *= factor
            r["tflops"] /= factor
    return run


def test_compare_identical_passes(tmp_path, capsys):
    base = _write(tmp_path / "base.json", _synthetic_run())
    assert bench_cli.main(["compare", base, base]) == 0
    assert "OK: 3 rows compared" in capsys.readouterr().out
    assert bench_cli.main(["compare", base, base, "--all-systems"]) == 0


def test_compare_flags_a_planted_slowdown(tmp_path, capsys):
    base_run = _synthetic_run()
    base = _write(tmp_path / "base.json", base_run)
    slow = _write(tmp_path / "slow.json", _slow(base_run, "flash_attention", "pt-tvm", 1.10, seq_len=4096))
    assert bench_cli.main(["compare", slow, base]) == 1
    out = capsys.readouterr().out
    assert "REGRESSION flash_attention [fp16 d128 s4096 b4 h16] pt-tvm" in out and "+10.0%" in out
    assert "s1024" not in out.split("REGRESSION", 1)[1].splitlines()[0]
    # the threshold is honoured: 10 % passes at 15 %, fails at 5 % and at 9 %
    assert bench_cli.main(["compare", slow, base, "--threshold", "0.15"]) == 0
    assert bench_cli.main(["compare", slow, base, "--threshold", "0.09"]) == 1
    assert bench_cli.main(["compare", slow, base, "--threshold", "0.11"]) == 0
    # speed-ups are not regressions
    assert bench_cli.main(["compare", base, slow]) == 0
    assert "improved" in capsys.readouterr().out


def test_compare_peers_only_with_all_systems(tmp_path, capsys):
    base_run = _synthetic_run()
    base = _write(tmp_path / "base.json", base_run)
    slow = _write(tmp_path / "slow.json", _slow(base_run, "gemm", "cublas", 1.10))
    assert bench_cli.main(["compare", slow, base]) == 0
    assert bench_cli.main(["compare", slow, base, "--all-systems"]) == 1
    assert "REGRESSION gemm [fp16 8192x8192x8192] cublas" in capsys.readouterr().out


def test_compare_flags_a_row_that_became_invalid(tmp_path, capsys):
    base_run = _synthetic_run()
    broken = copy.deepcopy(base_run)
    for r in broken["rows"]:
        if r["kernel"] == "gemm" and r["system"] == "pt-tvm":
            r.update(valid=False, ms=None, tflops=None, rel_err=0.5)
    base = _write(tmp_path / "base.json", base_run)
    bad = _write(tmp_path / "bad.json", broken)
    assert bench_cli.main(["compare", bad, base, "--threshold", "10"]) == 1
    out = capsys.readouterr().out
    assert "REGRESSION gemm [fp16 8192x8192x8192] pt-tvm: became invalid (relative error 0.5)" in out


def test_compare_refuses_mismatched_runs(smoke_dry, tmp_path, capsys):
    base = _write(tmp_path / "base.json", _synthetic_run())
    assert bench_cli.main(["compare", str(smoke_dry), base]) == 2          # dry run vs timed run
    other = _synthetic_run()
    for r in other["rows"]:
        r["config"] = {**r["config"], "dtype": "bfloat16"}
    assert bench_cli.main(["compare", _write(tmp_path / "other.json", other), base]) == 2  # nothing in common
    assert "no (kernel, config, system) rows in common" in capsys.readouterr().err
    with pytest.raises(ValueError, match="threshold"):
        compare_runs(_synthetic_run(), _synthetic_run(), threshold=-1)


def test_compare_dry_runs_checks_validity(smoke_dry, tmp_path):
    run = _load(smoke_dry)
    assert bench_cli.main(["compare", str(smoke_dry), str(smoke_dry)]) == 0
    for r in run["rows"]:
        if r["system"] == "pt-tvm" and r["kernel"] == "gemm":
            r.update(valid=False, error="TypeError: lowering failed")
    assert bench_cli.main(["compare", _write(tmp_path / "broken.json", run), str(smoke_dry)]) == 1


def test_pt_tvm_bench_runs_then_compares(smoke_dry, tmp_path, monkeypatch, capsys):
    """``pt-tvm bench --compare`` delegates to the benchmarks package; the run itself is stubbed here."""
    from benchmarks import dryrun

    from pt_tvm.cli import main as pt_tvm_main

    rows = _load(smoke_dry)["rows"]
    monkeypatch.setattr(dryrun, "dry_run_configs", lambda configs, vdev, **kw: copy.deepcopy(rows))
    out = tmp_path / "bench.json"
    args = ["bench", "--suite", "smoke", "--dry-run", "--target", "h100", "--out", str(out)]
    assert pt_tvm_main(args + ["--compare", str(smoke_dry)]) == 0
    assert _load(out)["header"]["command"].startswith("pt-tvm bench")
    rows[0].update(valid=False, error="RuntimeError: search found no plan")
    assert pt_tvm_main(args + ["--compare", str(smoke_dry)]) == 1
    out = capsys.readouterr().out
    assert "REGRESSION flash_attention [fp16 d128 s4096 b8 h16] pt-tvm: became invalid" in out
    with pytest.raises(SystemExit):
        pt_tvm_main(args + ["--compare", str(tmp_path / "missing.json")])


# --- search time ----------------------------------------------------------------------------------------------------


def test_search_time_table_cites_without_inventing(tmp_path):
    with open(os.devnull, "w") as quiet:
        rows = measure_search_times([Config("t", "gemm", dict(M=512, N=512, K=512), ("pt-tvm",))], "h100", log=quiet)
    assert rows[0]["wall_s"] > 0 and rows[0]["plans_considered"] > 0 and rows[0]["target"] == "h100"
    table = format_table(rows, {"cpu": "test cpu", "cpu_count": 1})
    assert "compiles and times each candidate on the GPU" in table
    assert table.count("see paper") == 2
    published = {name: figure for name, _, figure in PUBLISHED}
    for name, figure in published.items():
        if "TileLang" not in name:
            assert figure == "see paper"
        assert not any(ch.isdigit() for ch in figure), (name, figure)  # no invented numbers
    out = tmp_path / "st.json"
    assert bench_cli.main(["search-time", "--suite", "gemm-core", "--max-configs", "1", "--out", str(out)]) == 0
    saved = _load(out)
    assert saved["header"]["kind"] == "search-time" and saved["rows"][0]["wall_s"] > 0


if __name__ == "__main__":
    tilelang.testing.main()


# --- shards and merging -------------------------------------------------------------------------------------------


def test_shards_partition_the_suite(capsys):
    bench_cli.main(["list", "--suite", "attention"])
    whole = capsys.readouterr().out.splitlines()[:-1]
    parts = []
    for i in range(3):
        bench_cli.main(["list", "--suite", "attention", "--shard", f"{i}/3"])
        parts.append(capsys.readouterr().out.splitlines()[:-1])
    assert sorted(whole) == sorted(line for p in parts for line in p)
    assert all(abs(len(p) - len(whole) / 3) < 1 for p in parts)
    for bad in ("3/3", "1", "a/b", "-1/2"):
        with pytest.raises(SystemExit):
            bench_cli.main(["list", "--suite", "attention", "--shard", bad])


def _shard_runs(tmp_path) -> tuple[str, str, dict]:
    run = _synthetic_run()
    fa = {**run, "header": {**run["header"], "shard": "0/2", "wall_s": 10.0, "configs": 2},
          "rows": [r for r in run["rows"] if r["kernel"] == "flash_attention"]}
    gemm = {**run, "header": {**run["header"], "shard": "1/2", "wall_s": 5.0, "configs": 1, "partial": True,
                              "date": "2026-01-01T00:01:00+00:00"},
            "rows": [r for r in run["rows"] if r["kernel"] == "gemm"]}
    return _write(tmp_path / "a.json", fa), _write(tmp_path / "b.json", gemm), run


def test_merge_shards_then_report(tmp_path, capsys):
    a, b, whole = _shard_runs(tmp_path)
    out = tmp_path / "merged.json"
    assert bench_cli.main(["merge", a, b, "--out", str(out)]) == 0
    merged = _load(out)
    assert sorted(json.dumps(r, sort_keys=True) for r in merged["rows"]) == \
        sorted(json.dumps(r, sort_keys=True) for r in whole["rows"])
    assert merged["header"]["configs"] == 3 and merged["header"]["device"] == whole["header"]["device"]
    assert [p["shard"] for p in merged["header"]["parts"]] == ["0/2", "1/2"]
    assert bench_cli.main(["report", str(out), "--out-dir", str(tmp_path / "rep")]) == 0
    table = (tmp_path / "rep" / "table.md").read_text()
    assert "part (0/2, 10.0 s," in table and "part (1/2, 5.0 s, cut off before its end" in table


def test_merge_rerun_replaces_every_row_of_its_configs(tmp_path, capsys):
    """A config run again (run --where ..., at a later commit) replaces all its rows, peers included."""
    a, b, whole = _shard_runs(tmp_path)
    fa = [r for r in whole["rows"] if r["kernel"] == "flash_attention"]
    key = json.dumps(fa[0]["config"], sort_keys=True)
    again = [{**r, "ms": r["ms"] * 2 if r["ms"] else r["ms"]} for r in fa if json.dumps(r["config"], sort_keys=True) == key]
    rerun = _write(tmp_path / "rerun.json", {"header": {**whole["header"], "git_commit": "later", "configs": 1},
                                              "rows": again})
    out = tmp_path / "merged.json"
    assert bench_cli.main(["merge", a, b, "--rerun", rerun, "--out", str(out)]) == 0
    merged = _load(out)
    assert len(merged["rows"]) == len(whole["rows"])
    redone = [r for r in merged["rows"] if json.dumps(r["config"], sort_keys=True) == key]
    assert sorted(json.dumps(r, sort_keys=True) for r in redone) == sorted(json.dumps(r, sort_keys=True) for r in again)
    assert merged["header"]["parts"][-1]["rerun"] == 1 and merged["header"]["parts"][-1]["git_commit"] == "later"
    assert bench_cli.main(["report", str(out), "--out-dir", str(tmp_path / "rep")]) == 0
    assert "part (rerun of 1 configs at later," in (tmp_path / "rep" / "table.md").read_text()
    other = _write(tmp_path / "other.json", {"header": {**whole["header"], "device": "NVIDIA H200"}, "rows": again})
    assert bench_cli.main(["merge", a, b, "--rerun", other, "--out", str(tmp_path / "m.json")]) == 2
    assert "differs in device" in capsys.readouterr().err


def test_run_where_selects_configs():
    import argparse

    args = argparse.Namespace(suite="attention", systems=None, max_configs=None, quick=False,
                              where=bench_cli._where("seq_len=16384,dim=64"))
    configs = bench_cli._configs(args)
    assert len(configs) == 8 and all(c.problem["seq_len"] == 16384 and c.problem["dim"] == 64 for c in configs)
    with pytest.raises(argparse.ArgumentTypeError, match="KEY=VALUE"):
        bench_cli._where("seq_len")


def test_merge_refuses_mixed_devices_and_duplicates(tmp_path, capsys):
    a, b, _ = _shard_runs(tmp_path)
    other = _load(b)
    other["header"]["device"] = "NVIDIA H200"
    c = _write(tmp_path / "c.json", other)
    assert bench_cli.main(["merge", a, c, "--out", str(tmp_path / "m.json")]) == 2
    assert "differ in device" in capsys.readouterr().err
    assert bench_cli.main(["merge", a, a, "--out", str(tmp_path / "m.json")]) == 2
    assert "in two runs" in capsys.readouterr().err
    assert not (tmp_path / "m.json").exists()


def test_precompile_jobs_are_the_plans_tuning_measures():
    """The suite's precompile compiles exactly the plans tune_template will load (same search, same picks),
    and hands the search over small enough to send between processes."""
    import pickle

    from pt_tvm import hw
    from pt_tvm.compiler import schedule_template
    from pt_tvm.tune import _candidates, compile_jobs, diverse_top, search_jobs
    from pt_tvm.search import SearchSpace

    vdev = hw.get("h100")
    params = {"M": 2048, "N": 2048, "K": 2048}
    jobs, searched = search_jobs(("gemm", params, "h100", 3))
    result, problem, build = schedule_template("gemm", vdev, params=params)
    picks = diverse_top(result, 3)
    assert jobs == compile_jobs("gemm", problem, vdev, picks)
    assert len(jobs) == 3 and len({j[3] for j in jobs}) == 3
    assert len(pickle.dumps(searched)) < 1_000_000
    handed = pickle.loads(pickle.dumps(searched))
    got, got_problem, cands, got_build = _candidates("gemm", vdev, params, 3, SearchSpace(), 0, handed)
    assert got_problem == problem and got.best.plan == result.best.plan
    assert [c.plan for c in cands] == [c.plan for c in picks]
    assert [got_build(c).script() for c in cands] == [build(c).script() for c in picks]


def test_model_pick_reuses_the_search_of_pt_tvm(monkeypatch):
    """pt-tvm-model compiles the same kernel from pt-tvm's search (handed over per config) as from its own."""
    from benchmarks import systems
    from pt_tvm import hw
    from pt_tvm.compiler import schedule_template
    from pt_tvm.templates import get

    template, vdev = get("gemm"), hw.get("h100")
    problem, _ = template.resolve(M=1024, N=1024, K=1024)
    compiled = []
    monkeypatch.setattr(type(template), "compile", lambda self, func, target: compiled.append(func.script()))
    result, _, build = schedule_template("gemm", vdev, params=problem)
    _, own = systems._pt_tvm_model(template, problem, vdev)
    _, handed = systems._pt_tvm_model(template, problem, vdev, shared={"search": result})
    assert compiled[0] == compiled[1] == build().script()
    assert own["plan"] == handed["plan"] == result.best.note


def test_precompiler_hands_over_searches_config_by_config():
    """Workers search and compile each config; ready() returns the search of a config with pt-tvm, None for
    one without, and a config whose search fails (or a JIT warm-up that cannot run on a CPU) does not hang."""
    import time

    from benchmarks.precompile import Precompiler
    from benchmarks.suite import Config
    from pt_tvm import hw

    gemm = {"M": 1024, "N": 1024, "K": 1024, "dtype": "float16"}
    configs = [Config("t", "gemm", gemm, ("pt-tvm", "tilelang-auto", "torch-compile")),
               Config("t", "gemm", {**gemm, "M": 2048}, ("tilelang-auto",)),
               Config("t", "gemm", {**gemm, "dtype": "int7"}, ("pt-tvm",))]
    t0 = time.monotonic()
    with Precompiler(configs, hw.get("h100"), workers=2, tune_top_k=1) as pre:
        handed = pre.ready(0, timeout=300)
        assert handed.problem["M"] == 1024 and len(handed.result.ranked) == 1
        assert pre.ready(1, timeout=300) is None
        assert pre.ready(2, timeout=300) is None
        assert all(e.is_set() for e in pre._done) and pre._jit_done.is_set()
    assert time.monotonic() - t0 < 300