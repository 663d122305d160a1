"""CPU tests of the hardware models: built-in chips, target selection, sEU lookups, chip files."""
from __future__ import annotations

import dataclasses
import json

import pytest
from tilelang import tvm

from pt_tvm import hw
from pt_tvm.hw import EU, SEU, HardwareError, SEUKind, VDevice

BUILTIN = ("h100", "h200", "a100", "mi300x")


# ------------------------------------------------------------------ built-in chips
@pytest.mark.parametrize("name", BUILTIN)
def test_builtin_chip_loads(name: str) -> None:
    vdev = hw.get(name)
    assert isinstance(vdev, VDevice) and vdev.name == name
    assert vdev.num_eus > 0 and vdev.clock_ghz > 0 and vdev.dram_bandwidth > 0 and vdev.l2_bytes > 0
    assert vdev.description
    eu = vdev.eu
    assert eu.smem_per_block <= eu.smem_per_eu and eu.regs_per_eu > 0 and eu.max_threads_per_block >= 256
    # every chip has tensor cores, CUDA cores (VALU) and a transcendental unit
    for kind in (SEUKind.TENSOR_CORE, SEUKind.CUDA_CORE, SEUKind.SFU):
        assert eu.has(kind)
    assert eu.has(SEUKind.TMA) or eu.has(SEUKind.LSU)
    # the TVM target the chip describes is a real one
    assert vdev.tvm_target().kind.name == vdev.target_kind


def test_names_and_case_and_aliases() -> None:
    assert hw.names() == sorted(BUILTIN)
    assert hw.get("H100") is hw.H100
    assert hw.get("hopper") is hw.H100 and hw.get("sm_90a") is hw.H100
    assert hw.get("sm_80") is hw.A100 and hw.get("gfx942") is hw.MI300X


def test_chip_figures() -> None:
    """The headline figures the comments cite (whitepapers / datasheets)."""
    h100, h200, a100, mi300x = (hw.get(n) for n in ("h100", "h200", "a100", "mi300x"))
    assert (h100.num_eus, a100.num_eus, mi300x.num_eus) == (132, 108, 304)
    peak = h100.num_eus * h100.eu.seu("tensor_core").throughput * h100.clock_ghz * 1e9
    assert peak == pytest.approx(989.4e12, rel=0.01)
    # H200 is an H100 with more/faster HBM
    assert h200.eu == h100.eu and h200.num_eus == h100.num_eus and h200.target == h100.target
    assert h200.dram_bandwidth > h100.dram_bandwidth
    assert "warp_specialization" in h100.features and "warp_specialization" not in a100.features
    assert "software_pipeline" in mi300x.features
    assert (h100.eu.warp_size, mi300x.eu.warp_size) == (32, 64)
    assert h100.eu.warpgroup_threads == 128 and a100.eu.warpgroup_threads == 32
    assert h100.cycles_to_seconds(h100.clock_ghz * 1e9) == pytest.approx(1.0)


# ------------------------------------------------------------------ for_target
@pytest.mark.parametrize("target, name", [
    pytest.param({"kind": "cuda", "arch": "sm_90a"}, "h100", id="sm_90a"),
    pytest.param({"kind": "cuda", "arch": "sm_90"}, "h100", id="sm_90"),
    pytest.param({"kind": "cuda", "arch": "sm_80"}, "a100", id="sm_80"),
    pytest.param({"kind": "hip", "mcpu": "gfx942"}, "mi300x", id="gfx942"),
    pytest.param({"kind": "cuda", "arch": "sm_90a", "model": "h200"}, "h200", id="model-h200"),
    pytest.param({"kind": "cuda", "arch": "sm_90a", "model": "H200"}, "h200", id="model-upper"),
])
def test_for_target_tvm_target(target: dict, name: str) -> None:
    assert hw.for_target(tvm.target.Target(target)).name == name


@pytest.mark.parametrize("target, name", [
    ({"kind": "cuda", "arch": "sm_90a"}, "h100"),
    ({"kind": "cuda", "arch": "sm_80"}, "a100"),
    ({"kind": "hip", "mcpu": "gfx942"}, "mi300x"),
    ({"kind": "cuda", "arch": "sm_90a", "model": "h200"}, "h200"),
    # a model of another target kind does not override the kind/arch choice
    ({"kind": "hip", "mcpu": "gfx942", "model": "h100"}, "mi300x"),
    ("h100", "h100"), ("h200", "h200"), ("a100", "a100"), ("mi300x", "mi300x"),
])
def test_for_target_dicts_and_names(target, name: str) -> None:
    assert hw.for_target(target).name == name


def test_for_target_passes_a_vdevice_through() -> None:
    custom = dataclasses.replace(hw.H100, name="h100-custom", clock_ghz=1.5)
    assert hw.for_target(custom) is custom


def test_builtin_targets_select_themselves() -> None:
    for name in ("h100", "a100", "mi300x"):
        vdev = hw.get(name)
        assert hw.for_target(vdev.target) is vdev
        assert hw.for_target(vdev.tvm_target()) is vdev


