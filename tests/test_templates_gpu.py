"""GPU tests of the kernel templates and of the benchmark path: TileLang's default schedule and pt-tvm's
searched plans, compiled as the benchmarks compile them (the template's pass configs: fast math for
attention and Mamba2), run on fresh random inputs and compared on every output with the float32 PyTorch
reference, outputs in NaN-prefilled memory; the NaN prefill and CUDA-graph timing themselves."""
from __future__ import annotations

import math

import pytest
import tilelang.testing
import torch

from pt_tvm import hw
from pt_tvm.measure import GRAPH, REL_TOL, as_outputs, check_call, kernel_outputs
from pt_tvm.templates import get

FA = {"batch": 2, "heads": 8, "kv_heads": 8, "seq_len": 1024, "dim": 128}
GEMM = {"M": 1024, "N": 1024, "K": 1024}


def _inputs(template, problem: dict, seed: int = 0) -> tuple:
    return template.make_inputs(problem, "cuda", torch.Generator(device="cuda").manual_seed(seed))


def _check(label: str, template, kernel, problem: dict) -> None:
    """Every output of ``kernel`` within REL_TOL of the reference, each allocated output NaN-prefilled
    (printed for the log)."""
    inputs = _inputs(template, problem)
    refs = as_outputs(template.reference(*inputs, **problem))
    checks = check_call(kernel_outputs(template, kernel), inputs, refs, inout=template.inout_idx)
    print(f"REL_ERR {label} " + " ".join(f"{c.rel_err:.3e}({c.prefill})" for c in checks))
    assert all(c.rel_err < REL_TOL[problem["dtype"]] for c in checks), f"{label}: {checks}"
    assert [c.prefill for c in checks] == ["nan"] * len(template.out_idx) + ["zero"] * len(template.inout_idx)


def _default_schedule(name: str, overrides: dict, num_stages: int) -> tuple:
    """TileLang's default schedule of the template, compiled with the template's pass configs; (template,
    kernel, problem)."""
    template = get(name)
    problem, tile = template.resolve(**overrides)
    kernel = template.compile(template.builder(**problem, **tile, num_stages=num_stages), "cuda")
    return template, kernel, problem


@pytest.mark.gpu
@pytest.mark.parametrize(
    "label, overrides, num_stages",
    [
        ("fa_d128", {}, 2),
        ("fa_d128_causal", {"causal": True}, 2),
        ("fa_d128_gqa2", {"kv_heads": 2}, 2),
        ("fa_d64", {"dim": 64}, 2),
        ("fa_d256", {"dim": 256, "block_M": 64, "block_N": 64, "threads": 128}, 1),
        ("fa_d128_bf16", {"dtype": "bfloat16"}, 2),
    ],
)
def test_flash_attention(label: str, overrides: dict, num_stages: int) -> None:
    _check(label, *_default_schedule("flash_attention", {**FA, **overrides}, num_stages))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_gemm(dtype: str) -> None:
    _check(f"gemm_{dtype}", *_default_schedule("gemm", {**GEMM, "dtype": dtype}, 3))


@pytest.mark.gpu
def test_gemm_rowsum() -> None:
    """``kernel(A, B, S)`` returns ``C`` and adds the row sums into the zeroed ``S``: both compared."""
    _check("gemm_rowsum", *_default_schedule("gemm_rowsum", GEMM, 3))


@pytest.mark.gpu
@pytest.mark.parametrize("num_stages", [2, 3])
@pytest.mark.parametrize("tile", [{}, {"block_M": 128}], ids=["default_tile", "block_M128"])
def test_chunk_scan(num_stages: int, tile: dict) -> None:
    """TileLang's own schedule of chunk_scan (warp-specialized on Hopper) at the benchmarks' depths and the
    autotuner's tile: the rows' decays are read before the loop, and a first row block has fewer key
    blocks than stages (docs/NOTES-parity.md)."""
    label = f"chunk_scan_{'_'.join(f'{k}{v}' for k, v in tile.items()) or 'default'}_ns{num_stages}"
    _check(label, *_default_schedule("chunk_scan", {"seqlen": 1024, **tile}, num_stages))


