"""The benchmark harness on a CPU: dry runs, suites, report, regression check, search-time (no GPU)."""
from __future__ import annotations

import copy
import dataclasses
import json
import math
import os
import re
import subprocess
import types

import pytest
import tilelang.testing

from benchmarks import cli as bench_cli
from benchmarks import readme
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
        if row["system"].startswith(("pt-tvm", "tilelang-")):  # lowered on the CPU, TileLang's own schedules too
            assert row["valid"] is True, row.get("error")
            assert row["source_chars"] > 0 and row["lower_s"] >= 0
            assert row["grid"] > 0 and row["waves"] == round(row["grid"] / 132, 3)  # h100: 132 SMs
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


def test_run_without_gpu_needs_dry_run(tmp_path, capsys):
    """A usage error: one line and exit status 2 (issue 18; it was a SystemExit with status 1)."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert bench_cli.main(["run", "--suite", "smoke", "--out", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert "--dry-run" in err and len(err.strip().splitlines()) == 1


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
    pytest.importorskip("matplotlib", reason="charts need matplotlib (pip install 'pt-tvm[plot]')")
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
    row = {"kernel": "decode_attention", "config": dict(batch=1, q_len=4, heads=64, kv_heads=8, kv_len=16384, dim=128,
                                                        dtype="bfloat16", page_size=16, dynamic=True)}
    assert config_label(row) == "bf16 d128 b1 q4 h64/8 kv16384 paged 16"
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


def test_bench_runs_then_compares(smoke_dry, tmp_path, monkeypatch, capsys):
    """``python -m benchmarks bench --compare``: the run (stubbed here), then the comparison."""
    from benchmarks import dryrun

    rows = _load(smoke_dry)["rows"]
    monkeypatch.setattr(dryrun, "dry_run_configs", lambda configs, vdev, **kw: copy.deepcopy(rows))
    out = tmp_path / "bench.json"
    args = ["bench", "--suite", "smoke", "--dry-run", "--target", "h100", "--out", str(out)]
    assert bench_cli.main(args + ["--compare", str(smoke_dry)]) == 0
    assert _load(out)["header"]["command"].startswith("python -m benchmarks bench")
    rows[0].update(valid=False, error="RuntimeError: search found no plan")
    assert bench_cli.main(args + ["--compare", str(smoke_dry)]) == 1
    out = capsys.readouterr().out
    assert "REGRESSION flash_attention [fp16 d128 s4096 b8 h16] pt-tvm: became invalid" in out
    # a missing baseline is an input error, found before the suite runs: one line, exit status 2 (issue 18)
    assert bench_cli.main(args + ["--compare", str(tmp_path / "missing.json")]) == 2
    assert "missing.json: no such file" in capsys.readouterr().err


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


def test_merging_merged_runs_keeps_each_parts_provenance(tmp_path):
    """A merged run merged again (or given as a rerun) lists its own parts, dates and commands kept: before, the
    merged header's empty date stood for them all and the README table dated the run '?'."""
    a, b, whole = _shard_runs(tmp_path)
    first, again = tmp_path / "first.json", tmp_path / "again.json"
    assert bench_cli.main(["merge", a, b, "--out", str(first)]) == 0
    fa = [r for r in whole["rows"] if r["kernel"] == "flash_attention"]
    rerun = _write(tmp_path / "rerun.json", {"header": {**whole["header"], "git_commit": "later", "configs": 1,
                                                        "date": "2026-01-02T00:00:00+00:00"}, "rows": fa})
    redone = tmp_path / "redone.json"
    assert bench_cli.main(["merge", rerun, "--out", str(redone)]) == 0
    assert bench_cli.main(["merge", str(first), "--rerun", str(redone), "--out", str(again)]) == 0
    parts = _load(again)["header"]["parts"]
    assert [p["shard"] for p in parts[:2]] == ["0/2", "1/2"] and all(p["date"] for p in parts)
    assert parts[-1]["git_commit"] == "later" and parts[-1]["date"].startswith("2026-01-02")
    assert readme._date(_load(again)["header"]) == "2026-01-02"


def test_merge_rerun_replaces_every_row_of_its_configs(tmp_path, capsys):
    """A config run again (run --where ..., at a later commit) replaces all its rows, peers included."""
    a, b, whole = _shard_runs(tmp_path)
    fa = [r for r in whole["rows"] if r["kernel"] == "flash_attention"]
    key = json.dumps(fa[0]["config"], sort_keys=True)
    again = [{**r, "ms": r["ms"] * 2 if r["ms"] else r["ms"]} for r in fa
             if json.dumps(r["config"], sort_keys=True) == key]
    rerun = _write(tmp_path / "rerun.json", {"header": {**whole["header"], "git_commit": "later", "configs": 1},
                                              "rows": again})
    out = tmp_path / "merged.json"
    assert bench_cli.main(["merge", a, b, "--rerun", rerun, "--out", str(out)]) == 0
    merged = _load(out)
    assert len(merged["rows"]) == len(whole["rows"])
    redone = [r for r in merged["rows"] if json.dumps(r["config"], sort_keys=True) == key]
    assert sorted(json.dumps(r, sort_keys=True) for r in redone) == sorted(json.dumps(r, sort_keys=True) for r in again)
    assert merged["header"]["parts"][-1]["rerun"] == 1 and merged["header"]["parts"][-1]["git_commit"] == "later"
    assert merged["header"]["git_commit"] == f"{whole['header']['git_commit'][:7]}+later"  # its rows' two commits
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