@pytest.mark.parametrize("target, named", [
    pytest.param({"kind": "cuda", "arch": "sm_75"}, "sm_75", id="sm_75"),
    pytest.param({"kind": "cuda", "arch": "sm_86"}, "sm_86", id="sm_86"),
    pytest.param({"kind": "hip", "mcpu": "gfx90a"}, "gfx90a", id="gfx90a"),
    pytest.param("llvm", "llvm", id="llvm"),
])
def test_unknown_tvm_target_raises(target, named: str) -> None:
    with pytest.raises(HardwareError, match=named) as info:
        hw.for_target(tvm.target.Target(target))
    assert "built-in" in str(info.value) and "Traceback" not in str(info.value)


@pytest.mark.parametrize("target, named", [
    ({"kind": "cuda", "arch": "sm_75"}, "sm_75"),
    ({"kind": "llvm"}, "llvm"),
    ("sm_75", "sm_75"),
    ("no-such-chip", "no-such-chip"),
])
def test_unknown_target_dict_or_name_raises(target, named: str) -> None:
    with pytest.raises(HardwareError, match=named):
        hw.for_target(target)


def test_not_a_target_raises() -> None:
    with pytest.raises(HardwareError, match="not a TVM target"):
        hw.for_target(42)
    assert issubclass(HardwareError, ValueError)


# ------------------------------------------------------------------ sEUs
def test_seu_lookup() -> None:
    h100, a100, mi300x = hw.H100.eu, hw.A100.eu, hw.MI300X.eu
    tma = h100.seu(SEUKind.TMA)
    assert tma.name == "cp.async.bulk.tensor" and tma.is_async and tma.kind is SEUKind.TMA
    assert h100.seu("tma") is tma  # by value as well as by enum
    assert h100.seu("tensor_core").name == "wgmma" and h100.seu("tensor_core").is_async
    assert a100.seu("tensor_core").name == "mma.sync" and not a100.seu("tensor_core").is_async
    assert mi300x.seu("tensor_core").name == "mfma"
    assert a100.seu("lsu").name == "cp.async" and a100.seu("lsu").is_async
    assert h100.has("tma") and not a100.has("tma") and not mi300x.has(SEUKind.TMA)
    assert h100.seu("tensor_core").throughput == 2 * a100.seu("tensor_core").throughput
    for seu in (*h100.seus, *a100.seus, *mi300x.seus):
        assert seu.throughput > 0 and seu.latency >= 0 and seu.issue >= 0


def test_missing_seu_raises() -> None:
    with pytest.raises(HardwareError, match="no tma sEU"):
        hw.A100.eu.seu(SEUKind.TMA)


def test_seu_and_eu_validation() -> None:
    assert SEU("x", "sfu", False, throughput=1.0, latency=0.0).kind is SEUKind.SFU
    with pytest.raises(HardwareError, match="throughput"):
        SEU("x", SEUKind.SFU, False, throughput=0.0, latency=1.0)
    with pytest.raises(HardwareError, match="latenc"):
        SEU("x", SEUKind.SFU, False, throughput=1.0, latency=-1.0)
    two_sfus = (SEU("a", "sfu", False, 1.0, 1.0), SEU("b", "sfu", False, 1.0, 1.0))
    with pytest.raises(HardwareError, match="one sEU per kind"):
        dataclasses.replace(hw.H100.eu, seus=two_sfus)
    with pytest.raises(HardwareError, match="target kind"):
        dataclasses.replace(hw.H100, target={"kind": "llvm"})


# ------------------------------------------------------------------ serialization and chip files
@pytest.mark.parametrize("name", BUILTIN)
def test_to_dict_from_dict_round_trip(name: str) -> None:
    vdev = hw.get(name)
    d = vdev.to_dict()
    assert VDevice.from_dict(d) == vdev
    assert d["eu"]["seus"][0]["kind"] in {k.value for k in SEUKind}
    back = VDevice.from_dict(json.loads(json.dumps(d)))
    assert back == vdev
    assert isinstance(back.eu, EU) and all(isinstance(s, SEU) for s in back.eu.seus)
    assert back.features == vdev.features and back.to_dict() == d


@pytest.mark.parametrize("name", BUILTIN)
def test_full_json_chip_file(tmp_path, name: str) -> None:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(hw.get(name).to_dict()))
    assert hw.load(str(path)) == hw.get(name)
    assert hw.get(str(path)) == hw.get(name)  # get() and for_target() take chip file paths
    assert hw.for_target(str(path)) == hw.get(name)


def test_json_chip_file_with_base(tmp_path) -> None:
    path = tmp_path / "slow.json"
    path.write_text(json.dumps({"base": "h100", "name": "h100-slow", "clock_ghz": 1.2, "num_eus": 114}))
    vdev = hw.load(str(path))
    assert (vdev.name, vdev.clock_ghz, vdev.num_eus) == ("h100-slow", 1.2, 114)
    assert vdev.eu == hw.H100.eu and vdev.target == hw.H100.target and vdev.features == hw.H100.features
    assert VDevice.from_dict(vdev.to_dict()) == vdev