SEARCHED = [
    ("gemm", dict(GEMM)),
    ("gemm", dict(GEMM, dtype="bfloat16")),
    ("gemm_rowsum", dict(GEMM)),
    ("gemm", dict(M=777, N=6144, K=4096, trans_B=True)),
    ("gemm", dict(M=2500, N=4096, K=4096, trans_B=True)),  # 128x224 tiles, 3 full waves
    ("gemm_swiglu", dict(M=777, N=1000, K=1024)),
    ("gemm_swiglu", dict(M=512, N=14336, K=4096)),  # 128x224 tiles: halves of 112 columns
    ("gemm_swiglu", dict(M=300, N=1000, K=1024, block_N=224)),  # and a ragged last block of them
    ("gemm_rope", dict(M=2 * 777, seqlen=777)),  # LLaMA-3-8B's QKV with RoPE, two ragged sequences
    ("flash_attention_qkv", dict(batch=2, seq_len=777)),
    ("flash_attention", dict(FA)),
    ("flash_attention", dict(FA, causal=True, kv_heads=2)),
    ("flash_attention", dict(FA, dim=64, heads=16, kv_heads=16)),
    ("chunk_state", dict(seqlen=1024)),
    ("chunk_scan", dict(seqlen=1024)),
]


@pytest.mark.gpu
@pytest.mark.parametrize("name, params", SEARCHED, ids=[f"{n}-{i}" for i, (n, _) in enumerate(SEARCHED)])
def test_searched_plan(name: str, params: dict) -> None:
    """The plan pt-tvm's search picks for this GPU (the benchmarks' ``pt-tvm-model``), compiled as the
    benchmarks compile it, on every output."""
    from pt_tvm.compiler import schedule_template

    vdev = hw.from_device()
    template = get(name)
    result, problem, build = schedule_template(name, vdev, params=params)
    kernel = template.compile(build(), vdev.tvm_target())
    _check(f"searched_{name}_{result.best.note}", template, kernel, problem)


REUSED = [
    ("gemm", dict(M=777, N=4096, K=4096, trans_B=True)),
    ("gemm", dict(M=1000, N=1000, K=1000, dtype="bfloat16")),
    ("gemm_rowsum", dict(GEMM)),
    ("gemm_swiglu", dict(M=777, N=1000, K=1024)),
    ("gemm_swiglu", dict(M=777, N=14336, K=4096)),
]


@pytest.mark.gpu
@pytest.mark.parametrize("name, params", REUSED, ids=[f"{n}-{i}" for i, (n, _) in enumerate(REUSED)])
def test_epilogue_tile_over_the_stages(name: str, params: dict) -> None:
    """The best-priced warp-specialized plan whose buffers fit only with the epilogue's tile laid over the
    loop's stages (TileLang's aggressive merge; 128x256 tiles 4 deep, 208x128 swapped 5 deep): the epilogue
    waits for the last reads of the stages, on every output, ragged tiles included. The default search keeps
    an L2-bound loop's loads in flight to 128 KB (``SearchSpace.l2_bound_inflight``), which leaves none of
    these plans: the search here lifts that limit."""
    from pt_tvm.compiler import planned_func, schedule_template
    from pt_tvm.plan import Style
    from pt_tvm.search import SearchSpace

    vdev = hw.from_device()
    result, problem, _ = schedule_template(name, vdev, params=params, space=SearchSpace(l2_bound_inflight=1 << 30))
    apart = lambda c: sum((b.nbytes or 0) * c.plan.versions(n)  # noqa: E731
                          for n, b in c.graph.buffers.items() if b.scope == "shared")
    reused = next(c for c in result.ranked if c.plan.style == Style.WARP_SPECIALIZED and not c.plan.persistent
                  and apart(c) > vdev.eu.smem_per_block)
    template = get(name)
    kernel = template.compile(planned_func(name, problem, reused, vdev), vdev.tvm_target())
    _check(f"reused_{name}_{reused.note}", template, kernel, problem)


