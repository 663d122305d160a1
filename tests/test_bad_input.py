"""Bad input gets an error that names the problem, of a pt-tvm error class, never a TVM stack trace."""
from __future__ import annotations

import dataclasses
import json

import pytest
import tilelang.language as T
from tilelang import tvm
from tvm.script import tirx as TS

import pt_tvm
import pt_tvm.passes
from pt_tvm import hw, templates
from pt_tvm.errors import PtTvmError
from pt_tvm.graph import GraphError, STaskGraph
from pt_tvm.hw import HardwareError
from pt_tvm.passes import ExtractionError
from pt_tvm.templates import TemplateError

GEMM_SMALL = {"M": 256, "N": 256, "K": 256}


def _clean(message: str) -> None:
    """A one-line message of pt-tvm's own, not a TVM/FFI backtrace."""
    assert message and len(message.splitlines()) == 1, message
    for marker in ("Traceback", 'File "', "InternalError", "Check failed", "tvm::"):
        assert marker not in message, message


def _raises(exc: type, match: str, fn, *args, **kwargs) -> str:
    with pytest.raises(exc, match=match) as info:
        fn(*args, **kwargs)
    assert isinstance(info.value, PtTvmError)
    _clean(str(info.value))
    return str(info.value)


# ------------------------------------------------------------------ kernels pt-tvm cannot read
@TS.prim_func
def plain_tir(a: TS.handle, b: TS.handle):
    A = TS.match_buffer(a, (16,), "float32")
    B = TS.match_buffer(b, (16,), "float32")
    for i in range(16):
        B[i] = A[i] + TS.float32(1)