def test_toml_chip_file_with_base(tmp_path) -> None:
    path = tmp_path / "pcie.toml"
    path.write_text(
        'base = "h100"\n'
        'name = "h100-pcie"\n'
        'num_eus = 114\n'
        "clock_ghz = 1.755\n"
        "dram_bandwidth = 2.0e12\n"
        'description = "NVIDIA H100 PCIe"\n'
        'features = ["software_pipeline", "tma"]\n'
    )
    vdev = hw.get(str(path))
    assert vdev.name == "h100-pcie" and vdev.num_eus == 114 and vdev.dram_bandwidth == 2.0e12
    assert vdev.features == frozenset({"software_pipeline", "tma"})
    assert vdev.eu == hw.H100.eu and vdev.l2_bytes == hw.H100.l2_bytes
    assert VDevice.from_dict(json.loads(json.dumps(vdev.to_dict()))) == vdev


def test_toml_chip_file_full(tmp_path) -> None:
    """A chip described from scratch in TOML, with its EU and sEUs as tables."""
    path = tmp_path / "tiny.toml"
    path.write_text(
        'name = "tiny"\n'
        "num_eus = 4\n"
        "clock_ghz = 1.0\n"
        "dram_bandwidth = 1.0e11\n"
        "l2_bandwidth = 2.0e11\n"
        "l2_bytes = 1048576\n"
        'features = ["software_pipeline"]\n'
        "[target]\n"
        'kind = "cuda"\n'
        'arch = "sm_80"\n'
        "[eu]\n"
        'name = "SM"\n'
        "smem_per_block = 49152\n"
        "smem_per_eu = 65536\n"
        "regs_per_eu = 32768\n"
        "max_regs_per_thread = 255\n"
        "max_threads_per_block = 1024\n"
        "warp_size = 32\n"
        "[[eu.seus]]\n"
        'name = "ld"\nkind = "lsu"\nis_async = false\nthroughput = 32.0\nlatency = 400.0\n'
        "[[eu.seus]]\n"
        'name = "mma"\nkind = "tensor_core"\nis_async = false\nthroughput = 512.0\nlatency = 30.0\n'
        "[[eu.seus]]\n"
        'name = "alu"\nkind = "cuda_core"\nis_async = false\nthroughput = 64.0\nlatency = 4.0\n'
    )
    vdev = hw.load(str(path))
    assert vdev.name == "tiny" and vdev.target == {"kind": "cuda", "arch": "sm_80"}
    assert vdev.eu.seu("tensor_core").throughput == 512.0 and not vdev.eu.has("sfu")
    assert vdev.eu.warpgroup_warps == 1  # dataclass defaults apply
    assert VDevice.from_dict(vdev.to_dict()) == vdev


@pytest.mark.parametrize("filename, content, match", [
    pytest.param("bad.json", "{not json", "cannot read chip file", id="bad-json"),
    pytest.param("bad.toml", "name = = 1", "cannot read chip file", id="bad-toml"),
    pytest.param("list.json", "[1, 2]", "expected an object", id="not-an-object"),
    pytest.param("unknown.json", '{"base": "h100", "colour": "green"}', "colour", id="unknown-field"),
    pytest.param("missing.json", '{"name": "x", "num_eus": 1}', "malformed chip description", id="missing-fields"),
    pytest.param("base.json", '{"base": "h999"}', "h999", id="unknown-base"),
    pytest.param("kind.json", '{"base": "h100", "target": {"kind": "llvm"}}', "target kind", id="bad-target-kind"),
    pytest.param("eu.json", '{"base": "h100", "eu": "SM"}', "malformed chip description", id="eu-not-a-table"),
    pytest.param("seu.json", '{"base": "a100", "eu": {"name": "SM", "seus": [{"name": "x", "kind": "warp", '
                 '"is_async": false, "throughput": 1, "latency": 1}], "smem_per_block": 1, "smem_per_eu": 1, '
                 '"regs_per_eu": 1, "max_regs_per_thread": 1, "max_threads_per_block": 1, "warp_size": 32}}',
                 "warp", id="bad-seu-kind"),
    pytest.param("target.json", '{"base": "h100", "target": "cuda"}', "malformed chip description",
                 id="target-not-a-table"),
    pytest.param("tp.json", '{"base": "h100", "eu": {"name": "SM", "seus": [{"name": "x", "kind": "sfu", '
                 '"is_async": false, "throughput": 0, "latency": 1}], "smem_per_block": 1, "smem_per_eu": 1, '
                 '"regs_per_eu": 1, "max_regs_per_thread": 1, "max_threads_per_block": 1, "warp_size": 32}}',
                 "throughput", id="zero-throughput"),
])
def test_malformed_chip_file_raises(tmp_path, filename: str, content: str, match: str) -> None:
    path = tmp_path / filename
    path.write_text(content)
    with pytest.raises(HardwareError, match=match) as info:
        hw.load(str(path))
    assert "Traceback" not in str(info.value)


def test_missing_chip_file_raises(tmp_path) -> None:
    with pytest.raises(HardwareError, match="cannot read chip file"):
        hw.load(str(tmp_path / "absent.json"))
    with pytest.raises(HardwareError, match="unknown chip"):
        hw.get(str(tmp_path / "absent.json"))