@pytest.mark.gpu
def test_measured_refinement_checks_every_output() -> None:
    """pt_tvm.tune's check of its candidates covers gemm_rowsum's row sums: its pick passes on both; the
    candidates were timed replayed from CUDA graphs (TileLang kernels capture)."""
    from pt_tvm.tune import tune_template

    template = get("gemm_rowsum")
    tr = tune_template("gemm_rowsum", hw.from_device(), params=GEMM, top_k=2, workers=1, rep_ms=20.0)
    assert tr.best.valid and tr.best.rel_err < REL_TOL["float16"] and tr.timing == GRAPH
    _check("tuned_gemm_rowsum", template, tr.kernel, dict(tr.problem))


@pytest.mark.gpu
def test_nan_prefill_catches_an_element_left_unwritten() -> None:
    """The caching allocator hands the call NaN-filled memory: a kernel that skips one element of 1024x1024
    (relative error ~1e-3 with zero there, under fp16's tolerance) reads NaN and fails."""
    template = get("gemm")
    problem, _ = template.resolve(M=1024, N=1024, K=64)
    inputs = _inputs(template, problem)
    refs = as_outputs(template.reference(*inputs, **problem))

    def skips_one(a, b):
        out = torch.empty(refs[0].shape, dtype=a.dtype, device=a.device)
        out.view(-1)[:-1] = (a @ b).view(-1)[:-1]
        return out

    (check,) = check_call(skips_one, inputs, refs)
    assert check.prefill == "nan" and not math.isfinite(check.rel_err)


@pytest.mark.gpu
def test_two_way_timing_captures_tilelang_and_torch_calls() -> None:
    """Both a TileLang kernel and a PyTorch call replay from a CUDA graph; both ways are timed."""
    from benchmarks.timing import GRAPH, time_two_ways
    from pt_tvm.measure import input_sets

    template, kernel, problem = _default_schedule("gemm_rowsum", GEMM, 3)
    sets = input_sets(lambda seed: _inputs(template, problem, seed), 1, 1, max_sets=2)
    fns = {"tilelang": kernel_outputs(template, kernel), "torch": lambda a, b, s: (a @ b, (a @ b).sum(1))}
    timings = time_two_ways(fns, sets, rounds=2, warmup_ms=10.0, round_ms=20.0)
    for name, t in timings.items():
        assert t.graph is not None, f"{name}: {t.graph_error}"
        assert t.headline[0] == GRAPH and t.graph.ms > 0 and t.queued.ms > 0
        print(f"TIMING {name}: queued {t.queued.ms * 1e3:.1f} us, graph {t.graph.ms * 1e3:.1f} us")


@pytest.mark.gpu
def test_tilelang_peers_build_and_pass(tmp_path) -> None:
    """TileLang's role-based warp specialization and its autotuner (a small tile space: 4 tiles fit 64^3,
    one depth), each checked on every output; the autotuner's caches stay in the run-local folder."""
    from benchmarks.systems import build_system

    vdev = hw.from_device()
    template = get("gemm")
    problem, _ = template.resolve(M=64, N=64, K=64)
    inputs = _inputs(template, problem)
    refs = as_outputs(template.reference(*inputs, **problem))
    for system, options in (("tilelang-ws", {}),
                            ("tilelang-autotune", {"autotune_cache": str(tmp_path), "autotune_stages": (2,)})):
        fn, info = build_system(system, template, problem, vdev, **options)
        assert fn is not None, info.get("error")
        (check,) = check_call(fn, inputs, refs)
        assert check.rel_err < REL_TOL["float16"] and check.prefill == "nan", (system, check)
    assert info["autotune_configs"] == 4 and info["tile"]["block_M"] == 64
    assert any(p.name == "autotuner" for p in tmp_path.rglob("*")), "the autotuner's results are run-local"


if __name__ == "__main__":
    tilelang.testing.main()