def copy_only():
    @T.prim_func
    def copy_only(A: T.Tensor((128, 64), "float16"), B: T.Tensor((128, 64), "float16")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((128, 64), "float16")
            T.copy(A, S)
            T.copy(S, B)

    return copy_only


def serial_loop():
    @T.prim_func
    def serial_loop(A: T.Tensor((128, 256), "float16"), B: T.Tensor((128, 64), "float16")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((128, 64), "float16")
            for k in T.serial(4):
                T.copy(A[0, k * 64], S)
            T.copy(S, B)

    return serial_loop


def two_pipelined_loops():
    @T.prim_func
    def two_loops(A: T.Tensor((128, 256), "float16"), B: T.Tensor((128, 64), "float16")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((128, 64), "float16")
            for k in T.Pipelined(4, num_stages=2):
                T.copy(A[0, k * 64], S)
            for k in T.Pipelined(4, num_stages=2):
                T.copy(A[0, k * 64], S)
            T.copy(S, B)

    return two_loops


def im2col_in_loop():
    """``T.im2col`` lowers to ``tl.tileop.im2col``, which the extractor does not model."""

    @T.prim_func
    def im2col(data: T.Tensor((1, 16, 16, 64), "float16"), out: T.Tensor((256, 576), "float16")):
        with T.Kernel(4, threads=128) as bx:
            S = T.alloc_shared((64, 64), "float16")
            for kk in T.Pipelined(9, num_stages=2):
                T.im2col(data, S, bx, kk, 3, 1, 1, 1)
            T.copy(S, out[bx * 64, 0])

    return im2col


def nested_tile_op():
    """A tile op inside a serial loop inside the pipelined loop."""

    @T.prim_func
    def nested(A: T.Tensor((128, 512), "float16"), B: T.Tensor((128, 64), "float16")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((128, 64), "float16")
            for k in T.Pipelined(4, num_stages=2):
                for j in T.serial(2):
                    T.copy(A[0, (k * 2 + j) * 64], S)
            T.copy(S, B)

    return nested


def test_plain_tir_is_not_a_tilelang_kernel() -> None:
    msg = _raises(ExtractionError, "not a TileLang kernel", pt_tvm.extract, plain_tir, "h100")
    assert "T.Kernel" in msg and "'plain_tir'" in msg


def test_copy_only_kernel_has_no_pipelined_loop() -> None:
    msg = _raises(ExtractionError, "no pipelined loop", pt_tvm.extract, copy_only(), "h100")
    assert "T.Pipelined" in msg and "'copy_only'" in msg


def test_serial_loop_is_not_pipelined() -> None:
    _raises(ExtractionError, "no pipelined loop", pt_tvm.extract, serial_loop(), "h100")


def nested_pipelined_loop():
    """T.Pipelined inside a T.serial loop."""

    @T.prim_func
    def nested(A: T.Tensor((128, 512), "float16"), B: T.Tensor((128, 64), "float16")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((128, 64), "float16")
            for j in T.serial(2):
                for k in T.Pipelined(4, num_stages=2):
                    T.copy(A[0, (k * 2 + j) * 64], S)
            T.copy(S, B)

    return nested


def test_pipelined_loop_nested_in_a_serial_loop_is_named() -> None:
    _raises(ExtractionError, "nested inside another statement", pt_tvm.extract, nested_pipelined_loop(), "h100")


def test_chip_without_an_emission_style_says_so(tmp_path) -> None:
    chip = dataclasses.replace(hw.A100, name="no-styles", features=frozenset())
    func = templates.get("gemm").build(M=256, N=256, K=256)
    with pytest.raises(PtTvmError, match="offers no emission style"):
        pt_tvm.schedule(func, chip)


def test_two_pipelined_loops() -> None:
    _raises(ExtractionError, "2 pipelined loops; pt-tvm schedules exactly one", pt_tvm.extract,
            two_pipelined_loops(), "h100")


def test_unsupported_tile_op_is_named() -> None:
    msg = _raises(ExtractionError, "tl.tileop.im2col", pt_tvm.extract, im2col_in_loop(), "h100")
    assert "not supported" in msg and "supported: copy, gemm" in msg


def test_nested_tile_op() -> None:
    msg = _raises(ExtractionError, "nested inside", pt_tvm.extract, nested_tile_op(), "h100")
    assert "tl.tileop.copy" in msg


def half_loaded(prologue_fill: bool):
    """A GEMM loop whose copy loads 32 of the 64 columns of the A tile its gemm reads (a template's chunked copy
    that misses its last chunk); ``prologue_fill``: the tile zeroed before the loop, the rest of it padding."""

    @T.prim_func
    def half(A: T.Tensor((128, 1024), "float16"), B: T.Tensor((1024, 128), "float16"),
             C: T.Tensor((128, 128), "float32")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((128, 64), "float16")
            B_s = T.alloc_shared((64, 128), "float16")
            acc = T.alloc_fragment((128, 128), "float32")
            T.clear(acc)
            if prologue_fill:
                T.clear(A_s)
            for k in T.Pipelined(16, num_stages=2):
                T.copy(A[0:128, k * 64:k * 64 + 32], A_s[0:128, 0:32])
                T.copy(B[k * 64, 0], B_s)
                T.gemm(A_s, B_s, acc)
            T.copy(acc, C)

    return half


def test_a_tile_its_copies_load_in_part() -> None:
    """Copies that write fewer elements of a shared tile than the loop's gemm reads: refused by name, where the
    kernel would multiply whatever the tile held (a paged decode's chunked copy at head dim 80 did, 2026-11-30);
    the same loop over a tile zeroed before it (padding) is read."""
    msg = _raises(ExtractionError, "leave part of the tile unloaded", pt_tvm.extract, half_loaded(False), "h100")
    assert "writes 4096 elements of A_s" in msg and "reads 8192" in msg
    assert pt_tvm.extract(half_loaded(True), "h100").loop_stasks


@pytest.mark.parametrize("thing, type_name", [
    ("not a kernel", "str"),
    (None, "NoneType"),
    (42, "int"),
    (templates.get("gemm"), "Template"),
])
def test_not_a_primfunc(thing, type_name: str) -> None:
    msg = _raises(ExtractionError, "expected a tirx.PrimFunc", pt_tvm.extract, thing, "h100")
    assert type_name in msg


def test_irmodule_is_not_a_primfunc() -> None:
    mod = tvm.IRModule({"main": plain_tir})
    _raises(ExtractionError, "expected a tirx.PrimFunc, got IRModule", pt_tvm.extract, mod, "h100")


def test_no_target() -> None:
    func = templates.get("gemm").build(**GEMM_SMALL)
    _raises(ExtractionError, "no target", pt_tvm.extract, func)


# ------------------------------------------------------------------ targets
@pytest.mark.parametrize("target, named", [
    ("sm_75", "sm_75"),
    ("b200", "b200"),
    ({"kind": "cuda", "arch": "sm_75"}, "sm_75"),
    ({"kind": "llvm"}, "llvm"),
])
def test_unknown_target(target, named: str) -> None:
    func = templates.get("gemm").build(**GEMM_SMALL)
    _raises(HardwareError, named, pt_tvm.extract, func, target)


def test_unknown_tvm_target() -> None:
    func = templates.get("gemm").build(**GEMM_SMALL)
    _raises(HardwareError, "sm_75", pt_tvm.extract, func, tvm.target.Target({"kind": "cuda", "arch": "sm_75"}))
    _raises(HardwareError, "llvm", pt_tvm.extract, func, tvm.target.Target("llvm"))


# ------------------------------------------------------------------ the pass form keeps the error
def test_pass_reports_extraction_error() -> None:
    mod = tvm.IRModule({"main": plain_tir})
    with pytest.raises(ExtractionError, match="not a TileLang kernel") as info:
        with tvm.transform.PassContext():
            tvm.transform.Sequential([pt_tvm.passes.ExtractSTaskGraph("h100")])(mod)
    assert "T.Kernel" in str(info.value)
    _clean(str(info.value))


def test_pass_reports_hardware_error() -> None:
    mod = tvm.IRModule({"main": templates.get("gemm").build(**GEMM_SMALL)})
    with pytest.raises(HardwareError, match="sm_75") as info:
        pt_tvm.passes.ExtractSTaskGraph({"kind": "cuda", "arch": "sm_75"})(mod)
    _clean(str(info.value))


# ------------------------------------------------------------------ templates
def test_unknown_template() -> None:
    msg = _raises(TemplateError, "unknown template 'attention'", templates.get, "attention")
    assert "flash_attention" in msg and "gemm" in msg


@pytest.mark.parametrize("name, overrides, match", [
    ("gemm", {"MM": 512}, "has no parameter 'MM'"),
    ("flash_attention", {"head_dim": 64}, "has no parameter 'head_dim'"),
    ("gemm", {"M": "many"}, "parameter 'M' expects int, got 'many'"),
    ("gemm", {"M": "1.5"}, "parameter 'M' expects int"),
    ("flash_attention", {"causal": "maybe"}, "parameter 'causal' expects bool"),
    ("gemm", {"M": 1.5}, "'M' must be a positive int"),
    ("gemm", {"dtype": "int4"}, "'dtype' must be one of"),
    ("gemm", {"M": 0}, "'M' must be a positive int, got 0"),
    ("flash_attention", {"dim": 100}, "'dim' must be a multiple of 16 up to 256, got 100"),
])
def test_bad_template_parameter(name: str, overrides: dict, match: str) -> None:
    _raises(TemplateError, match, templates.get(name).build, **overrides)


def test_template_parameter_strings_are_coerced() -> None:
    problem, tile = templates.get("flash_attention").resolve(causal="true", seq_len="512", block_M="64",
                                                             threads="128")
    assert problem["causal"] is True and problem["seq_len"] == 512 and tile["block_M"] == 64


# ------------------------------------------------------------------ graphs
def _good_dict() -> dict:
    return pt_tvm.extract(templates.get("gemm").build(**GEMM_SMALL), "h100").to_dict()


def _corrupt(edit) -> str:
    d = _good_dict()
    edit(d)
    return json.dumps(d)


@pytest.mark.parametrize("text, match", [
    pytest.param("{not json", "corrupt sTask-graph JSON", id="not-json"),
    pytest.param("", "corrupt sTask-graph JSON", id="empty"),
    pytest.param("[]", "not a pt-tvm sTask-graph", id="list"),
    pytest.param("null", "not a pt-tvm sTask-graph", id="null"),
    pytest.param("42", "not a pt-tvm sTask-graph", id="number"),
    pytest.param('{"name": "x"}', "not a pt-tvm sTask-graph", id="no-format"),
    pytest.param('{"format": "pt-tvm.plan/1"}', "format='pt-tvm.plan/1'", id="other-format"),
    pytest.param('{"format": "pt-tvm.stask-graph/1"}', "corrupt sTask-graph", id="only-format"),
    pytest.param(_corrupt(lambda d: d.pop("loop")), "loop", id="missing-loop"),
    pytest.param(_corrupt(lambda d: d["stasks"][0].update(op="conv")), "conv", id="bad-op"),
    pytest.param(_corrupt(lambda d: d["stasks"][0].update(seu="npu")), "npu", id="bad-seu"),
    pytest.param(_corrupt(lambda d: d["stasks"][0].pop("reads")), "reads", id="missing-reads"),
    pytest.param(_corrupt(lambda d: d["edges"][0].update(kind="RAR")), "RAR", id="bad-edge-kind"),
    pytest.param(_corrupt(lambda d: d["edges"][0].update(src="ghost")), "ghost", id="unknown-stask"),
    pytest.param(_corrupt(lambda d: d["stasks"].append(d["stasks"][0])), "duplicate sTask ids", id="dup-ids"),
    pytest.param(_corrupt(lambda d: d.update(buffers=[])), "corrupt sTask-graph", id="buffers-list"),
    pytest.param(_corrupt(lambda d: d.update(stasks=["copy_0"])), "corrupt sTask-graph", id="stask-str"),
    pytest.param(_corrupt(lambda d: d.update(loop=[1, 2])), "corrupt sTask-graph", id="loop-list"),
    pytest.param(_corrupt(lambda d: d.update(threads="many")), "many", id="bad-threads"),
])
def test_corrupt_graph_json(text: str, match: str) -> None:
    _raises(GraphError, match, STaskGraph.from_json, text)


def test_graph_of_corrupt_attribute() -> None:
    func = templates.get("gemm").build(**GEMM_SMALL).with_attr(pt_tvm.passes.GRAPH_ATTR, "{oops")
    _raises(GraphError, "corrupt sTask-graph JSON", pt_tvm.passes.graph_of, func)


def test_error_classes() -> None:
    """All user errors are ValueErrors, which the CLI reports in one line."""
    for cls in (ExtractionError, HardwareError, TemplateError, GraphError):
        assert issubclass(cls, ValueError) and issubclass(cls, PtTvmError)
