"""CPU tests of ``pt-tvm schedule``: it searches, prints the plan, its timeline, the predicted time and the
runners-up, and writes plan.json, the emitted kernel source and (with --plot) a Gantt chart."""
from __future__ import annotations

import re

import pytest

from pt_tvm import cli, hw
from pt_tvm.graph import Placement
from pt_tvm.plan import ExecutionPlan, Style
from pt_tvm.verify import verify


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PT_TVM_CACHE_DIR", str(tmp_path / "cache"))


def _schedule(argv, capsys):
    rc = cli.main(["schedule", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_schedule_gemm_on_a100(tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="--plot needs matplotlib (pip install 'pt-tvm[plot]')")
    out_dir, png = tmp_path / "gemm", tmp_path / "t.png"
    rc, out, err = _schedule(["gemm", "--target", "a100", "--param", "M=1024", "--param", "N=1024",
                              "--param", "K=1024", "--random-orders", "1", "--top", "3",
                              "--out", str(out_dir), "--plot", str(png)], capsys)
    assert rc == 0, err
    # the plan
    assert ("gemm {'M': 1024, 'N': 1024, 'K': 1024, 'dtype': 'float16', 'trans_B': False, 'dynamic_M': False, "
            "'lda': 0, 'ldb': 0} on ") in out
    assert "plan for gemm on a100: software_pipeline" in out
    assert "role block: warps [0," in out and re.search(r"loop +.*copy_0@lsu", out) and "gemm_0@tensor_core" in out
    # its simulated timeline, the prediction, the search summary and runners-up
    assert "steady-state iteration:" in out
    m = re.search(r"predicted: ([\d.]+) us, (\d+) TFLOP/s \((\d+) waves", out)
    assert m and float(m.group(1)) > 0 and 0 < int(m.group(2)) < 312  # below A100's fp16 tensor peak
    assert re.search(r"searched \d+ candidate plans in [\d.]+ s \(\d+ rejected by verify", out)
    assert "  #1 " in out and "  #2 " in out and "  #3 " in out and "  #4 " not in out
    assert "winner: software-pipelined num_stages" in out
    # the files
    plan = ExecutionPlan.from_json((out_dir / "plan.json").read_text())
    assert plan.graph == "gemm" and plan.target == "a100" and plan.style == Style.SOFTWARE_PIPELINE
    assert set(plan.tile) == {"block_M", "block_N", "block_K", "threads", "swap_ab", "row_group"}
    assert f"num_stages={plan.num_stages}" in out
    src = (out_dir / "kernel.cu").read_text()
    assert "gemm_kernel" in src and "tl::mma_sync<" in src
    assert f"__launch_bounds__({plan.tile['threads']}" in src
    if plan.num_stages > 1:
        assert "cp_async_gs<" in src
    assert f"wrote {out_dir}/plan.json and {out_dir}/kernel.cu" in out
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote {png}" in out


def test_schedule_flash_attention_on_h100(tmp_path, capsys):
    out_dir = tmp_path / "fa"
    rc, out, err = _schedule(["flash_attention", "--target", "h100", "--param", "seq_len=1024",
                              "--random-orders", "1", "--out", str(out_dir)], capsys)
    assert rc == 0, err
    assert "plan for flash_attention on h100: warp_specialized" in out
    assert "role producer: warps [0,1), 24 regs/thread" in out
    assert "pipeline p_K_shared: K_shared" in out and "pipeline p_V_shared: V_shared" in out
    plan = ExecutionPlan.from_json((out_dir / "plan.json").read_text())
    assert plan.style == Style.WARP_SPECIALIZED
    src = (out_dir / "kernel.cu").read_text()
    assert "wgmma_ss<" in src and "wgmma_rs<" in src and "tma_load(" in src
    assert f"__launch_bounds__({plan.num_warps * 32}" in src
    consumer = next(r for r in plan.roles if r.name == "consumer")
    assert f"warpgroup_reg_alloc<{consumer.max_nreg}>" in src
    assert not (tmp_path / "t.png").exists()  # no --plot, no chart
    # the plan written is the plan printed, and it verifies against the kernel it was made for
    from pt_tvm import templates
    from pt_tvm.passes import extract_stask_graph

    func = templates.get("flash_attention").build(seq_len=1024, **plan.tile)
    graph = extract_stask_graph(func, hw.get("h100"))
    verify(plan, graph, hw.get("h100"))
    assert plan.describe(graph) in out
    assert all(a.stage in (0, 1) for a in plan.program("consumer", graph, Placement.LOOP))


def test_schedule_rejects_bad_input_in_one_line(tmp_path, capsys):
    rc, out, err = _schedule(["gemm", "--target", "a100", "--param", "block_K=48", "--out", str(tmp_path)],
                             capsys)
    assert rc == 2 and out == ""
    assert err.startswith("pt-tvm: error: ") and len(err.strip().splitlines()) == 1
    rc, out, err = _schedule(["gemm", "--target", "tpu9"], capsys)
    assert rc == 2 and "unknown chip 'tpu9'" in err


def test_schedule_reports_a_shape_no_plan_fits_in_one_line(capsys):
    """FlashAttention D256 needs more than MI300X's 64 KB of LDS for any tile: a clear error, exit 2."""
    from pt_tvm.cli import main

    assert main(["schedule", "flash_attention", "--target", "mi300x", "--param", "dim=256",
                 "--param", "seq_len=1024", "--param", "batch=1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pt-tvm: error: no valid plan among") and "shared_memory" in err and "Traceback" not in err