def test_merge_takes_a_commit_and_its_abbreviation_as_one(tmp_path, capsys):
    """A part run with ``PT_TVM_GIT_COMMIT`` set to a short hash and one that recorded ``git rev-parse HEAD``
    are one commit; two commits are still two runs."""
    a, b, _ = _shard_runs(tmp_path)
    full, short = "5babecabc71efe477f07d6d8716094dbaceae454", "5babeca"
    for path, commit in ((a, full), (b, short)):
        run = _load(path)
        run["header"]["git_commit"] = commit
        _write(tmp_path / path.split("/")[-1], run)
    assert bench_cli.main(["merge", a, b, "--out", str(tmp_path / "m.json")]) == 0
    run = _load(b)
    run["header"]["git_commit"] = "e897763"
    _write(tmp_path / b.split("/")[-1], run)
    assert bench_cli.main(["merge", a, b, "--out", str(tmp_path / "n.json")]) == 2
    assert "differ in git_commit" in capsys.readouterr().err


def test_merge_across_commits_keeps_each_parts_commit(tmp_path, capsys):
    """Parts of one grid measured at two commits merge only when asked, each part naming its commit, the header
    and the README table both."""
    a, b, _ = _shard_runs(tmp_path)
    for path, commit in ((a, "50593ce"), (b, "0231e29")):
        run = _load(path)
        run["header"]["git_commit"] = commit
        _write(tmp_path / path.split("/")[-1], run)
    out = tmp_path / "m.json"
    assert bench_cli.main(["merge", a, b, "--out", str(out)]) == 2
    assert "differ in git_commit" in capsys.readouterr().err
    assert bench_cli.main(["merge", a, b, "--across-commits", "--out", str(out)]) == 0
    head = _load(out)["header"]
    assert head["git_commit"] == "50593ce+0231e29" and readme._commit(head) == "50593ce+0231e29"
    assert [p["git_commit"] for p in head["parts"]] == ["50593ce", "0231e29"]
    assert bench_cli.main(["report", str(out), "--out-dir", str(tmp_path / "rep")]) == 0
    assert "part (1/2 at 0231e29, 5.0 s," in (tmp_path / "rep" / "table.md").read_text()


def test_merge_keeps_the_first_run_of_a_config_measured_twice_when_asked(tmp_path, capsys):
    """A queue of device calls that measured a config twice: a plain merge refuses it, ``--keep-first`` keeps the
    first run's rows of it and counts the repeat in the header."""
    a, b, _ = _shard_runs(tmp_path)
    again = _load(b)
    again["rows"] = [{**r, "ms": r["ms"] * 2} for r in again["rows"] if r.get("ms")] + _load(a)["rows"]
    _write(tmp_path / "again.json", again)
    out = tmp_path / "m.json"
    assert bench_cli.main(["merge", a, b, str(tmp_path / "again.json"), "--out", str(out)]) == 2
    assert "is in two runs" in capsys.readouterr().err
    assert bench_cli.main(["merge", a, b, str(tmp_path / "again.json"), "--keep-first", "--out", str(out)]) == 0
    merged = _load(out)
    assert merged["rows"] == _load(a)["rows"] + _load(b)["rows"]
    assert merged["header"]["repeats_left_out"] == len({json.dumps(r["config"], sort_keys=True)
                                                        for r in again["rows"]})
    # the header counts the configs its rows hold, where a part's header may not count them (runs before 849bd51)
    assert merged["header"]["configs"] == len({json.dumps(r["config"], sort_keys=True) for r in merged["rows"]})
    assert bench_cli.main(["report", str(out), "--out-dir", str(tmp_path / "rep")]) == 0
    assert (f"- {merged['header']['repeats_left_out']} configs measured again by a later part keep the first part's "
            "rows") in (tmp_path / "rep" / "table.md").read_text()


def test_precompile_jobs_are_the_plans_tuning_measures():
    """The suite's precompile compiles exactly the plans tune_template will load (same search, same picks),
    and hands the search over small enough to send between processes."""
    import pickle

    from benchmarks.precompile import search_jobs
    from pt_tvm import hw
    from pt_tvm.compiler import schedule_template
    from pt_tvm.search import SearchSpace
    from pt_tvm.tune import _candidates, compile_jobs, diverse_top

    vdev = hw.get("h100")
    params = {"M": 2048, "N": 2048, "K": 2048}
    jobs, searched = search_jobs(("gemm", params, vdev, 3))
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

# --- every output checked, in NaN-prefilled memory (issue 12) -------------------------------------------------


def _inputs(name: str, **params) -> tuple:
    """(template, problem, fresh CPU inputs, the float32 reference outputs)."""
    import torch

    from pt_tvm.measure import as_outputs
    from pt_tvm.templates import get

    t = get(name)
    problem, _ = t.resolve(**params)
    inputs = t.make_inputs(problem, "cpu", torch.Generator().manual_seed(0))
    return t, problem, inputs, as_outputs(t.reference(*inputs, **problem))


def test_a_wrong_second_output_is_caught():
    """Planted fault: gemm_rowsum with C right and the row sums S 1% off. Both the TileLang form (C returned,
    S added in place) and a peer's (both returned) are compared on every output."""
    from benchmarks.suite import verdict
    from pt_tvm.measure import REL_TOL, check_call, kernel_outputs

    t, _, inputs, refs = _inputs("gemm_rowsum", M=256, N=256, K=128)
    tol = REL_TOL["float16"]

    def kernel(a, b, s):
        c = a @ b
        s += 1.01 * c.float().sum(1)
        return c

    checks = check_call(kernel_outputs(t, kernel), inputs, refs, inout=t.inout_idx)
    fields = verdict(checks, tol)
    assert checks[0].rel_err < tol and checks[1].rel_err > tol and checks[1].prefill == "zero"
    assert fields["valid"] is False and fields["error"].startswith("output 1 of 2: relative error 0.01")
    assert not inputs[2].any(), "the checked call adds into a copy: every system starts from a zero S"

    def never_writes_s(a, b, s):
        return a @ b

    unwritten = check_call(kernel_outputs(t, never_writes_s), inputs, refs, inout=t.inout_idx)
    assert verdict(unwritten, tol)["valid"] is False

    def peer(a, b, s):
        c = a @ b
        return c, c.sum(dim=1, dtype=torch.float32)

    import torch

    assert verdict(check_call(peer, inputs, refs, inout=t.inout_idx), tol)["valid"] is True
    with pytest.raises(ValueError, match="returned 1 output"):
        check_call(lambda a, b, s: a @ b, inputs, refs)


