"""Decoding attention (issue 16): the split-KV template's graph, the search over splits, the paged layout's
emitted CUDA, bad inputs, and the float32 reference against a float64 one; GPU tests check kernels."""
import itertools
import json
import math
import os
import re
import shutil
import subprocess

import pytest
import torch
from _util import compiles_without_spills

from pt_tvm import hw
from pt_tvm.compiler import lower, lower_planned, schedule, schedule_template
from pt_tvm.cost import streaming_eus
from pt_tvm.decode import DecodeInputError, check_inputs, decode_problem
from pt_tvm.graph import BLOCK_SYNC, OpKind, Placement
from pt_tvm.hw import SEUKind
from pt_tvm.passes import ExtractionError, apply_plan, extract_stask_graph
from pt_tvm.plan import Style
from pt_tvm.templates import TemplateError, get
from pt_tvm.templates.base import bucket
from pt_tvm.templates.decode_attention import FusedSplitKV, build_combine, combine_seconds, kv_bytes, pool_pages
from pt_tvm.verify import violations

T = get("decode_attention")
RESULTS = os.path.join(os.path.dirname(__file__), "..", "benchmarks", "results")
H100 = hw.get("h100")


def _graph(**params):
    problem, tile = T.resolve(**params)
    return extract_stask_graph(T.build(**problem, **tile), H100), problem, tile


# ---------------------------------------------------------------- extraction
@pytest.mark.parametrize("splits", [1, 4])
def test_split_kernel_extracts_the_split_loop(splits):
    """Grid splits x KV heads x batch; the loop walks the split's key blocks (TMA copies of K and V, two gemms);
    one split writes O, several write O_partial and LSE."""
    graph, problem, tile = _graph(batch=2, kv_len=4096, block_N=128, num_splits=splits)
    assert dict(graph.grid) == {"bx": splits, "by": problem["kv_heads"], "bz": 2}
    assert graph.loop.trip_count == math.ceil(4096 / 128 / splits)
    loop = graph.loop_stasks
    copies = [t for t in loop if t.op == OpKind.COPY and t.seu == SEUKind.TMA]
    assert sorted(t.reads[0].buffer for t in copies) == ["K", "V"]
    assert sum(t.op == OpKind.GEMM for t in loop) == 2
    for t in copies:  # every block reads its own keys: the split index addresses them (no L2 reuse across blocks)
        assert set(t.reads[0].block_vars) == ({"bx", "by", "bz"} if splits > 1 else {"by", "bz"})
    written = {a.buffer for t in graph.placed(Placement.EPILOGUE) for a in t.writes}
    assert written == ({"O"} if splits == 1 else {"O_partial", "LSE"})


def test_gqa_rows_are_packed_into_one_tile():
    """q_len x heads/kv_heads query rows share one tile: each block reads a KV head once."""
    graph, problem, _ = _graph(q_len=4, heads=64, kv_heads=8)
    qk = next(t for t in graph.loop_stasks if t.op == OpKind.GEMM and "K_shared" in t.read_buffers())
    assert qk.tile_shape[0] == 64 and problem["q_len"] * 8 == 32  # 32 rows padded to a wgmma row tile
    graph, _, _ = _graph(q_len=16, heads=64, kv_heads=8)
    assert next(t for t in graph.loop_stasks if t.op == OpKind.GEMM).tile_shape[0] == 128


