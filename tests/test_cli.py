"""CPU tests of the ``pt-tvm`` command line: ``templates``, ``graph``, ``--help`` and bad input."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import pt_tvm
from pt_tvm import cli, templates
from pt_tvm.graph import STaskGraph


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    """``pt-tvm ARGV`` in-process: (exit code, stdout, stderr)."""
    try:
        rc = cli.main(argv)
    except SystemExit as e:  # argparse: --help, usage errors
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


def assert_user_error(rc: int, out: str, err: str, *needles: str) -> None:
    """Exit code 2 and exactly one ``pt-tvm: error:`` line on stderr naming the problem."""
    assert rc == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("pt-tvm: error: ")
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


# ------------------------------------------------------------------ templates
def test_help_documents_the_exit_status(capsys) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main(["--help"])
    assert done.value.code == 0
    assert "exit status: 0 ok; 2 a usage or input error" in capsys.readouterr().out


def test_templates(capsys) -> None:
    rc, out, err = run(["templates"], capsys)
    assert rc == 0 and err == ""
    for name in templates.names():
        assert f"{name}\n" in out
        assert templates.get(name).doc in out
    assert "problem: M=4096 N=4096 K=4096" in out
    assert "tile:    block_M=128" in out
    assert "seq_len=4096" in out


# ------------------------------------------------------------------ graph
def test_graph_flash_attention(tmp_path, capsys) -> None:
    prefix = tmp_path / "tmp" / "fa"  # the directory does not exist yet
    rc, out, err = run(["graph", "flash_attention", "--target", "h100", "--out", str(prefix)], capsys)
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith("sTask-graph flash_attention for h100: 21 sTasks")
    assert "pipelined loop k x32" in lines[0]  # seq_len 4096 / block_N 128
    for token in ("tensor_core", "tma", "sfu", "gemm Q_shared, K_shared", "RAW", "d=1"):
        assert token in out
    assert f"wrote {prefix}.json and {prefix}.dot" in lines[-1]
    graph = STaskGraph.from_json((tmp_path / "tmp" / "fa.json").read_text())
    assert graph == pt_tvm.extract(templates.get("flash_attention").build(), "h100")
    dot = (tmp_path / "tmp" / "fa.dot").read_text()
    assert dot.startswith('digraph "flash_attention"')
    assert all(f'"{t.id}"' in dot for t in graph.stasks)
    assert graph.summary() in out


def test_graph_gemm_params(tmp_path, capsys) -> None:
    prefix = tmp_path / "g"
    rc, out, err = run(["graph", "gemm", "--target", "a100", "--param", "M=512", "--param", "N=256",
                        "--param", "K=1024", "--param", "block_K=32", "--param", "dtype=bfloat16",
                        "--out", str(prefix)], capsys)
    assert rc == 0 and err == ""
    assert out.startswith("sTask-graph gemm for a100: 6 sTasks")
    graph = STaskGraph.from_json((tmp_path / "g.json").read_text())
    assert graph.target == "a100" and graph.loop.trip_count == 1024 / 32
    assert dict(graph.grid) == {"bx": 2, "by": 4}
    assert {t.seu.value for t in graph.stasks} == {"lsu", "tensor_core", "cuda_core"}  # no TMA on sm_80
    gemm = next(t for t in graph.stasks if t.op.value == "gemm")
    assert gemm.tile_shape == (128, 128, 32) and gemm.dtype == "bfloat16"
    assert "lsu" in out and "tma" not in out


def test_graph_default_out_is_template_name_under_out(tmp_path, monkeypatch, capsys) -> None:
    """Generated files default to ./out/ (ignored in a pt-tvm checkout), not the working directory itself."""
    monkeypatch.chdir(tmp_path)
    rc, out, _ = run(["graph", "gemm", "--param", "M=256", "--param", "N=256", "--param", "K=256"], capsys)
    assert rc == 0
    assert "for h100" in out.splitlines()[0]  # --target defaults to h100
    assert os.listdir(tmp_path) == ["out"]
    assert sorted(os.listdir(tmp_path / "out")) == ["gemm.dot", "gemm.json"]
    assert json.loads((tmp_path / "out" / "gemm.json").read_text())["format"] == "pt-tvm.stask-graph/1"


def test_graph_chip_file_target(tmp_path, capsys) -> None:
    chip = tmp_path / "slow.toml"
    chip.write_text('base = "h100"\nname = "h100-slow"\nclock_ghz = 1.2\n')
    rc, out, err = run(["graph", "gemm", "--target", str(chip), "--param", "M=256", "--out",
                        str(tmp_path / "g")], capsys)
    assert rc == 0 and err == ""
    assert out.startswith("sTask-graph gemm for h100-slow")


@pytest.mark.parametrize("target", ["h200", "mi300x", "H100"])
def test_graph_other_targets(tmp_path, capsys, target: str) -> None:
    rc, out, _ = run(["graph", "flash_attention", "--target", target, "--param", "seq_len=256",
                      "--param", "causal=true", "--out", str(tmp_path / "fa")], capsys)
    assert rc == 0
    assert f"for {target.lower()}:" in out.splitlines()[0]


# ------------------------------------------------------------------ help
@pytest.mark.parametrize("argv", [["--help"], ["-h"]])
def test_help(capsys, argv: list[str]) -> None:
    rc, out, _ = run(argv, capsys)
    assert rc == 0
    assert "sTask" in out and "pt-tvm" in out
    for command in ("templates", "graph", "schedule"):
        assert command in out
    assert "examples:" in out


def test_graph_help(capsys) -> None:
    rc, out, _ = run(["graph", "--help"], capsys)
    assert rc == 0
    assert "sTask-graph" in out and "--target" in out and "--param" in out and "--out" in out


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("argv, needles", [
    pytest.param(["graph", "attention"], ["unknown template 'attention'", "flash_attention"],
                 id="unknown-template"),
    pytest.param(["graph", "gemm", "--target", "sm_75"], ["unknown chip 'sm_75'", "h100"], id="unknown-target"),
    pytest.param(["graph", "gemm", "--target", "b200"], ["'b200'"], id="unknown-chip"),
    pytest.param(["graph", "gemm", "--param", "MM=512"], ["has no parameter 'MM'", "known:"],
                 id="unknown-param"),
    pytest.param(["graph", "gemm", "--param", "M=lots"], ["parameter 'M' expects int, got 'lots'"],
                 id="ill-typed-param"),
    pytest.param(["graph", "flash_attention", "--param", "causal=perhaps"], ["'causal' expects bool"],
                 id="ill-typed-bool"),
    pytest.param(["graph", "gemm", "--param", "M512"], ["--param expects KEY=VALUE", "'M512'"],
                 id="malformed-param"),
    pytest.param(["graph", "gemm", "--param", "=512"], ["--param expects KEY=VALUE"], id="empty-key"),
    pytest.param(["graph", "gemm", "--param", "M=0"], ["'M' must be a positive int, got 0"],
                 id="invalid-param"),
    pytest.param(["graph", "flash_attention", "--param", "dim=40"], ["'dim' must be a multiple of 16"], id="bad-dim"),
])
def test_bad_input_exits_2_with_one_line(tmp_path, capsys, argv: list[str], needles: list[str]) -> None:
    rc, out, err = run([*argv, "--out", str(tmp_path / "x")], capsys)
    assert_user_error(rc, out, err, *needles)
    assert not os.listdir(tmp_path)  # nothing written


def test_bad_chip_file(tmp_path, capsys) -> None:
    chip = tmp_path / "broken.json"
    chip.write_text("{broken")
    rc, out, err = run(["graph", "gemm", "--target", str(chip), "--out", str(tmp_path / "x")], capsys)
    assert_user_error(rc, out, err, "cannot read chip file", "broken.json")


@pytest.mark.parametrize("argv", [[], ["frobnicate"], ["graph"], ["graph", "gemm", "--bogus"]])
def test_usage_errors_exit_2(capsys, argv: list[str]) -> None:
    rc, out, err = run(argv, capsys)
    assert rc == 2
    assert "usage: pt-tvm" in err and "error:" in err
    assert "Traceback" not in err


def test_entry_point_bad_target_subprocess(tmp_path) -> None:
    """Through the real interpreter: one stderr line, exit status 2, no Python traceback."""
    proc = subprocess.run([sys.executable, "-m", "pt_tvm.cli", "graph", "gemm", "--target", "sm_75",
                           "--out", str(tmp_path / "x")], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    errors = [line for line in proc.stderr.splitlines() if line.startswith("pt-tvm:")]
    assert errors == ["pt-tvm: error: unknown chip 'sm_75' (built-in: a100, h100, h200, mi300x; "
                      "or a .json/.toml chip file)"]
    assert "Traceback" not in proc.stderr


def test_entry_point_help_subprocess() -> None:
    proc = subprocess.run([sys.executable, "-m", "pt_tvm.cli", "--help"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and "sTask" in proc.stdout