class _Arena:
    """The CPU stand-in for CUDA's caching allocator in this test: a fake kernel takes its output from it,
    as a real one takes it from the allocator that :func:`pt_tvm.measure.nan_prefill` fills."""

    def __init__(self, nbytes: int) -> None:
        import torch

        self.buf = torch.zeros(nbytes, dtype=torch.uint8)

    def empty(self, shape, dtype):
        import torch

        n = math.prod(shape) * torch.empty((), dtype=dtype).element_size()
        return self.buf[:n].view(dtype).view(shape)

    def prefill(self, byte: int):
        from pt_tvm.measure import NanMemory

        def fill(device, reserve):
            self.buf.fill_(byte)
            start = self.buf.data_ptr()
            return NanMemory(((start, start + self.buf.numel()),)) if byte == 0xFF else NanMemory()

        return fill


def test_an_unwritten_output_element_is_caught_by_the_nan_prefill():
    """Planted fault: a kernel that never writes the last element of C. One element of 1024x1024 is under
    fp16's tolerance on its own (relative error ~1e-3 with zero there); in NaN-prefilled memory it fails."""
    from benchmarks.suite import verdict
    from pt_tvm.measure import REL_TOL, check_call

    t, _, inputs, refs = _inputs("gemm", M=1024, N=1024, K=64)
    arena = _Arena(refs[0].numel() * 2)

    def skips_one(a, b):
        out = arena.empty(tuple(refs[0].shape), a.dtype)
        out.view(-1)[:-1] = (a @ b).view(-1)[:-1]
        return out

    poisoned = check_call(skips_one, inputs, refs, prefill=arena.prefill(0xFF))
    fields = verdict(poisoned, REL_TOL["float16"])
    assert poisoned[0].prefill == "nan" and fields["valid"] is False
    assert "non-finite values (an element left unwritten reads NaN)" in fields["error"]
    zeroed = check_call(skips_one, inputs, refs, prefill=arena.prefill(0x00))
    assert zeroed[0].prefill == "unverified" and verdict(zeroed, REL_TOL["float16"])["valid"] is True


def test_nan_prefill_fills_nothing_off_cuda():
    import torch

    from pt_tvm.measure import nan_prefill

    assert nan_prefill("cpu").ranges == () and not nan_prefill("cpu").covers(torch.zeros(4))


@pytest.mark.parametrize("name, params", [
    ("gemm_rowsum", dict(M=256, N=256, K=128)),
    ("flash_attention", dict(batch=1, heads=4, kv_heads=2, seq_len=256, dim=64, causal=True)),
    ("chunk_state", dict(seqlen=512, heads=8)),
    ("chunk_scan", dict(seqlen=512, heads=8)),
    ("causal_conv1d", dict(batch=2, seqlen=300, channels=4353, x_stride=4400)),
])
def test_torch_compile_peer_is_plain_pytorch_in_the_input_dtype(name, params):
    """What torch-compile compiles: the module a user writes, in fp16 (not the float32 reference), within the
    tolerance on every output; outputs keep the template's dtypes (chunk_state's states are float32)."""
    from benchmarks.systems import _eager
    from pt_tvm.measure import REL_TOL, as_outputs, check_call

    t, problem, inputs, refs = _inputs(name, **params)
    eager = _eager(t, problem)
    assert eager is not t.reference
    checks = check_call(eager, inputs, refs, inout=t.inout_idx)
    assert all(c.rel_err < REL_TOL["float16"] for c in checks), [c.rel_err for c in checks]
    outs = as_outputs(eager(*inputs))
    expected = {"gemm_rowsum": ["float16", "float32"], "chunk_state": ["float32"]}.get(name, ["float16"])
    assert [str(o.dtype).removeprefix("torch.") for o in outs] == expected


