"""benchmarks roofline: compulsory bytes from the kernel's parameters, fractions of the chip's two rooflines."""
import json

import pytest

from benchmarks import cli, roofline
from pt_tvm import hw

CONFIG = {"batch": 2, "seqlen": 1024, "heads": 8, "headdim": 64, "dstate": 128, "chunk": 256, "groups": 1,
          "dtype": "float16"}


def _run(ms: float, device: str = "NVIDIA H100 80GB HBM3") -> dict:
    return {"header": {"device": device, "date": "2026-11-23", "git_commit": "abc"},
            "rows": [{"kernel": "chunk_state", "system": "pt-tvm", "config": CONFIG, "ms": ms, "valid": True},
                     {"kernel": "chunk_state", "system": "peer", "config": CONFIG, "ms": ms, "valid": False}]}


def test_chunk_state_bytes_are_its_parameters():
    b, s, h, p, n, c, L = 2, 1024, 8, 64, 128, 4, 256
    expected = b * s * 1 * n * 2 + b * s * h * p * 2 + 2 * b * h * c * L * 4 + b * c * h * p * n * 4
    assert roofline.compulsory_bytes("chunk_state", CONFIG) == expected


def test_fractions_of_both_rooflines():
    moved = roofline.compulsory_bytes("chunk_state", CONFIG)
    bandwidth, tensor_peak = roofline.peaks(hw.get("h100"))
    ms = moved / bandwidth * 1e3 * 2  # half the HBM bandwidth
    [r] = roofline.rooflines(_run(ms))  # the invalid row is left out
    assert r.memory == pytest.approx(0.5)
    assert r.compute == pytest.approx(2.0 * 2 * 1024 * 8 * 64 * 128 / (ms * 1e-3) / tensor_peak)
    assert r.bound == pytest.approx(max(0.5, r.compute))
    assert "| batch=2" not in roofline.markdown(_run(ms))  # nothing varies: no config columns to print
    assert "50%" in roofline.markdown(_run(ms))


def test_command_line(tmp_path, capsys):
    run = tmp_path / "run.json"
    run.write_text(json.dumps(_run(0.05)))
    assert cli.main(["roofline", str(run), "--out", str(tmp_path / "r.md")]) == 0
    assert "## chunk_state" in (tmp_path / "r.md").read_text()
    run.write_text(json.dumps(_run(0.05, device="Some GPU")))
    assert cli.main(["roofline", str(run)]) == 2
    assert "no chip model for device 'Some GPU'" in capsys.readouterr().err