@pytest.mark.parametrize("page_size,copies", [(16, 16), (64, 4), (128, 1), (256, 1)])
def test_paged_key_block_reads_its_pages(page_size, copies):
    """A key block reads one page slice, or, when pages are shorter than the block, one copy per page and
    128-byte column chunk (one TMA box each); every copy's page comes from the block table."""
    graph, _, _ = _graph(kv_len=2048, page_size=page_size, block_N=128, num_splits=2)
    k = [t for t in graph.loop_stasks if t.op == OpKind.COPY and t.reads[0].buffer == "K"]
    assert len(k) == copies
    assert all("block_table[bz" in t.reads[0].offsets[0] for t in k)
    assert all(t.bytes == 128 * 128 * 2 // copies for t in k)


def test_combine_is_a_separate_kernel_without_a_pipelined_loop():
    """The combine is a second, small PrimFunc: nothing to pipeline, TileLang's own schedule lowers it."""
    func = build_combine(batch=2, q_len=1, heads=32, dim=128, dtype="float16", num_splits=8)
    with pytest.raises(ExtractionError, match="no pipelined loop"):
        extract_stask_graph(func, H100)
    src = lower_planned(func, H100.tvm_target(), T.pass_configs).kernel_source
    assert "decode_combine_kernel" in src


def test_the_combine_kernel_issues_every_splits_loads_before_it_computes():
    """A thread per element loads its LSE and partial of every split in one unrolled loop, before the first
    exponential: the kernel waits on memory once (it loaded the LSEs, exponentiated them, then loaded the
    partials: two waits, 1.6 us of device time on one H100)."""
    func = build_combine(batch=1, q_len=1, heads=32, dim=128, dtype="bfloat16", num_splits=32)
    src = lower_planned(func, H100.tvm_target(), T.pass_configs).kernel_source
    body = src[src.index("decode_combine_kernel("):]
    first = body[body.index("#pragma unroll"):body.index("exp2")]
    assert "LSE[" in first and "O_partial[" in first
    assert "__launch_bounds__(128" in src  # a thread per element of dim 128


def test_programmatic_dependent_launch_is_the_chips_to_choose():
    """On a chip with ``pdl`` every tile with a combine kernel triggers it (``pdl=1``): the split kernel's first
    statement, the combine waiting for the partials on the device; elsewhere, and with one split or a fused
    combine, none. A pin keeps its value."""
    problem, _ = T.resolve_problem(batch=1, kv_len=16384)
    for chip in ("h100", "a100"):
        tiles = T.tile_candidates(problem, hw.get(chip).features)
        assert {t["pdl"] for t in tiles if t["num_splits"] > 1} == ({1} if chip == "h100" else {0})
        assert {t["pdl"] for t in tiles if t["num_splits"] == 1} == {0}
    assert {t["pdl"] for t in T.tile_candidates(problem, H100.features, {"pdl": 0, "num_splits": 4})} == {0}
    with pytest.raises(TemplateError, match="'pdl'.*needs the combine kernel"):
        T.resolve(num_splits=1, pdl=1)
    problem, tile = T.resolve(batch=2, kv_len=4096, num_splits=4, pdl=1)
    src = lower_planned(T.build(**problem, **tile), H100.tvm_target(), T.pass_configs).kernel_source
    body = src[src.index("__launch_bounds__"):]
    assert "cudaTriggerProgrammaticLaunchCompletion();" in body.split("cache_seqlens[")[0]
    problem, tile = T.resolve(batch=2, kv_len=4096, num_splits=4)
    assert "Programmatic" not in lower(T.build(**problem, **tile), "a100", pass_configs=T.pass_configs).kernel_source


# ---------------------------------------------------------------- the search over splits
def _split_prices(batch: int, kv_len: int) -> dict[int, float]:
    """The best price of each split count (block_N 128) at ``batch`` x ``kv_len`` keys on an H100."""
    tiles = [{"block_N": 128, "num_splits": s, "threads": 128} for s in (1, 4, 16)]
    result, _, _ = schedule_template("decode_attention", "h100", params={"batch": batch, "kv_len": kv_len},
                                     tiles=tiles)
    prices: dict[int, float] = {}
    for c in result.ranked:
        prices.setdefault(c.plan.tile["num_splits"], c.seconds)
    return prices


def test_search_splits_a_small_batch_and_not_a_large_one():
    """At 32k keys, batch 1 x 8 KV heads is 8 blocks per split: the model splits to fill the SMs (16 splits, 8x
    faster than one); batch 128 is 1024 blocks already, where the split counts price within 1% of each other (the
    combine's traffic is 0.4% of the cache's; on one H200 the suite's batch-128 kv-16k plan of 32 splits read at
    102% of the copy peak)."""
    one, many = _split_prices(1, 32768), _split_prices(128, 32768)
    assert min(one, key=one.get) == 16 and one[1] > 4 * one[16]
    assert max(many.values()) < 1.01 * min(many.values())


def test_equal_prices_take_the_shallower_pipeline():
    """Batch 1 x 16k keys: the model prices the pick's 2 stages and 3 alike; 3 measured 4-6% slower on an H200
    (2026-11-26 and 2026-11-29), so the template's re-ranking takes the shallower, not the search's deeper tie."""
    result, _, _ = schedule_template("decode_attention", "h200",
                                     params=dict(batch=1, kv_len=16384, heads=32, kv_heads=8, dim=128))
    best = result.best
    deeper = [c for c in result.ranked if c.plan.tile == best.plan.tile and c.plan.num_stages == 3
              and c.plan.style == best.plan.style]
    assert best.plan.num_stages == 2 and deeper and deeper[0].seconds == best.seconds


def test_split_tiles_pay_for_the_combine():
    problem, tile = T.resolve(batch=4, kv_len=8192)
    assert combine_seconds(problem, {**tile, "num_splits": 1}, H100) == 0.0
    eight = combine_seconds(problem, {**tile, "num_splits": 8}, H100)
    assert 0 < eight < combine_seconds(problem, {**tile, "num_splits": 32}, H100)


def test_the_fused_combine_is_priced_above_the_combine_kernel_at_batch_1_as_measured():
    """Batch 1 of 16k keys in 32 splits (LLaMA-3-8B heads): on one H100 the fused kernel took 3.0 us more device
    time than the split kernel, the combine kernel 1.6 us and a gap of about 0.3
    (benchmarks/results/2026-11-27-h100-graph-calls); the model prices them so, each within 0.2 us."""
    problem, tile = T.resolve(batch=1, kv_len=16384, heads=32, kv_heads=8, dtype="bfloat16", num_splits=32)
    separate = combine_seconds(problem, tile, H100)
    fused = combine_seconds(problem, {**tile, "fused_combine": 1}, H100)
    assert separate < fused
    assert abs(separate - 1.9e-6) < 0.2e-6 and abs(fused - 3.0e-6) < 0.2e-6


def test_the_fused_combine_is_searched_when_pinned_with_several_splits_only():
    """The default tile space leaves the fused combine out (measured slower, see DECODE_ATTENTION's tile space);
    pinned, it comes with every split count but one."""
    problem, _ = T.resolve(batch=1, kv_len=32768)
    assert not any(t["fused_combine"] for t in T.tile_candidates(problem, H100.features))
    tiles = T.tile_candidates(problem, H100.features, {"fused_combine": 1})
    assert {t["num_splits"] for t in tiles} == {s for s in T.tile_space["num_splits"] if s > 1}
    assert len({tuple(sorted(t.items())) for t in tiles}) == len(tiles)


def test_search_prices_the_combine_kernel_and_the_fused_combine():
    """At 16 splits of batch 1 x 32k keys both forms are searched, the fused one as software pipelines only;
    the best of each verifies, and the fused plan's kernel takes the counters."""
    tiles = [{"block_N": 128, "num_splits": 16, "threads": 128, "fused_combine": f} for f in (0, 1)]
    result, _, build = schedule_template("decode_attention", "h100", params={"batch": 1, "kv_len": 32768},
                                         tiles=tiles)
    styles = {(c.plan.tile["fused_combine"], c.plan.style) for c in result.ranked}
    assert styles == {(0, Style.WARP_SPECIALIZED), (0, Style.SOFTWARE_PIPELINE), (1, Style.SOFTWARE_PIPELINE)}
    for form in (0, 1):
        best = next(c for c in result.ranked if c.plan.tile["fused_combine"] == form)
        assert not violations(best.plan, best.graph, H100)
        assert ("Semaphore" in {str(b.name) for b in build(best).buffer_map.values()}) == bool(form)


def test_a_grid_smaller_than_the_gpu_streams_on_fewer_sms():
    """DRAM is shared by the EUs the grid occupies: 8 blocks get 1/8 of it each (as far as an SM can pull)."""
    few, _, _ = _graph(batch=1, kv_len=8192, num_splits=1)
    full, _, _ = _graph(batch=32, kv_len=8192, num_splits=1)
    assert streaming_eus(few, H100) == 8 and streaming_eus(full, H100) == H100.num_eus


# ---------------------------------------------------------------- emission
@pytest.mark.parametrize("page_size", [16, 128])
def test_paged_kernel_lowers_for_hopper_and_compiles(page_size, tmp_path):
    """The best warp-specialized plan of a paged split kernel lowers for sm_90a: TMA loads whose page index
    comes from the block table, wgmma; each role reads the sequence's length once, into a variable (spelled
    out in every mask and page index, its loads took TVM's simplifier minutes of a software pipeline's lowering);
    nvcc compiles it without spills where installed. (Warp-specialized: a software-pipelined plan of this
    dynamic-length loop still takes TileLang's simplifier over a minute to lower.)"""
    graph, problem, tile = _graph(batch=2, kv_len=4096, page_size=page_size, block_N=64, num_splits=4)
    func = T.build(**problem, **tile)
    result = schedule(func, H100)
    plan = next(c.plan for c in result.ranked if c.plan.style == Style.WARP_SPECIALIZED)
    src = lower(func, H100, plan=plan, pass_configs=T.pass_configs).kernel_source
    assert "tma_load" in src and "wgmma" in src and "block_table[" in src
    reads = [line.strip() for line in src.splitlines() if "cache_seqlens[" in line and "__global__" not in line]
    assert len(reads) == len(plan.roles) and all(re.match(r"int \w+ = cache_seqlens\[", r) for r in reads), reads
    if shutil.which("nvcc") is not None:
        compiles_without_spills(src, tmp_path, "decode")


def test_a_persistent_plan_binds_the_length_before_its_last_steps_guard():
    """A persistent warp-specialized plan whose blocks do not divide the grid guards its last step; the length
    each role binds (read from the tile's sequence, clamped to the batch there) comes before that guard, where the
    role's copies can see it (a9fc57c put it under the guard, which TileLang refused; GPU tests on one H200)."""
    params = {"batch": 3, "kv_len": 3000, "ragged": True}
    problem, default = T.resolve(**params)
    result, problem, build = schedule_template("decode_attention", "h200", params=params,
                                               tiles=[{**default, "num_splits": 8, "block_N": 128}])
    best = next(c for c in result.ranked if c.plan.style == Style.WARP_SPECIALIZED and c.plan.persistent)
    src = lower_planned(build(best), hw.get("h200").tvm_target(), T.pass_configs).kernel_source
    reads = [line.strip() for line in src.splitlines() if "cache_seqlens[" in line and "__global__" not in line]
    assert len(reads) == len(best.plan.roles) and all("min(" in r and ", 2)]" in r for r in reads), reads


# ---------------------------------------------------------------- the fused combine
_FUSED = {"batch": 1, "kv_len": 1024, "dim": 64, "heads": 8, "kv_heads": 2, "num_splits": 2, "fused_combine": 1}


def _fused_graph(**overrides):
    problem, tile = T.resolve(**{**_FUSED, **overrides})
    func = T.build(**problem, **tile)
    return func, extract_stask_graph(func, H100)


def _shallowest_fused(**overrides):
    """The fused kernel compiled (no GPU needed) at its shallowest software pipeline, the quickest for TileLang's
    simplifier to lower (tens of seconds on this kernel's dynamic-length loop)."""
    func, _ = _fused_graph(**overrides)
    plan = min((c.plan for c in schedule(func, H100).ranked), key=lambda p: p.num_stages)
    return T.compile(apply_plan(func, plan, H100), H100.tvm_target())


def test_warp_specialized_plans_refuse_the_fused_combine():
    """The fused combine syncs the whole block and elects thread 0 to count arrivals; a warp-specialized plan
    runs it on the consumer warpgroup alone, where TileLang 0.1.15 folded the ``threadIdx.x == 0`` branch (the
    atomic and the counter's reset) away, thread 0 being the producer's. Verification refuses such plans."""
    from pt_tvm.space import Priority, warp_specialized

    func, graph = _fused_graph()
    synced = [t for t in graph.stasks if t.attrs.get(BLOCK_SYNC)]
    assert len(synced) == 1 and synced[0].placement == Placement.EPILOGUE
    assert {"Semaphore", "O"} <= synced[0].write_buffers() and {"O_partial", "LSE"} <= synced[0].read_buffers()
    ws = warp_specialized(graph, H100, consumer_wgs=1, depth=2, pipeline_stage={}, priority=Priority.PROGRAM)
    assert any(v.rule == "emission" and "syncs the whole block" in v.message for v in violations(ws, graph, H100))
    result = schedule(func, H100)
    assert {c.plan.style for c in result.ranked} == {Style.SOFTWARE_PIPELINE} and result.rejected["emission"]


@pytest.fixture(scope="module")
def fused_kernel():
    return _shallowest_fused()


def test_fused_plan_compiles_to_one_kernel_that_counts_and_combines(fused_kernel):
    """One kernel taking the counters and writing O: every block fences its partials and thread 0 bumps the
    counter (acquire-release); the last block fences, combines and zeroes the counter."""
    assert isinstance(fused_kernel, FusedSplitKV) and fused_kernel.kv_heads == 2
    func = fused_kernel.prim_func
    params = [str(func.buffer_map[p].name) for p in func.params]
    assert params[-4:] == ["O_partial", "LSE", "Semaphore", "O"]
    src = fused_kernel.get_kernel_source()
    assert "decode_combine_kernel" not in src and "half_t* __restrict__ O," in src
    tail = src[src.index("__threadfence();"):]
    assert re.search(r"__syncthreads\(\);\s*if \(\(\(int\)threadIdx.x\) == 0\) \{\s*\(\(int\*\)arrived\)\[0\] = "
                     r"AtomicAddRet\(\(&\(Semaphore\[.*\]\)\), 1, 4\);\s*\}\s*__syncthreads\(\);", tail)
    assert re.search(r"if \(\(\(int\*\)arrived\)\[0\] == 1\) \{\s*__threadfence\(\);", tail)
    assert re.search(r"if \(\(\(int\)threadIdx.x\) == 0\) \{\s*Semaphore\[.*\] = 0;", tail)
    assert "__ldg" not in src


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_fused_combine_reads_the_partials_coherently(fused_kernel, tmp_path):
    """After the counter's ``atom.add.acq_rel.gpu`` the partials other blocks wrote are read with plain
    ``ld.global`` (L2), never through the non-coherent read-only path (``ld.global.nc``)."""
    from tilelang.env import CUTLASS_INCLUDE_DIR, TILELANG_TEMPLATE_PATH

    cu = tmp_path / "fused.cu"
    cu.write_text(fused_kernel.get_kernel_source())
    subprocess.run(["nvcc", "--ptx", "-O3", "-gencode=arch=compute_90a,code=sm_90a", "-std=c++20",
                    "-I" + TILELANG_TEMPLATE_PATH, "-I" + CUTLASS_INCLUDE_DIR, "--use_fast_math",
                    "-o", str(tmp_path / "fused.ptx"), str(cu)], check=True, capture_output=True, timeout=600)
    ptx = (tmp_path / "fused.ptx").read_text()
    before, after = ptx.split("atom.add.acq_rel.gpu.s32", 1)
    assert "membar.gl" in before.rsplit("bar.sync", 1)[0][-2000:] and "membar.gl" in after
    assert "ld.global.f32" in after and "ld.global.nc" not in after


def test_fused_combine_lowers_where_the_rows_elements_do_not_fill_whole_thread_shares():
    """4 query rows at head dim 80 are 320 elements for 128 threads: the combine's fragment is padded to whole
    shares (384, 3 a thread) and the padding guarded, where a 4 x 80 fragment stopped TileLang's layout inference
    ("Index mapping does not form a bijective transform")."""
    src = _shallowest_fused(dim=80).get_kernel_source()
    assert "float acc[3];" in src and re.search(r"if \(\(\(int\)threadIdx.x\) < 64\) \{\s*acc\[2\] = ", src)


def test_fused_callable_keeps_one_zeroed_semaphore_per_device():
    """The counters are made on the first call, zeroed, on the inputs' device, and passed to every later call
    (the kernel zeroes them again at its end); a smaller batch takes their first rows, a larger one new counters;
    O, the kernel's last output, is returned."""
    calls = []

    def kernel(*args):
        calls.append(args)
        return ["O_partial", "LSE", "O"]

    fused = FusedSplitKV(kernel, 4)
    q = torch.zeros(2, 1, 8, 64)
    assert fused(q, q) == "O" and fused(q, q) == "O"
    sems = [c[-1] for c in calls]
    assert sems[0].data_ptr() == sems[1].data_ptr() and sems[0].dtype == torch.int32
    assert tuple(sems[0].shape) == (2, 4) and not sems[0].any() and sems[0].device == q.device
    assert list(fused.semaphores) == [q.device]
    fused(q[:1], q[:1])
    assert tuple(calls[-1][-1].shape) == (1, 4) and calls[-1][-1].data_ptr() == sems[0].data_ptr()
    fused(torch.zeros(5, 1, 8, 64), q)
    assert tuple(calls[-1][-1].shape) == (5, 4) and not calls[-1][-1].any()
    first, largest = fused.semaphores[q.device]  # the first counters stay alive: a graph captured with them replays
    assert first.data_ptr() == sems[0].data_ptr() and largest.data_ptr() == calls[-1][-1].data_ptr()


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("params,message", [
    ({"page_size": 48}, "page_size.*power of two"),
    ({"page_size": 8}, "page_size.*from 16 to 256"),
    ({"page_size": 128, "kv_len": 1000}, "kv_len.*multiple of page_size"),
    ({"q_len": 17}, "q_len.*at most 16"),
    ({"heads": 30, "kv_heads": 8}, "kv_heads.*must divide heads"),
    ({"q_len": 16, "heads": 64, "kv_heads": 4}, "256 query rows per KV head"),
    ({"dim": 40}, "dim.*must be a multiple of 16 up to 256, got 40"),
    ({"kv_len": 512, "block_N": 128, "num_splits": 8}, "num_splits.*exceeds the 4 key blocks"),
    ({"num_pages": 64}, "num_pages.*needs a paged cache"),
    ({"softmax_scale": -1.0}, "softmax_scale"),
    ({"fused_combine": 1}, "fused_combine.*needs num_splits > 1"),
    ({"fused_combine": 2, "num_splits": 4}, "fused_combine.*must be 0 .* or 1"),
    ({"fused_combine": -1, "num_splits": 4}, "fused_combine.*must be a positive int"),
])
def test_bad_parameters_are_named(params, message):
    with pytest.raises(TemplateError, match=message):
        T.resolve(**params)


def _tensors(paged: bool, batch=2, q_len=2, heads=8, kv_heads=2, kv_len=256, dim=64, page=32, seed=0):
    problem, _ = T.resolve(batch=batch, q_len=q_len, heads=heads, kv_heads=kv_heads, kv_len=kv_len, dim=dim,
                           page_size=page if paged else 0, ragged=True, dtype="float16")
    return T.make_inputs(problem, "cpu", torch.Generator().manual_seed(seed)), problem


@pytest.mark.parametrize("paged", [False, True])
def test_bad_tensors_are_named(paged):
    inputs, problem = _tensors(paged)
    check_inputs(*inputs)  # the template's own inputs pass
    q, k, v, seqlens, *table = inputs
    table = table[0] if table else None
    over = seqlens.clone()
    over[1] = problem["kv_len"] + 1
    with pytest.raises(DecodeInputError, match="exceeds the cache's capacity of 256"):
        check_inputs(q, k, v, over, table)
    short = seqlens.clone()
    short[0] = 1
    with pytest.raises(DecodeInputError, match="shorter than q_len=2"):
        check_inputs(q, k, v, short, table)
    with pytest.raises(DecodeInputError, match="cache_seqlens must be int32"):
        check_inputs(q, k, v, seqlens.long(), table)
    with pytest.raises(DecodeInputError, match="v_cache is torch.bfloat16"):
        check_inputs(q, k, v.bfloat16(), seqlens, table)
    with pytest.raises(DecodeInputError, match="must be contiguous"):
        check_inputs(q, k.transpose(0, 1).contiguous().transpose(0, 1), v, seqlens, table)
    if paged:
        bad = table.clone()
        bad[1, 0] = k.shape[0]
        with pytest.raises(DecodeInputError, match=r"block_table\[1, 0\] = 16 is out of range: the pool holds 16"):
            check_inputs(q, k, v, seqlens, bad)
        unused = table.clone()  # entries past a sequence's last page are never read
        unused[0, -1] = -7
        full = seqlens.clone()
        full[0] = 2
        check_inputs(q, k, v, full, unused)


def test_op_problem_and_bucket():
    """The op derives the template problem from the tensors; a bucket is the next power of two of the longest
    sequence, at most the capacity."""
    inputs, problem = _tensors(True)
    q, k, _, _, table = inputs
    derived = decode_problem(q, k, table, None)
    assert derived == {**problem, "num_pages": pool_pages(problem), "ragged": False}
    assert T.resolve(**derived)[0]["kv_len"] == 256
    assert [bucket(n, most=100_000) for n in (1, 1000, 1024, 1025, 70_000)] == [1, 1024, 1024, 2048, 100_000]


# ---------------------------------------------------------------- references
def _naive(q, k, v, seqlens, table=None, scale=None):
    """Float64, one (sequence, query, head) at a time: the definition."""
    batch, q_len, heads, dim = q.shape
    groups = heads // k.shape[2]
    scale = scale or 1 / math.sqrt(dim)
    out = torch.zeros(q.shape, dtype=torch.float64)
    for b, i, h in itertools.product(range(batch), range(q_len), range(heads)):
        n = int(seqlens[b])
        rows = []
        for j in range(n - q_len + i + 1):
            if table is None:
                rows.append((k[b, j, h // groups], v[b, j, h // groups]))
            else:
                page, slot = int(table[b, j // k.shape[1]]), j % k.shape[1]
                rows.append((k[page, slot, h // groups], v[page, slot, h // groups]))
        keys = torch.stack([r[0] for r in rows]).double()
        values = torch.stack([r[1] for r in rows]).double()
        p = torch.softmax(keys @ q[b, i, h].double() * scale, dim=0)
        out[b, i, h] = p @ values
    return out


@pytest.mark.parametrize("paged,q_len,scale", [(False, 1, 0.0), (False, 3, 0.0), (True, 1, 0.0), (True, 4, 0.3)])
def test_reference_matches_the_definition(paged, q_len, scale):
    inputs, problem = _tensors(paged, q_len=q_len)
    problem["softmax_scale"] = scale
    got = T.reference(*inputs, **problem)
    want = _naive(*inputs, scale=scale or None)
    assert got.dtype == torch.float32
    assert torch.allclose(got.double(), want, atol=1e-5, rtol=1e-4)


def test_inputs_are_fresh_and_ragged():
    (q, k, _, seqlens, table), problem = _tensors(True, batch=8)
    assert q.abs().sum() > 0 and k.abs().sum() > 0
    assert int(seqlens.min()) >= problem["q_len"] and int(seqlens.max()) <= problem["kv_len"]
    assert len(set(seqlens.tolist())) > 1
    assert len(set(table.flatten().tolist())) == table.numel()  # pages scattered over the pool, none shared


def test_kv_bytes():
    problem, _ = T.resolve(batch=2, kv_len=1024, kv_heads=8, dim=128, dtype="bfloat16")
    assert kv_bytes(problem) == 2 * 2 * 1024 * 8 * 128 * 2


# ---------------------------------------------------------------- on the GPU
def _run_checked(params, tile, style):
    """The best-predicted plan of ``style`` at ``tile``, compiled, against the float32 reference on fresh inputs."""
    from pt_tvm.measure import REL_TOL, rel_err

    vdev = hw.from_device()
    problem, default = T.resolve(**params)
    result, problem, build = schedule_template("decode_attention", vdev, params=params, tiles=[{**default, **tile}])
    best = next(c for c in result.ranked if c.plan.style == style)
    kernel = T.compile(build(best), vdev.tvm_target())
    inputs = T.make_inputs(problem, "cuda", torch.Generator(device="cuda").manual_seed(7))
    err = rel_err(kernel(*inputs), T.reference(*inputs, **problem))
    assert err <= REL_TOL[problem["dtype"]], (params, tile, best.note, err)


WS, SW = Style.WARP_SPECIALIZED, Style.SOFTWARE_PIPELINE


@pytest.mark.gpu
@pytest.mark.parametrize("params,tile,style", [
    ({"batch": 3, "kv_len": 3000, "ragged": True}, {"num_splits": 1, "block_N": 64}, WS),
    ({"batch": 3, "kv_len": 3000, "ragged": True}, {"num_splits": 8, "block_N": 128}, WS),
    ({"batch": 3, "kv_len": 3000, "ragged": True}, {"num_splits": 8, "block_N": 64}, SW),
    ({"batch": 2, "q_len": 4, "heads": 64, "kv_len": 2048, "ragged": True, "dtype": "bfloat16"}, {"num_splits": 4},
     WS),
    ({"batch": 4, "kv_len": 2048, "page_size": 16, "ragged": True}, {"num_splits": 4, "block_N": 64}, WS),
    ({"batch": 4, "kv_len": 2048, "page_size": 16, "q_len": 3, "ragged": True}, {"num_splits": 2, "block_N": 128},
     SW),
    ({"batch": 4, "kv_len": 4096, "page_size": 256, "q_len": 2, "ragged": True}, {"num_splits": 2}, WS),
    ({"batch": 1, "kv_len": 65536, "heads": 8, "kv_heads": 8, "dim": 256}, {"num_splits": 16, "block_N": 64}, WS),
    ({"batch": 2, "kv_len": 1024, "dim": 64, "heads": 32, "kv_heads": 32, "q_len": 16, "ragged": True},
     {"num_splits": 2}, WS),
    ({"batch": 2, "kv_len": 4096, "dim": 96, "ragged": True}, {"num_splits": 4}, SW),  # Phi-3's head dim
    ({"batch": 3, "kv_len": 2048, "dim": 80, "page_size": 16, "q_len": 2, "ragged": True}, {"num_splits": 2}, WS),
    ({"batch": 3, "kv_len": 2048, "dim": 80, "page_size": 16, "q_len": 2, "ragged": True}, {"num_splits": 2}, SW),
    ({"batch": 2, "kv_len": 2048, "dim": 96, "page_size": 32, "ragged": True}, {"num_splits": 4}, WS),
])
def test_decode_kernel_matches_the_reference(params, tile, style):
    _run_checked(params, tile, style)


@pytest.mark.gpu
@pytest.mark.parametrize("params", [
    {"batch": 3, "kv_len": 3000, "ragged": True, "num_splits": 8, "block_N": 64},
    {"batch": 4, "kv_len": 2048, "page_size": 16, "q_len": 3, "ragged": True, "num_splits": 4, "block_N": 64},
    {"batch": 3, "kv_len": 2048, "dim": 80, "ragged": True, "num_splits": 4, "block_N": 64},  # 4 rows x 80
])
def test_fused_combine_matches_the_reference_and_the_combine_kernel(params):
    """The fused kernel's best software pipeline against the float32 reference on fresh ragged inputs (splits past
    a short sequence's end count their arrival too), called twice with new inputs (the last blocks zero the
    counters), and against the split and combine kernels at the same tile."""
    from pt_tvm.measure import REL_TOL, rel_err

    vdev = hw.from_device()
    kernels = {}
    for fused in (0, 1):
        result, problem, build = schedule_template("decode_attention", vdev, params={**params, "fused_combine": fused})
        kernels[fused] = T.compile(build(next(c for c in result.ranked if c.plan.style == SW)), vdev.tvm_target())
    assert isinstance(kernels[1], FusedSplitKV)
    for seed in (7, 8):
        inputs = T.make_inputs(problem, "cuda", torch.Generator(device="cuda").manual_seed(seed))
        out = kernels[1](*inputs)
        tol = REL_TOL[problem["dtype"]]
        assert rel_err(out, T.reference(*inputs, **problem)) <= tol, (params, seed)
        assert rel_err(out, kernels[0](*inputs)) <= tol, (params, seed)
        assert not any(s.any() for s in kernels[1].semaphores[out.device])


@pytest.mark.gpu
def test_op_reuses_the_bucket_plan():
    """Two steps of a decoding loop in one bucket search once; a longer cache moves to the next bucket, and so
    does a batch of one; kernels are compiled once per plan, whatever the batch."""
    from pt_tvm.decode import DecodeAttention
    from pt_tvm.measure import REL_TOL, rel_err

    op = DecodeAttention()
    problem, _ = T.resolve(batch=2, kv_len=8192, page_size=64, ragged=False)
    q, k, v, seqlens, table = T.make_inputs(problem, "cuda", torch.Generator(device="cuda").manual_seed(3))
    for batch, n in ((2, 1500), (2, 1600), (2, 3000), (1, 1500)):
        lengths = torch.full_like(seqlens[:batch], n)
        out = op(q[:batch], k, v, lengths, table[:batch])
        ref = T.reference(q[:batch], k, v, lengths, table[:batch], **problem)
        assert rel_err(out, ref) <= REL_TOL["float16"], (batch, n)
    assert len(op.book) == 3 and len(op.plans()) == len({p.candidate.plan.to_json() for p in op.book.kernels.values()})


@pytest.mark.gpu
@pytest.mark.parametrize("page_size,tile,style", [
    (0, {"num_splits": 1, "block_N": 64}, WS),
    (0, {"num_splits": 8, "block_N": 128}, WS),
    (16, {"num_splits": 4, "block_N": 64}, SW),
    (64, {"num_splits": 4, "fused_combine": 1}, SW),
])
def test_one_dynamic_kernel_serves_every_batch_and_cache(page_size, tile, style):
    """A kernel of ``dynamic`` sizes, searched at batch 4 x 2048 keys, against the float32 reference at other
    batch sizes, capacities and page pools (ragged lengths, fresh inputs each)."""
    from pt_tvm.measure import REL_TOL, rel_err

    vdev = hw.from_device()
    params = dict(batch=4, kv_len=2048, page_size=page_size, ragged=True, dynamic=True)
    result, _, build = schedule_template("decode_attention", vdev, params=params,
                                         tiles=[{**T.resolve(**params)[1], **tile}])
    kernel = T.compile(build(next(c for c in result.ranked if c.plan.style == style)), vdev.tvm_target())
    for seed, (batch, kv_len) in enumerate([(4, 2048), (1, 4096), (6, 1024), (3, 3072)]):
        sized, _ = T.resolve(**{**params, "batch": batch, "kv_len": kv_len, "dynamic": False})
        inputs = T.make_inputs(sized, "cuda", torch.Generator(device="cuda").manual_seed(seed))
        err = rel_err(kernel(*inputs), T.reference(*inputs, **sized))
        assert err <= REL_TOL[sized["dtype"]], (batch, kv_len, err)


def test_split_template_compiles_to_split_and_combine_kernels():
    """With several splits the template's compile returns one callable of two kernels (no GPU needed to build)."""
    from pt_tvm.templates.decode_attention import SplitKV

    problem, tile = T.resolve(batch=2, kv_len=4096, num_splits=4)
    func = T.build(**problem, **tile)
    plan = next(c.plan for c in schedule(func, H100).ranked if c.plan.style == Style.WARP_SPECIALIZED)
    kernel = T.compile(apply_plan(func, plan, H100), H100.tvm_target())
    assert isinstance(kernel, SplitKV)
    assert "decode_attention_kernel" in kernel.get_kernel_source()
    assert "decode_combine_kernel" in kernel.get_kernel_source()
    assert "cudaGridDependencySynchronize" in kernel.combine.get_kernel_source()  # Hopper: a dependent launch


@pytest.mark.parametrize("params,style", [({"dim": 96}, WS), ({"dim": 80, "page_size": 16, "q_len": 4}, WS),
                                          ({"dim": 80, "page_size": 16, "q_len": 4}, SW)])
def test_head_dims_off_64_128_and_256_lower_and_compile(params, style, tmp_path):
    """Phi-3's 96 and Phi-2's 80: each style's best plan lowers and nvcc builds it with no register spill. Paged, a
    page's rows go by the swizzle width's column chunks: 32 bytes at 80 (TMA refused a box the tile's 16-column
    swizzle cuts, and a 64-column chunk left columns 64-79 unread)."""
    result, problem, build = schedule_template("decode_attention", H100, params={"batch": 2, "kv_len": 4096,
                                                                                 **params})
    best = next(c for c in result.ranked if c.plan.style == style)
    src = lower_planned(build(best), H100.tvm_target(), T.pass_configs).kernel_source
    if style == WS and params.get("page_size"):  # K and V: a box per page and 16-column chunk of a 64-key block
        assert src.count("tma_load") == 2 * (best.plan.tile["block_N"] // 16) * (80 // 16)
    if style == WS:  # the producer beside its lone consumer warpgroup keeps 56 registers (40 bytes spilled at 24)
        assert "warpgroup_reg_dealloc<56>" in src and "warpgroup_reg_alloc<240>" in src
    compiles_without_spills(src, tmp_path, f"decode_d{params['dim']}")


# ---------------------------------------------------------------- the decode suite
def test_decode_suite_covers_the_issue_grid():
    """Batch 1-128, kv 1k-128k, GQA 32/8 and 64/8, q_len 1 and 4, both layouts; SDPA only on contiguous caches;
    every problem resolves; the GPU slice is part of the grid."""
    from benchmarks.configs import suite_configs
    from benchmarks.decode import _GPU_SLICE, _SWEEP, _slice

    grid = suite_configs("decode")
    seen = {k: {c.problem[k] for c in grid} for k in ("batch", "kv_len", "heads", "q_len", "page_size")}
    assert seen == {"batch": {1, 8, 32, 128}, "kv_len": {1024, 4096, 16384, 65536, 131072}, "heads": {32, 64},
                    "q_len": {1, 4}, "page_size": {0, 16}}
    for c in grid:
        T.resolve(**c.problem)
        assert c.problem["batch"] * c.problem["kv_len"] <= 1 << 21
        assert ("cudnn-sdpa" in c.systems) == (c.problem["page_size"] == 0)
    keys = {tuple(sorted(c.problem.items())) for c in grid}
    assert all(tuple(sorted(c.problem.items())) in keys for c in _slice(_GPU_SLICE) + _slice(_SWEEP))


def test_rows_get_their_kv_bandwidth():
    from benchmarks.decode import with_bandwidth

    problem, _ = T.resolve(batch=8, kv_len=4096, dtype="bfloat16")
    rows = with_bandwidth([{"kernel": "decode_attention", "config": problem, "ms": 0.05},
                           {"kernel": "gemm", "config": {}, "ms": 1.0}], peak_tbps=3.0)
    assert rows[0]["kv_tbps"] == pytest.approx(kv_bytes(problem) / 0.05e-3 / 1e12)
    assert rows[0]["hbm_fraction"] == pytest.approx(rows[0]["kv_tbps"] / 3.0)
    assert "kv_tbps" not in rows[1]


def test_the_gpu_slice_splits_into_parts_and_a_merged_run_charts(tmp_path):
    """``--part I/N`` takes configs I, I+N, ...: the parts cover the slice once; ``--chart`` draws from a run."""
    pytest.importorskip("matplotlib")
    from benchmarks.decode import _GPU_SLICE, _part, main

    parts = [list(range(len(_GPU_SLICE)))[slice(*(_part(f"{i}/3")[0], None, 3))] for i in range(3)]
    assert sorted(sum(parts, [])) == list(range(len(_GPU_SLICE)))
    with pytest.raises(SystemExit, match="I must be in"):
        _part("3/3")
    with pytest.raises(SystemExit, match="expected I/N"):
        _part("half")
    problem, _ = T.resolve(batch=8, kv_len=4096, dtype="bfloat16")
    run = tmp_path / "decode.json"
    run.write_text(json.dumps({"header": {"hbm_copy_tbps": 3.0}, "rows": [
        {"kernel": "decode_attention", "system": "pt-tvm", "config": problem, "kv_tbps": 2.5, "valid": True}]}))
    assert main(["--chart", str(run), "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "bandwidth.png").stat().st_size > 0


def test_a_queue_of_parts_resumes_where_a_run_stopped():
    """``--part I,J/N`` is the union of parts I and J; ``--skip`` leaves out what a run measured, matched as the
    suite writes its rows (the resolved problem), read here from the committed half grid: its parts 1, 2, 3 and 5
    ran the suite's kernels of dynamic sizes, as the grid's configs ask, its parts 0, 4, 8 and 12 kernels of exact
    sizes (another problem); ``--share I/N`` splits the rest between processes, each config once."""
    from benchmarks.configs import suite_configs
    from benchmarks.decode import select

    grid = suite_configs("decode")
    union = select(grid, part="1,5/16")
    assert union == [c for j, c in enumerate(grid) if j % 16 in (1, 5)]
    assert union == sorted(select(grid, part="1/16") + select(grid, part="5/16"), key=grid.index)
    half = os.path.join(RESULTS, "2026-11-30-h200-x2-decode", "decode.json.gz")
    rest = select(grid, part="6,7,9,10,11,13,14,15/16")
    assert len(rest) == 66 and select(grid, part="6,7,9,10,11,13,14,15/16", skip=[half]) == rest
    assert select(grid, part="1,2,3,5/16", skip=[half]) == [] and len(select(grid, skip=[half])) == 136 - 36
    queue = os.path.join(RESULTS, "2026-11-30-h200-x2-decode-rest")
    first = [os.path.join(queue, f"call1-gpu{g}", "decode.json.gz") for g in (0, 1)]  # the queue's first call
    assert len(select(grid, part="6,7,9,10,11,13,14,15/16", skip=[half, *first])) == 66 - 22
    shares = [select(grid, part="6,7,9,10,11,13,14,15/16", skip=[half], share=f"{i}/2") for i in range(2)]
    assert sorted(shares[0] + shares[1], key=grid.index) == rest
    assert not {id(c) for c in shares[0]} & {id(c) for c in shares[1]}
    with pytest.raises(SystemExit, match="I must be in"):
        select(grid, part="1,16/16")
    with pytest.raises(SystemExit, match="one I"):
        select(grid, share="0,1/2")


def test_a_bucket_plan_applies_at_the_cache_capacity():
    """The op searches at the bucket's length and compiles at the cache's capacity: same sTasks, same plan,
    only the loop's trip count differs; the result lowers."""
    from pt_tvm.decode import PlanBook, planned_for

    tile = {"block_N": 64, "num_splits": 4, "threads": 128}
    result, _, _ = schedule_template("decode_attention", "h100", params={"batch": 2, "kv_len": 1024},
                                     tiles=[tile])
    best = next(c for c in result.ranked if c.plan.style == Style.WARP_SPECIALIZED)
    problem, _ = T.resolve(batch=2, kv_len=8192)
    assert extract_stask_graph(T.build(**problem, **tile), H100).loop.trip_count == 8192 // 64 // 4
    src = lower_planned(planned_for(problem, best, H100), H100.tvm_target(), T.pass_configs).kernel_source
    assert "tma_load" in src and "min(32, " in src  # the capacity's bound on the split's key blocks
    built = []
    book = PlanBook(lambda key: built.append(key) or f"kernel {key}")
    assert book.get(("a", 1024)) == book.get(("a", 1024)) == "kernel ('a', 1024)" and built == [("a", 1024)]


@pytest.mark.parametrize("page_size", [0, 16])
def test_dynamic_sizes_are_kernel_arguments_priced_at_the_problem(page_size):
    """``dynamic``: the batch size and the cache's sizes are kernel arguments (one kernel for every batch and
    cache), priced at the problem's values: the same loop as the kernel of those sizes, the same copies."""
    params = dict(batch=8, kv_len=16384, page_size=page_size, num_splits=4)
    problem, tile = T.resolve(**params, dynamic=True)
    func = T.build(**problem, **tile)
    sizes = {"batch": 8, **({"num_pages": 8192, "max_pages": 1024} if page_size else {"kv_len": 16384})}
    assert dict(func.attrs["pt.symbol_hints"]) == sizes
    graph = extract_stask_graph(func, H100)
    assert graph.symbols == sizes and graph.loop.trip_count == _graph(**params)[0].loop.trip_count == 64
    plan = next(c.plan for c in schedule(func, H100).ranked if c.plan.style == Style.WARP_SPECIALIZED)
    src = lower_planned(apply_plan(func, plan, H100), H100.tvm_target(), T.pass_configs).kernel_source
    head = re.search(r"__global__ void[^{;]*", src).group(0)
    # the capacity bounds the split's key blocks (and a paged table's width is its row stride); a paged pool's
    # page count lives in the TMA descriptor the host builds at launch, so the kernel may not take it
    assert ("int max_pages" if page_size else "int kv_len") in head and "tma_load" in src
    combine = lower_planned(build_combine(None, 1, 32, 128, "float16", 4), H100.tvm_target(),
                            T.pass_configs).kernel_source
    assert "int batch" in re.search(r"__global__ void[^{;]*", combine).group(0)


def test_op_searches_per_bucket_and_compiles_per_plan(monkeypatch):
    """The op searches once per bucket of batch size and length (at the bucket's sizes, dynamic) and compiles once
    per plan: batches of 3 and 4 share a bucket, batch 1 is another; a repeated call does neither."""
    from pt_tvm.decode import DecodeAttention

    compiled = []

    def compile(self, func, target):
        compiled.append(func)
        return lambda q, *rest: torch.zeros_like(q)

    monkeypatch.setattr(type(T), "compile", compile)
    op = DecodeAttention(target="h100")
    problem, _ = T.resolve(batch=4, heads=8, kv_heads=2, kv_len=512, dim=64, ragged=False)
    q, k, v, seqlens = T.make_inputs(problem, "cpu", torch.Generator().manual_seed(0))
    for batch in (3, 4, 1, 3):
        op(q[:batch], k[:batch], v[:batch], seqlens[:batch] - 100)
    assert [(p.problem["batch"], p.problem["kv_len"], p.problem["dynamic"]) for p in op.book.kernels.values()] \
        == [(4, 512, True), (1, 512, True)]
    plans = {p.candidate.plan.to_json() for p in op.book.kernels.values()}
    assert len(op.plans()) == len(compiled) == len(plans)
    assert all(dict(f.attrs["pt.symbol_hints"])["batch"] in (1, 4) for f in compiled)


def test_a_plan_of_dynamic_sizes_compiles_to_one_kernel_whatever_priced_it(monkeypatch):
    """The sizes a kernel of dynamic sizes was priced at change no code: the template hands TileLang the same
    PrimFunc for a plan priced at two batch sizes and lengths, so TileLang's cache compiles it once."""
    import pt_tvm.templates.base as base
    from pt_tvm.decode import planned_for

    handed = []
    kernel = type("Kernel", (), {"get_kernel_source": lambda self: ""})()
    monkeypatch.setattr(base.tilelang, "compile", lambda func, **_: handed.append(func) or kernel)
    monkeypatch.setattr(base, "check_emitted", lambda func, src: None)
    problem, _ = T.resolve(batch=8, kv_len=2048, dynamic=True)
    best = schedule_template("decode_attention", H100, params=dict(problem))[0].best
    base.Template.compile(T, planned_for(problem, best, H100), H100.tvm_target())
    base.Template.compile(T, planned_for(dict(problem, batch=64, kv_len=16384), best, H100), H100.tvm_target())
    assert handed[0].script(show_meta=True) == handed[1].script(show_meta=True)
    assert "pt.symbol_hints" not in handed[0].attrs