def test_tilelang_peers_take_tilelang_s_own_knobs():
    """tilelang-autotune tries the template's tiles that fit the problem at every depth; tilelang-ws turns on
    TileLang's role-based warp specialization through its PassConfigKey, the template's fast math kept."""
    from tilelang.transform import PassConfigKey

    from benchmarks.systems import AUTOTUNE_NUM_STAGES, autotune_configs, grid_blocks, role_based_ws_configs
    from pt_tvm.templates import get

    gemm = get("gemm")
    problem = dict(gemm.problem, dtype="float16")  # a whole problem, as the suite resolves it
    # 3 x 6 block sizes (256 x 192-256 refused: more than 256x160 accumulators) x 2 block_K x 2 thread counts; no
    # swapped tiles (4096 is a multiple of 64)
    assert len(autotune_configs(gemm, {**problem, "M": 4096, "N": 4096, "K": 4096})) == 60 * len(AUTOTUNE_NUM_STAGES)
    small = autotune_configs(gemm, {**problem, "M": 192, "N": 192, "K": 192}, stages=(2,))
    assert {(c["block_M"], c["block_N"], c["block_K"]) for c in small} == {
        (m, n, k) for m in (64, 128) for n in (64, 128, 160, 192) for k in (32, 64)} and len(small) == 32
    tiny = autotune_configs(gemm, {**problem, "M": 64, "N": 64, "K": 64}, stages=(2,))
    assert {(c["block_M"], c["block_N"]) for c in tiny} == {(64, 64)} and len(tiny) == 4
    ws = role_based_ws_configs(get("flash_attention"))
    assert ws == {"tl.enable_fast_math": True, PassConfigKey.TL_ENABLE_AUTO_WARP_SPECIALIZATION.value: "role_based"}
    assert grid_blocks(gemm.build()) == (4096 // 128) ** 2


# --- timing two ways, GPU-filling means (issue 12) ---------------------------------------------------------------


def test_timing_fields_take_the_cuda_graph_as_headline():
    from benchmarks.suite import timing_fields
    from benchmarks.timing import TwoWays
    from pt_tvm.measure import Timing

    queued, graph = Timing(0.150, 0.14, 0.16, 600), Timing(0.100, 0.099, 0.101, 600)
    both = timing_fields(TwoWays(queued, graph), flops=1e9)
    assert both["ms"] == 0.100 and both["timing"] == "cuda-graph" and math.isclose(both["tflops"], 10.0)
    assert both["queued"]["ms"] == 0.150 and both["graph"]["ms"] == 0.100 and "graph_error" not in both
    fallback = timing_fields(TwoWays(queued, None, "RuntimeError: operation not permitted when stream is capturing"),
                             flops=1e9)
    assert fallback["ms"] == 0.150 and fallback["timing"] == "queued" and fallback["graph"] is None
    assert "capturing" in fallback["graph_error"]


def _two_way_run() -> dict:
    """The synthetic run timed two ways: gemm 8192^3 fills the GPU; a small gemm (half a wave) does not."""
    run = _synthetic_run()
    for r in run["rows"]:
        if r["ms"] is not None:
            r.update(timing="cuda-graph", queued={"ms": r["ms"], "p20_ms": r["ms"], "p80_ms": r["ms"], "calls": 10},
                     graph={"ms": r["ms"], "p20_ms": r["ms"], "p80_ms": r["ms"], "calls": 10})
    small = dict(M=1024, N=1024, K=1024, dtype="float16")
    flops = 2.0 * 1024**3
    for system, tf, waves in (("pt-tvm", 200.0, 0.5), ("cublas", 100.0, None)):
        ms = flops / (tf * 1e12) * 1e3
        run["rows"].append({"suite": "synthetic", "kernel": "gemm", "config": small, "system": system, "ms": ms,
                            "tflops": tf, "rel_err": 1e-4, "valid": True, "timing": "cuda-graph", "waves": waves,
                            "queued": {"ms": ms * 1.5}, "graph": {"ms": ms}})
    fa = next(r for r in run["rows"] if r["system"] == "cudnn-sdpa" and r["config"]["seq_len"] == 1024)
    fa.update(timing="queued", graph=None, graph_error="RuntimeError: capture failed")
    return run


def test_report_shows_full_gpu_means_and_where_timings_differ(tmp_path):
    run_path = _write(tmp_path / "run.json", _two_way_run())
    assert bench_cli.main(["report", run_path, "--out-dir", str(tmp_path / "rep")]) == 0
    table = (tmp_path / "rep" / "table.md").read_text()
    # gemm vs cublas: 600/640 on 8192^3 (fills the GPU), 200/100 on 1024^3 (half a wave, 10.7 us: does not)
    assert f"**{geomean([600 / 640, 2.0]):.2f}x** (n=2); fills GPU {600 / 640:.2f}x (n=1)" in table
    assert "pt-tvm fastest on 1); where every system fills the GPU 0.94x over 1" in table
    assert "| gemm | fp16 1024x1024x1024 | cublas | 32.2 | 21.5 | 1.50 |" in table  # queued 1.5x the graph
    assert "| gemm | fp16 1024x1024x1024 | pt-tvm |" in table
    assert "Not captured" in table and "RuntimeError: capture failed" in table
    assert "| 450q |" in table  # cuDNN's headline fell back to its queued timing


def test_fills_gpu_needs_every_system_past_one_wave_and_50us():
    from benchmarks.report import fills_gpu

    row = {"valid": True, "tflops": 100.0, "ms": 0.2, "waves": 4.0}
    assert fills_gpu({"a": row, "b": {**row, "waves": None}})
    assert not fills_gpu({"a": row, "b": {**row, "waves": 0.9}})
    assert not fills_gpu({"a": row, "b": {**row, "ms": 0.04}})
    assert fills_gpu({"a": row, "b": {**row, "valid": False, "ms": 0.01}})  # invalid rows do not count


# --- bad input: one line, exit status 2, before any work (issue 18) ----------------------------------------------


def _bad_baselines() -> dict:
    def edit(fn):
        run = _synthetic_run()
        fn(run)
        return run

    return {
        "garbage ms": (edit(lambda r: r["rows"][0].update(ms="abc")), "'ms' must be a positive finite number"),
        "negative ms": (edit(lambda r: r["rows"][0].update(ms=-1.0)), "'ms' must be a positive finite number"),
        "NaN ms": (edit(lambda r: r["rows"][0].update(ms=float("nan"))), "got nan"),
        "infinite ms": (edit(lambda r: r["rows"][0].update(ms=float("inf"))), "got inf"),
        "no system": (edit(lambda r: r["rows"][1].pop("system")), "row 1: field 'system' is missing"),
        "no kernel": (edit(lambda r: r["rows"][2].pop("kernel")), "row 2: field 'kernel' is missing"),
        "no config": (edit(lambda r: r["rows"][0].pop("config")), "row 0: field 'config' is missing"),
        "empty rows": (edit(lambda r: r.update(rows=[])), "the run has no rows"),
        "not a run": ([1, 2, 3], "not a benchmark run"),
    }


@pytest.mark.parametrize("case", list(_bad_baselines()))
def test_compare_refuses_a_bad_baseline_in_one_line(case, tmp_path, capsys):
    bad, message = _bad_baselines()[case]
    run = _write(tmp_path / "run.json", _synthetic_run())
    base = _write(tmp_path / "base.json", bad)
    assert bench_cli.main(["compare", run, base]) == 2
    out = capsys.readouterr()
    assert message in out.err and len(out.err.strip().splitlines()) == 1 and "OK" not in out.out


def test_missing_truncated_and_unwritable_files_are_input_errors(tmp_path, capsys, monkeypatch):
    from benchmarks import dryrun

    run = _write(tmp_path / "run.json", _synthetic_run())
    text = (tmp_path / "run.json").read_text()
    (tmp_path / "cut.json").write_text(text[:len(text) // 2])
    for args, message in ((["compare", run, str(tmp_path / "nope.json")], "nope.json: no such file"),
                          (["compare", run, str(tmp_path / "cut.json")], "not valid JSON"),
                          (["compare", str(tmp_path / "cut.json"), run], "truncated or corrupt")):
        assert bench_cli.main(args) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err
    with pytest.raises(SystemExit) as e:  # argparse: a usage error
        bench_cli.main(["compare", run, run, "--threshold", "nan"])
    assert e.value.code == 2
    # the baseline and the output path are checked before the suite runs
    monkeypatch.setattr(dryrun, "dry_run_configs", lambda *a, **k: pytest.fail("the suite ran"))
    dry = ["--suite", "smoke", "--dry-run", "--target", "h100"]
    bench = ["bench", *dry, "--out", str(tmp_path / "o.json"), "--compare", str(tmp_path / "cut.json")]
    assert bench_cli.main(bench) == 2
    assert "cut.json: not valid JSON" in capsys.readouterr().err
    assert bench_cli.main(["run", *dry, "--out", "/proc/pt-tvm/x.json"]) == 2
    assert "cannot write --out /proc/pt-tvm/x.json" in capsys.readouterr().err
    assert bench_cli.main(["run", *dry, "--out", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert bench_cli.main(["run", *dry, "--target", "nochip", "--out", str(tmp_path / "o.json")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_a_gzipped_run_reads_as_the_run_and_a_broken_one_is_an_input_error(tmp_path, capsys):
    """Large committed runs are kept as ``.json.gz``: every command reads them as the plain file; a file that
    is not gzip, a cut-off stream or a garbled one is an input error in one line."""
    import gzip

    from benchmarks.runfile import load_run

    plain = _write(tmp_path / "run.json", _synthetic_run())
    data = (tmp_path / "run.json").read_bytes()
    (tmp_path / "run.json.gz").write_bytes(gzip.compress(data))
    assert load_run(str(tmp_path / "run.json.gz")) == load_run(plain)
    assert bench_cli.main(["compare", str(tmp_path / "run.json.gz"), plain]) == 0
    capsys.readouterr()
    (tmp_path / "plain.json.gz").write_bytes(data)
    packed = gzip.compress(data)
    (tmp_path / "cut.json.gz").write_bytes(packed[:40])
    (tmp_path / "garbled.json.gz").write_bytes(packed[:12] + bytes(b ^ 0x55 for b in packed[12:-8]) + packed[-8:])
    for bad in ("plain.json.gz", "cut.json.gz", "garbled.json.gz"):
        assert bench_cli.main(["compare", str(tmp_path / bad), plain]) == 2
        err = capsys.readouterr().err
        assert f"{bad}: cannot read it" in err and len(err.strip().splitlines()) == 1, err


def test_report_of_a_bad_file_writes_nothing(tmp_path, capsys):
    (tmp_path / "cut.json").write_text('{"header": {}, "rows": [{"kernel": "gemm", ')
    for bad in (str(tmp_path / "cut.json"), _write(tmp_path / "empty.json", {"header": {}, "rows": []}),
                str(tmp_path / "missing.json")):
        out_dir = tmp_path / "rep"
        assert bench_cli.main(["report", bad, "--out-dir", str(out_dir)]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
        assert not out_dir.exists()
    good = _write(tmp_path / "run.json", _synthetic_run())
    assert bench_cli.main(["report", good, "--out-dir", "/proc/pt-tvm-report"]) == 2
    assert "cannot write --out-dir" in capsys.readouterr().err


# --- README.md's results are generated, never typed (issue 12) ---------------------------------------------------


def test_readme_results_are_current():
    """README.md's section between the results markers and benchmarks/results/README.md are what
    `python -m benchmarks readme` makes of the runs benchmarks/results/index.json names."""
    assert bench_cli.main(["readme", "--check"]) == 0, "run `python -m benchmarks readme`"


def test_a_stale_readme_table_is_caught(tmp_path, capsys):
    """Planted fault: the run behind the README changes (or the table is edited by hand) and the README is
    not regenerated."""
    results = tmp_path / "results"
    (results / "r1").mkdir(parents=True)
    _write(results / "r1" / "run.json", _synthetic_run())
    (results / "r1" / "table.md").write_text("report")
    (results / "index.json").write_text(json.dumps(
        {"current": [{"gpu": "H100", "suite": "synthetic", "run": "r1/run.json", "report": "r1/table.md"}]}))
    readme = tmp_path / "README.md"
    readme.write_text("# guide\n\n## Results\n\n<!-- results:begin -->\n<!-- results:end -->\n\n## Layout\n")
    args = ["readme", "--index", str(results / "index.json"), "--readme", str(readme)]
    assert bench_cli.main(args + ["--check"]) == 1  # never generated
    assert bench_cli.main(args) == 0
    text = readme.read_text()
    assert text.startswith("# guide\n") and text.endswith("<!-- results:end -->\n\n## Layout\n")
    assert f"{600 / 640:.2f}x (1) / {600 / 640:.2f}x (1)" in text  # gemm vs cublas, all / fills GPU
    assert (results / "README.md").read_text().count("r1/run.json") == 2
    capsys.readouterr()
    assert bench_cli.main(args + ["--check"]) == 0
    _write(results / "r1" / "run.json", _slow(_synthetic_run(), "gemm", "pt-tvm", 1.25))  # re-measured
    assert bench_cli.main(args + ["--check"]) == 1
    assert f"stale: {readme}" in capsys.readouterr().out
    bench_cli.main(args)
    readme.write_text(readme.read_text().replace(f"{600 / 1.25 / 640:.2f}x", "1.04x"))  # typed over
    assert bench_cli.main(args + ["--check"]) == 1
    readme.write_text("# guide without markers\n")
    assert bench_cli.main(args) == 2
    assert "needs exactly one" in capsys.readouterr().err


def test_compare_times_like_with_like(tmp_path, capsys):
    """A baseline made before CUDA-graph timing is compared with the run's queued calls, not its headline."""
    old = _synthetic_run()
    new = _two_way_run()
    for r in new["rows"]:
        if r.get("graph"):
            r["graph"] = {**r["graph"], "ms": r["ms"] / 2}  # graph replays twice as fast: no regression, no gain
            r["ms"] = r["graph"]["ms"]
    base, run = _write(tmp_path / "old.json", old), _write(tmp_path / "new.json", new)
    assert bench_cli.main(["compare", run, base, "--all-systems"]) == 0
    out = capsys.readouterr().out
    assert "compared on calls queued back to back" in out and "improved" not in out


def test_benchmarks_readme_states_the_current_tolerances():
    from pt_tvm.measure import REL_TOL

    text = open(os.path.join(os.path.dirname(__file__), "..", "benchmarks", "README.md")).read()
    def sci(x: float) -> str:  # 2e-3, as the README writes it
        return f"{x:.0e}".replace("e-0", "e-")

    assert f"fp16 {sci(REL_TOL['float16'])}, bf16 {sci(REL_TOL['bfloat16'])}" in text


def test_nan_prefill_takes_only_blocks_a_call_on_this_stream_could_get():
    from pt_tvm.measure import _free_blocks

    def seg(device=0, stream=7, kind="large", pool=(0, 0), blocks=()):
        return {"device": device, "stream": stream, "segment_type": kind, "segment_pool_id": pool,
                "blocks": [{"size": n, "state": st} for n, st in blocks]}

    snapshot = [seg(blocks=[(4 << 20, "active_allocated"), (6 << 20, "inactive")]),
                seg(kind="small", blocks=[(512, "active_allocated"), (1536 << 10, "inactive")]),
                seg(device=1, blocks=[(2 << 20, "inactive")]), seg(stream=9, blocks=[(2 << 20, "inactive")]),
                seg(pool=(1, 3), blocks=[(2 << 20, "inactive")])]  # another device, stream, a CUDA graph's pool
    assert _free_blocks(snapshot, 0, 7) == [(6 << 20, False), (1536 << 10, True)]


def test_two_way_timing_interleaves_both_ways_and_falls_back_visibly(monkeypatch):
    """Every system queued and replayed from its graph, all in the same rounds; a system whose capture fails
    keeps its queued timing and the reason (CPU stand-ins for CUDA events and graphs)."""
    import torch

    from benchmarks import timing
    from pt_tvm import measure

    order = []

    class Fake:
        def __init__(self, name, ms, per_sample=1):
            self.name, self.ms, self.calls_per_sample = name, ms, per_sample

        def __call__(self, samples, offset=0):
            order.append(self.name)
            return [self.ms] * samples

    def capture(fn, sets):
        if fn == "flaky":
            raise RuntimeError("operation not permitted when stream is capturing")
        return Fake(f"{fn}/graph", 0.5, per_sample=len(sets))

    monkeypatch.setattr(timing, "capture", capture)
    monkeypatch.setattr(timing, "Queued", lambda fn, sets: Fake(f"{fn}/queued", 0.8))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    got = timing.time_two_ways({"a": "steady", "b": "flaky"}, [(), (), ()], rounds=3, warmup_ms=1.0, round_ms=4.0,
                               describe=lambda e: f"{type(e).__name__}: {e}")
    assert got["a"].headline == (timing.GRAPH, got["a"].graph) and got["a"].graph.ms == 0.5
    assert got["a"].queued.ms == 0.8 and got["a"].graph.calls % 3 == 0
    assert got["b"].graph is None and got["b"].headline[0] == timing.QUEUED
    assert got["b"].graph_error == "RuntimeError: operation not permitted when stream is capturing"
    assert set(order[-3:]) == {"steady/queued", "steady/graph", "flaky/queued"}  # the last round: all, both ways
    assert isinstance(measure.time_samplers({"x": Fake("x", 1.0)}, rounds=2, warmup_ms=1.0)["x"], measure.Timing)


def test_settled_rounds_time_each_system_at_its_own_clock():
    """A power-capped GPU clocks down within half a second under a heavy load and back up under a light one
    (one H100: 1980 MHz idle, about 1400-1550 under a LLaMA layer's graph). Rounds that switch systems
    without settling time a heavy system partly at the clock its light predecessor left; with ``settle_ms``
    each is timed at its own steady clock, and the order rotates from round to round."""
    from pt_tvm import measure

    gpu = {"heat": 0.0}
    starts = []

    class Thermal:
        """Per-call ms ``base * (1 + heat)``; each call moves the heat a tenth of the way to ``load``."""

        calls_per_sample = 1

        def __init__(self, name, base, load):
            self.name, self.base, self.load = name, base, load

        def __call__(self, samples, offset=0):
            starts.append((self.name, samples))
            out = []
            for _ in range(samples):
                gpu["heat"] += 0.1 * (self.load - gpu["heat"])
                out.append(self.base * (1 + gpu["heat"]))
            return out

    def timed(settle_ms):
        gpu["heat"] = 0.0
        starts.clear()
        samplers = {"light": Thermal("light", 1.0, 0.0), "heavy": Thermal("heavy", 1.0, 1.0)}
        return measure.time_samplers(samplers, rounds=4, warmup_ms=3.0, round_ms=5.0, settle_ms=settle_ms)

    loose = timed(0.0)
    assert loose["heavy"].ms < 1.9  # timed partly at the light one's clock (its own steady time is 2.0)
    settled = timed(100.0)
    assert settled["heavy"].ms == pytest.approx(2.0, rel=0.01) and settled["light"].ms == pytest.approx(1.0, rel=0.01)
    settles = [i for i, (_, n) in enumerate(starts) if n >= 50]  # the timed shares are 3-5 calls
    assert [starts[i][0] for i in settles] == ["light", "heavy", "heavy", "light"] * 2  # rotating order
    assert all(starts[i + 1][0] == starts[i][0] and starts[i + 1][1] < 50 for i in settles)  # then timed


def test_a_system_that_fails_while_timed_loses_its_timing_only(monkeypatch):
    """A system that runs out of memory while timed (beside the other systems' CUDA graphs; an H100 Mamba2 run
    stopped whole on torch.compile's 64 GiB intermediate) gets an error on its row; the others are timed on."""
    import torch

    from benchmarks import timing
    from benchmarks.suite import timing_fields
    from pt_tvm import measure

    class Fake:
        calls_per_sample = 1

        def __init__(self, ms, fail_after=None):
            self.ms, self.fail_after, self.calls = ms, fail_after, 0

        def __call__(self, samples, offset=0):
            self.calls += 1
            if self.fail_after is not None and self.calls > self.fail_after:
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 64.00 GiB")
            return [self.ms] * samples

    fakes = {("big", timing.QUEUED): Fake(1.0, fail_after=4), ("big", timing.GRAPH): Fake(0.9, fail_after=0),
             ("small", timing.QUEUED): Fake(0.2), ("small", timing.GRAPH): Fake(0.1)}
    monkeypatch.setattr(timing, "capture", lambda fn, sets: fakes[(fn, timing.GRAPH)])
    monkeypatch.setattr(timing, "Queued", lambda fn, sets: fakes[(fn, timing.QUEUED)])
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    got = timing.time_two_ways({"big": "big", "small": "small"}, [()], rounds=3, warmup_ms=1.0, round_ms=4.0,
                               describe=lambda e: f"{type(e).__name__}: {e}")
    assert got["small"].graph.ms == 0.1 and got["small"].queued.ms == 0.2
    assert got["big"].headline is None and "OutOfMemoryError" in got["big"].queued_error
    assert got["big"].graph_error.startswith("timing: OutOfMemoryError")
    fields = timing_fields(got["big"], flops=1e9)
    assert "ms" not in fields and "OutOfMemoryError" in fields["error"]
    with pytest.raises(torch.OutOfMemoryError):  # without on_error the failure propagates
        measure.time_samplers({"x": Fake(1.0, fail_after=0)}, rounds=1, warmup_ms=1.0)


def test_a_persistent_plan_counts_its_waves_in_tiles_not_in_launched_blocks():
    """A persistent GEMM launches one block per SM, so its launch grid is always one wave; whether it fills
    the GPU is a matter of the tiles it walks (the H100 run of d9542d7 marked no GEMM as filling the GPU)."""
    from benchmarks.systems import _planned_info, grid_blocks
    from pt_tvm import hw, templates
    from pt_tvm.compiler import planned_func, schedule_template

    vdev = hw.for_target("h100")
    problem = {"M": 4096, "N": 4096, "K": 4096, "dtype": "float16"}
    result, _, _ = schedule_template("gemm", vdev, params=problem)
    plan = result.best.plan
    assert plan.persistent
    func = planned_func("gemm", problem, result.best, vdev)
    info = _planned_info(func, templates.get("gemm"), problem, plan)
    assert info["grid"] == vdev.num_eus
    assert info["tiles"] == (4096 // plan.tile["block_M"]) * (4096 // plan.tile["block_N"]) > vdev.num_eus
    unwalked = templates.get("gemm").build(**problem, **plan.tile)
    assert "tiles" not in _planned_info(unwalked, templates.get("gemm"), problem,
                                       dataclasses.replace(plan, persistent=False))
    assert grid_blocks(unwalked) == info["tiles"]


def test_the_grid_of_a_kernel_of_dynamic_sizes_is_read_at_the_problem():
    """A kernel whose batch is a kernel argument launches a grid known only at a problem's sizes: read there, and
    unknown (None) without them, never the product of its static extents alone."""
    from benchmarks.systems import grid_blocks
    from pt_tvm import templates

    decode = templates.get("decode_attention")
    problem, tile = decode.resolve(batch=8, kv_len=4096, num_splits=4, dynamic=True)
    func = decode.build(**problem, **tile)
    assert grid_blocks(func) is None and grid_blocks(func, problem) == 4 * 8 * 8
    static, _ = decode.resolve(batch=8, kv_len=4096, num_splits=4)
    assert grid_blocks(decode.build(**static, **tile)) == 4 * 8 * 8


def test_the_autotuner_peer_names_outputs_from_the_front():
    """TileLang's autotuner resolves a negative output index before its kernel-cache lookup, so a kernel the
    run's workers compiled with ``out_idx=[-1]`` missed the cache and was compiled again in the timed process
    (chunk_scan on an H100: 36 configs at ~4 s each, per config); the jit the workers and the autotuner share
    counts outputs from the front, for D and without."""
    from benchmarks.systems import autotune_jit
    from pt_tvm import hw, templates

    vdev = hw.for_target("h100")
    scan = templates.get("chunk_scan")
    assert scan.out_idx == (-1,)
    for has_d, last in ((True, 7), (False, 6)):
        problem, _ = scan.resolve(batch=1, seqlen=1024, dtype="float16", has_d=has_d)
        assert autotune_jit(scan, vdev, problem).out_idx == [last]
    gemm = templates.get("gemm")
    problem, _ = gemm.resolve(M=256, N=256, K=256)
    assert autotune_jit(gemm, vdev, problem).out_idx == list(gemm.out_idx)


def test_ratio_moves_match_configs_across_new_template_defaults():
    """A re-run lists where pt-tvm's speed-up over a peer moved (issue 12's closing note); its rows match the
    baseline's although the template since gained a parameter (``trans_B``) that the old rows do not name."""
    from benchmarks.compare import compare_runs, ratio_moves

    def row(system, ms, queued_ms=None, **extra):
        r = {"kernel": "gemm", "config": {"M": 4096, "N": 4096, "K": 4096, "dtype": "float16", **extra},
             "system": system, "valid": True, "ms": ms}
        return {**r, "queued": {"ms": queued_ms}, "timing": "cuda-graph"} if queued_ms else r

    old = {"header": {}, "rows": [row("pt-tvm", 1.0), row("cublas", 0.9), row("torch-compile", 0.8)]}
    new = {"header": {}, "rows": [row("pt-tvm", 1.0, 1.1, trans_B=False), row("cublas", 0.95, 1.0, trans_B=False),
                                  row("torch-compile", 0.81, 0.9, trans_B=False)]}
    moves = ratio_moves(new, old, threshold=0.03)
    assert [(m.peer, round(m.before, 2), round(m.after, 2)) for m in moves] == [("cublas", 0.9, 0.95)]
    assert math.isclose(moves[0].after_queued, 1.0 / 1.1) and math.isclose(moves[0].change, 0.95 / 0.9 - 1)
    assert compare_runs(new, old).compared == 1  # pt-tvm's row matched across the new default
    assert ratio_moves(new, old, threshold=0.1) == []
    transposed = {"header": {}, "rows": [row("pt-tvm", 1.0, trans_B=True), row("cublas", 0.5, trans_B=True)]}
    assert ratio_moves(transposed, old) == []  # a different problem, not a move


def test_pt_tvm_row_of_a_split_kv_pick(monkeypatch):
    """The tuned pt-tvm system reports a split-KV decode pick (a split kernel and a combine, compiled apart):
    on an H100 every such config failed with AttributeError, the pair having no ``prim_func`` (2026-11-23)."""
    from benchmarks import systems
    from pt_tvm import hw
    from pt_tvm.compiler import planned_func, schedule_template
    from pt_tvm.templates import get
    from pt_tvm.tune import Measured, TuneResult
    from templates.decode_attention import SplitKV

    template, vdev = get("decode_attention"), hw.get("h100")
    problem, _ = template.resolve(batch=1, kv_len=65536)
    result, problem, _ = schedule_template("decode_attention", vdev, params=problem)
    split = next(c for c in result.ranked if c.plan.tile["num_splits"] > 1)
    func = planned_func("decode_attention", problem, split, vdev)
    kernel = SplitKV(types.SimpleNamespace(prim_func=func), object())  # what compile returns, kernels faked

    def tune(name, target, **kw):
        return TuneResult(Measured(split, 0.1, 1e-3), kernel, (Measured(split, 0.1, 1e-3),), result, problem, "graph")

    monkeypatch.setattr(systems, "tune_template", tune)
    monkeypatch.setattr(systems, "kernel_outputs", lambda template, kernel: kernel)
    _, info = systems._pt_tvm(template, problem, vdev)
    assert info["tile"]["num_splits"] == split.plan.tile["num_splits"] > 1 and info["plan"] == split.note
    assert info["grid"] == systems.grid_blocks(func)


def test_gpu_tests_script_reports_every_test_it_was_given(tmp_path):
    """benchmarks/gpu-tests.sh hands its tests out in chunks to parallel pytest processes and sums their outcomes
    (the GPU tests skip here); a limit spent before a chunk starts lists that chunk's tests as not reached."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ids = ["tests/test_decode.py::test_decode_kernel_matches_the_reference",
           "tests/test_tile_walk.py::test_row_split_plans_compute_every_output"]

    def summary(limit: int) -> str:
        out = tmp_path / str(limit)
        subprocess.run(["bash", "benchmarks/gpu-tests.sh", "2", str(limit), *ids], cwd=root, check=True,
                       capture_output=True, env={**os.environ, "OUT": str(out), "CHUNK": "2"}, timeout=600)
        return (out / "gpu-tests.txt").read_text().split("==== chunk")[0]

    done = summary(300)
    counted = re.search(r"(\d+) GPU tests in chunks of 2 over 2 processes, 300 s in all: (\d+) SKIPPED", done)
    assert counted and counted[1] == counted[2] and int(counted[1]) > 2, done
    assert "not reached before the limit: 0" in done
    assert f"not reached before the limit: {counted[1]}" in summary(1)


def test_no_config_starts_past_the_deadline(monkeypatch, capsys):
    """``run_configs(deadline=...)``: the configs started before it keep their rows, written after each; the
    rest are named as not started (a device call's time cut a part short, and the next call skips what ran)."""
    import time

    import torch

    from benchmarks import suite

    clock = iter(range(100))
    monkeypatch.setattr(time, "perf_counter", lambda: float(next(clock)))
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: types.SimpleNamespace(multi_processor_count=1))
    monkeypatch.setattr(suite, "_run_config", lambda cfg, *a, **k: [{"config": cfg.problem}])
    saved = []
    cfgs = [Config("decode", "decode_attention", {"batch": b}, ("pt-tvm",)) for b in (1, 8, 32)]
    rows = suite.run_configs(cfgs, None, workers=1, deadline=1.5, on_config=lambda r: saved.append(len(r)))
    assert rows == [{"config": {"batch": 1}}, {"config": {"batch": 8}}] and saved == [1, 2]
    assert "deadline: 1 of 3 configs not started" in capsys.readouterr().out


@pytest.mark.parametrize("seq_len_k", [50, 17])
@pytest.mark.parametrize("kv_heads", [2, 4])
def test_sdpa_peer_aligns_causal_over_a_kv_cache_bottom_right(seq_len_k, kv_heads):
    """The SDPA peers run causal attention over a KV cache (more keys than queries) aligned bottom-right as their
    users write it (``causal_lower_right``; with GQA a boolean mask), which is what pt-tvm computes; ``is_causal``
    (top-left) where the lengths match. Checked with the math backend on the CPU against the template's float32
    reference."""
    import torch

    from benchmarks.systems import _sdpa
    from pt_tvm import templates

    tmpl = templates.get("flash_attention")
    problem, _ = tmpl.resolve_problem(batch=2, seq_len=17, seq_len_k=seq_len_k, heads=4, kv_heads=kv_heads,
                                      dim=64, causal=True)
    run, _ = _sdpa("MATH")(tmpl, problem, None)
    q, k, v = (t.float() for t in tmpl.make_inputs(problem, "cpu", torch.Generator().manual_seed(0)))
    ref = tmpl.reference(q, k, v, **problem)
    ref = ref[0] if isinstance(ref, tuple) else ref
    assert torch.allclose(run(q, k, v), ref, atol=1e-5)
