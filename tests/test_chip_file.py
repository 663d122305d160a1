"""A chip described in a file travels as an object from the command line and the API to emission: graph,
schedule, lower and the pass all take it, and the plan cache tells two chips of one name apart."""
from __future__ import annotations

import json

import pytest
from tilelang import tvm

import pt_tvm
from pt_tvm import cli, hw, templates
from pt_tvm.cache import PlanCache, plan_key
from pt_tvm.passes import PipeThreader, graph_of

SMALL_GEMM = {"M": 512, "N": 512, "K": 512}


@pytest.fixture
def chip_file(tmp_path):
    path = tmp_path / "slow_h100.toml"
    path.write_text('base = "h100"\nname = "my_chip"\nclock_ghz = 1.2\nnum_eus = 100\n')
    return str(path)


def test_schedule_command_takes_a_chip_file(chip_file, tmp_path, capsys):
    out = tmp_path / "sched"
    rc = cli.main(["schedule", "gemm", "--target", chip_file, "--out", str(out)]
                  + [f"--param={k}={v}" for k, v in SMALL_GEMM.items()])
    printed = capsys.readouterr()
    assert rc == 0, printed.err
    assert "wrote" in printed.out and (out / "kernel.cu").read_text().count("__global__") >= 1
    assert json.loads((out / "plan.json").read_text())["target"] == "my_chip"


def test_graph_lower_and_pass_take_a_chip_object(chip_file):
    chip = hw.load(chip_file)
    func = templates.get("gemm").build(**SMALL_GEMM)
    graph = pt_tvm.extract(func, chip)
    assert graph.target == "my_chip"
    plan = pt_tvm.schedule(func, chip).best.plan
    assert "__global__" in pt_tvm.lower(func, chip, plan=plan).kernel_source
    with chip.tvm_target(), tvm.transform.PassContext():
        mod = tvm.transform.Sequential([pt_tvm.passes.ExtractSTaskGraph(chip), PipeThreader(chip)])(
            tvm.IRModule({"main": func}))
    assert graph_of(mod["main"]) == graph  # the pass after the extraction read its attribute


def test_two_chips_of_one_name_do_not_share_cache_entries(chip_file, tmp_path):
    mine = hw.load(chip_file)
    faster = hw.VDevice.from_dict({**mine.to_dict(), "clock_ghz": 2.0})
    graph = pt_tvm.extract(templates.get("gemm").build(**SMALL_GEMM), mine)
    assert mine.name == faster.name and plan_key(graph, mine) != plan_key(graph, faster)
    cache = PlanCache(str(tmp_path / "cache"))
    func = templates.get("gemm").build(**SMALL_GEMM)
    pt_tvm.schedule(func, mine, cache=cache)
    pt_tvm.schedule(func, faster, cache=cache)
    assert len(cache) == 2
