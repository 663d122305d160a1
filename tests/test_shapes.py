"""Shapes and tiles (issue 14 items 1-2, issue 18 item 3): a shape is checked against the tiles the search may
choose, tile parameters a user passes pin that dimension of the search, and tiles no kernel can launch are
refused in one line naming the parameter."""
from __future__ import annotations

import re
import shutil
import warnings

import pytest
import tilelang.language as T
from _util import compiles_without_spills

import pt_tvm
from benchmarks.experiments import ragged
from pt_tvm import hw, templates
from pt_tvm.cli import main
from pt_tvm.compiler import lower_planned, schedule_template
from pt_tvm.errors import PtTvmError, SymbolicSizeWarning
from pt_tvm.passes import SYMBOLIC_HINT, ExtractionError
from pt_tvm.templates import TemplateError


# ---------------------------------------------------------------- tile pins
def _tiles(result) -> set[tuple]:
    return {tuple(sorted(c.plan.tile.items())) for c in result.ranked}


def test_a_shape_the_default_tile_does_not_divide_is_searched():
    """M=N=K=192: the search takes the tiles that fit instead of stopping at the default block_M=128."""
    problem, pins = templates.get("gemm").resolve_problem(M=192, N=192, K=192)
    assert (problem["M"], pins) == (192, {})
    result, _, _ = schedule_template("gemm", "h100", params={"M": 192, "N": 192, "K": 192})
    assert result.ranked


@pytest.mark.parametrize("pins", [{"block_M": 64}, {"block_N": 32, "block_K": 64}, {"threads": 256}])
def test_tile_parameters_pin_the_search(pins):
    """Every candidate the search priced has the pinned values, also one outside the template's tile space
    (block_N=32); the other dimensions are still searched."""
    result, _, _ = schedule_template("gemm", "h100", params={"M": 1024, "N": 1024, "K": 1024, **pins})
    tiles = _tiles(result)
    assert all(dict(t)[k] == v for t in tiles for k, v in pins.items())
    assert len(tiles) > 1


def test_unpinned_search_tries_more_than_the_pinned_one():
    """The control: without the pin, the search prices block_M values other than 64."""
    result, _, _ = schedule_template("gemm", "h100", params={"M": 1024, "N": 1024, "K": 1024})
    assert {dict(t)["block_M"] for t in _tiles(result)} - {64}


def test_pins_reach_tile_candidates():
    t = templates.get("flash_attention")
    problem, pins = t.resolve_problem(seq_len=512, block_M=64, threads=128)
    assert pins == {"block_M": 64, "threads": 128}
    cands = t.tile_candidates(problem, pins=pins)
    assert cands and all(c["block_M"] == 64 and c["threads"] == 128 for c in cands)
    assert {c["block_N"] for c in cands} == {64, 128}


# ---------------------------------------------------------------- tiles no kernel can launch
BAD_TILES = [
    ("gemm", {"threads": 2048}, "'threads'=2048 exceeds the 1024 threads a block can have"),
    ("flash_attention", {"threads": 4096}, "'threads'=4096 exceeds the 1024"),
    ("gemm", {"block_M": 96}, "'block_M' must be a power of two, got 96"),
    ("chunk_scan", {"block_K": 48}, "'block_K' must be a power of two, got 48"),
    ("gemm", {"block_K": 0}, "'block_K' must be a positive int, got 0"),
    ("flash_attention", {"block_N": -64}, "'block_N' must be a positive int, got -64"),
    ("decode_attention", {"num_splits": 0}, "'num_splits' must be a positive int, got 0"),
    ("gemm", {"threads": 100}, "'threads' must be a multiple of 32"),
]


@pytest.mark.parametrize("name, params, message", BAD_TILES)
def test_impossible_tiles_are_refused_by_name(name, params, message):
    for call in (templates.get(name).resolve, templates.get(name).resolve_problem, templates.get(name).build):
        with pytest.raises(TemplateError, match=message) as info:
            call(**params)
        assert isinstance(info.value, PtTvmError) and "\n" not in str(info.value)
    with pytest.raises(TemplateError, match=message):
        schedule_template(name, "h100", params=params)


@pytest.mark.parametrize("command", ["graph", "schedule"])
def test_cli_refuses_an_impossible_tile_in_one_line(tmp_path, capsys, command):
    rc = main([command, "gemm", "--param", "threads=2048", "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert rc == 2 and err.strip().splitlines() == [
        "pt-tvm: error: gemm: parameter 'threads'=2048 exceeds the 1024 threads a block can have"]


# ---------------------------------------------------------------- any shape: the real trip counts
def _graph(name: str, **params):
    return pt_tvm.extract(templates.get(name).build(**params), "h100")


def test_ragged_gemm_trip_counts_are_ceil_divs():
    g = _graph("gemm", M=200, N=300, K=200, block_M=128, block_N=128, block_K=64)
    assert (g.grid["bx"], g.grid["by"], g.loop.trip_count) == (3, 2, 4)


@pytest.mark.parametrize("K, tma", [(1000, True), (1008, True), (1004, False), (1001, False)])
def test_rows_tma_cannot_address_are_loaded_by_every_thread(K, tma):
    """TMA takes a tensor whose row strides are multiples of 16 bytes (fp16 A rows of 2000 and 2016 bytes, not 2008
    or 2002: what TileLang 0.1.15 lowers, checked here in the emitted CUDA): a load it cannot take is priced on the
    LSU, and no warp-specialized plan leaves it to a producer warp's 32 threads; the software pipeline's threads
    copy it (cp.async where the rows are 8-byte aligned). Consecutive rows pinned (``row_group`` 1): the kernel
    would otherwise load them in groups of rows 16 apart (below)."""
    vdev = hw.get("h100")
    result, problem, build = schedule_template("gemm", vdev, params={"M": 1024, "N": 1024, "K": K, "row_group": 1})
    seu = {t.writes[0].buffer: t.seu for t in result.best.graph.stasks if t.op.value == "copy" and t.writes
           and t.writes[0].scope == "shared"}
    assert seu["A_s"] == (hw.SEUKind.TMA if tma else hw.SEUKind.LSU) and seu["B_s"] == hw.SEUKind.TMA
    assert all((c.plan.style.value == "warp_specialized") == tma for c in result.ranked)
    cuda = lower_planned(build(), vdev.tvm_target(), templates.get("gemm").pass_configs).kernel_source
    assert ("A_desc" in cuda) == tma
    assert ("cp_async_gs<8>" in cuda) == (K == 1004)


@pytest.mark.parametrize("trans_B", [False, True])
def test_rows_at_a_16_byte_stride_are_loaded_by_tma(trans_B):
    """The same K = 1001 with A's rows 1008 elements apart (``lda``; a view of a wider tensor, or rows the op copied
    to 16-byte boundaries): a tensor map of the 1001 columns at that stride, so TMA loads the tiles and
    zero-fills past the last column, and the warp-specialized plans are back; ``ldb`` alike for B's rows."""
    vdev = hw.get("h100")
    K, N = 1001, 1000
    result, _, build = schedule_template("gemm", vdev, params={"M": 1024, "N": N, "K": K, "trans_B": trans_B,
                                                               "lda": 1008, "ldb": 1008 if trans_B else 1024})
    graph = result.best.graph
    assert graph.buffers["A"].strides == (1008, 1) and all(
        t.seu == hw.SEUKind.TMA for t in graph.loop_stasks if t.op.value == "copy")
    assert result.best.plan.style.value == "warp_specialized"
    host = lower_planned(build(), vdev.tvm_target(), templates.get("gemm").pass_configs).host_mod.script()
    assert _tensor_map(host, "A_desc") == (K, 1024, 1008 * 2)


@pytest.mark.parametrize("M, group", [(2048, 16), (1000, 8), (777, 1)])
def test_output_rows_off_16_byte_boundaries_are_stored_by_tma_in_row_groups(M, group):
    """C [M, 50257] (GPT-2's lm_head): its rows start off 16-byte boundaries, so a tile takes rows 16 apart where M
    allows (8 apart at M = 1000), read and written through [M / g, g K] and [M / g, g N] views of A and C that TMA
    addresses: the host builds the views' tensor maps, the staged tile is one TMA store, and B's tile (whose first
    row a residue shifts by less than 16) moves with bx alone. M = 777 is no whole number of groups: TileLang's
    element stores."""
    N, K = 50257, 768
    result, cuda, host = _lowered_on_h200("gemm", {"M": M, "N": N, "K": K, "trans_B": True, "block_K": 64})
    graph = result.best.graph
    if group == 1:
        assert "C_g" not in graph.buffers and "tma_store" not in cuda
        return
    assert graph.buffers["C_g"].shape == (M // group, group * N)
    assert graph.buffers["A_g"].shape == (M // group, group * K)
    a, b = (next(t for t in graph.loop_stasks if t.reads[0].buffer == name) for name in ("A_g", "B"))
    assert a.reads[0].block_vars == ("by",) and b.reads[0].block_vars == ("bx",)
    assert a.seu == b.seu == hw.SEUKind.TMA and "tma_store(C_g_desc" in cuda
    (store,) = [t for t in graph.stasks if any(w.buffer == "C_g" for w in t.writes)]  # if whole: TMA, else elements
    assert store.seu == hw.SEUKind.TMA and store.attrs["branch_share"] == "unknown"  # priced as the TMA store
    assert _tensor_map(host, "C_g_desc") == (group * N, M // group, group * N * 2)


def _lowered_on_h200(name: str, params: dict) -> tuple:
    """(the search's result, the emitted CUDA, the host module's script) of template ``name`` at ``params``."""
    vdev = hw.get("h200")
    result, _, build = schedule_template(name, vdev, params=params)
    lowered = lower_planned(build(), vdev.tvm_target(), templates.get(name).pass_configs)
    return result, lowered.kernel_source, lowered.host_mod.script()


def _tensor_map(host: str, desc: str) -> tuple[int, ...] | None:
    """A 2-D tensor map's (columns, rows, row stride in bytes) as the host builds it."""
    found = re.search(rf'__tvm_tensormap_create_tiled", {desc}, \d+, 2, \w+, (\d+), (\d+), 2, (\d+),', host)
    return tuple(map(int, found.groups())) if found else None


@pytest.mark.parametrize("M, K, lda, ldb, group", [(4096, 4001, 0, 0, 16), (1000, 1004, 0, 0, 8),
                                                   (512, 1001, 1003, 0, 16), (777, 1001, 0, 0, 1),
                                                   (512, 1001, 0, 515, 1)])
def test_input_rows_off_16_byte_boundaries_are_loaded_by_tma_in_row_groups(M, K, lda, ldb, group):
    """A [M, 4001] (rows of 8002 bytes) and B [K, N]: a tile takes rows 16 apart (8 at M = 1000), loaded through an
    [M / g, g K] view of A whose rows TMA addresses, each residue's K tiles starting before its row on a 2g-byte
    boundary (B's tile moves with them, its rows before 0 and past K TMA's zeros); the tiles' columns outside the
    row (a neighbour's) are zeroed in shared memory, made visible to the wgmma by a proxy fence, on the steps that
    hold them; the twin's trip count (ceil((K + g) / block_K)). M = 777 is no whole number of groups, and B's rows
    515 apart no TMA map (its first tile starts before row 0): consecutive rows on the LSU."""
    strides = {key: value for key, value in (("lda", lda), ("ldb", ldb)) if value}
    result, cuda, host = _lowered_on_h200("gemm", {"M": M, "N": 512, "K": K, "block_K": 64, **strides})
    graph = result.best.graph
    if group == 1:
        assert "A_g" not in graph.buffers and "A_desc" not in cuda
        return
    row = lda or K
    assert graph.buffers["A_g"].shape == (M // group, group * row) and graph.buffers["C_g"].shape == (M // group,
                                                                                                      group * 512)
    assert graph.loop.trip_count == -(-(K + group) // 64)
    loads = {t.reads[0].buffer: t for t in graph.loop_stasks if t.op.value == "copy"}
    assert loads["A_g"].seu == loads["B"].seu == hw.SEUKind.TMA and result.best.plan.style.value == "warp_specialized"
    (mask,) = [t for t in graph.loop_stasks if t.op.value != "copy" and any(w.buffer == "A_s" for w in t.writes)]
    assert 0 < float(mask.attrs["branch_share"]) < 1  # the first and last steps, counted over the grid
    assert _tensor_map(host, "A_g_desc") == (group * row, M // group, group * row * 2)
    assert "tma_load(A_g_desc" in cuda and "tma_store(C_g_desc" in cuda and "fence_proxy_async" in cuda
    assert "half_t(0x0p+0f" in cuda  # the neighbours' columns zeroed


@pytest.mark.parametrize("dim", [32, 80, 96, 160])
def test_head_dims_off_64_128_and_256_lower_and_compile(dim, tmp_path):
    """Any head dim that is a multiple of 16 up to 256 (Phi-2's 80, Phi-3's 96, a diffusion model's 160): the search
    finds a plan, TileLang lowers it and nvcc builds it with no register spill; a packed block's per-head boxes
    take whole 64-column panels, so packing is refused by name where the last panel is partial."""
    params = {"batch": 2, "heads": 8, "kv_heads": 2, "seq_len": 1000, "dim": dim, "causal": True}
    result, cuda, _ = _lowered_on_h200("flash_attention", params)
    assert result.best.plan.tile["pack_gqa"] == 0
    compiles_without_spills(cuda, tmp_path, f"attention_d{dim}")
    with pytest.raises(TemplateError, match=f"'pack_gqa' =1 needs a head dim of whole 64-column panels, got dim={dim}"):
        schedule_template("flash_attention", hw.get("h200"), params={**params, "pack_gqa": 1})


def test_the_model_prices_row_groups_like_the_twin_and_element_stores_as_measured():
    """GPT-2's lm_head at one tile (128 x 256 x 64) on one H200 measured element stores 0.80 of its twin's TFLOP/s
    and rows 16 apart 0.99 (benchmarks/results/2026-11-28-h200-row-groups, row_groups-17b649c): the model prices
    the TMA store of a row group with its DRAM bytes, as the twin's, and an element store at the width it moves."""
    tile = {"block_M": 128, "block_N": 256, "block_K": 64, "threads": 128}

    def priced(n: int, group: int) -> float:
        result, _, _ = schedule_template("gemm", hw.get("h200"), params={"M": 2048, "N": n, "K": 768, "trans_B": True,
                                                                         **tile, "row_group": group})
        return result.best.seconds

    twin, grouped, elements = priced(50304, 0), priced(50257, 16), priced(50257, 1)
    assert abs(grouped / twin - 1) < 0.02 and 1.15 < elements / twin < 1.35, (twin, grouped, elements)


@pytest.mark.parametrize("params, message", [
    ({"M": 1000, "row_group": 16}, "'row_group'=16 takes a tile's rows 16 apart, which needs .* a multiple of 16"),
    ({"M": 2048, "N": 50304, "row_group": 8}, "'row_group'=8 .* C's rows off 16-byte boundaries with trans_B"),
    ({"M": 2048, "row_group": 4}, "'row_group' must be 0 \\(chosen\\), 1 \\(consecutive rows\\) or one of"),
])
def test_a_row_group_that_cannot_serve_is_refused(params, message):
    with pytest.raises(TemplateError, match=message):
        schedule_template("gemm", hw.get("h200"), params={"N": 50257, "K": 768, "trans_B": True, **params})


@pytest.mark.parametrize("key, value, message", [
    ("lda", 1000, "'lda' .* must be 0 or at least the row's 1001 elements, got 1000"),
    ("ldb", -8, "'ldb' .* must be 0 or at least the row's 512 elements, got -8"),
    ("lda", 1008.0, "'lda' .* got 1008.0"),
])
def test_row_strides_shorter_than_a_row_are_refused(key, value, message):
    with pytest.raises(TemplateError, match=message):
        schedule_template("gemm", hw.get("h100"), params={"M": 256, "N": 512, "K": 1001, key: value})


def test_attention_views_are_loaded_by_tma_at_their_strides():
    """Queries of a ``[batch, heads, seqlen, dim]`` tensor transposed and keys/values that are heads of one fused
    projection (``q_strides``, ``k_strides``, ``v_strides``): the extraction reads the strides, the plan stays
    warp-specialized with every key and value tile a TMA load, and the host builds each tensor map at its strides."""
    vdev = hw.get("h100")
    B, S, H, KV, D = 2, 1024, 8, 2, 128
    fused = (S * (H + 2 * KV) * D, (H + 2 * KV) * D, D)
    result, _, build = schedule_template("flash_attention", vdev, params={
        "batch": B, "heads": H, "kv_heads": KV, "seq_len": S, "dim": D, "causal": True,
        "q_strides": (H * S * D, D, S * D), "k_strides": fused, "v_strides": fused})
    graph = result.best.graph
    assert graph.buffers["Q"].strides == (H * S * D, D, S * D, 1) and graph.buffers["K"].strides == (*fused, 1)
    assert result.best.plan.style.value == "warp_specialized"
    loads = {t.writes[0].buffer: t.seu for t in graph.loop_stasks
             if t.op.value == "copy" and t.writes[0].scope == "shared"}
    assert loads == {"K_shared": hw.SEUKind.TMA, "V_shared": hw.SEUKind.TMA}
    host = lower_planned(build(), vdev.tvm_target(), templates.get("flash_attention").pass_configs).host_mod.script()
    for name, strides in (("Q", (H * S * D, D, S * D)), ("K", fused), ("V", fused)):
        found = re.search(rf'__tvm_tensormap_create_tiled", {name}_desc, \d+, 4, {name}, ([^)]*)', host)
        assert found, name
        args = [int(a) for a in found.group(1).split(", ")[:8]]  # 4 dims, then their strides in bytes (first: 2)
        assert args[4] == 2 and sorted(args[5:8]) == sorted(2 * v for v in strides), (name, args)


def test_packed_views_are_loaded_by_tma_at_their_strides():
    """The varlen template over the heads of one packed projection output (token and head strides): TMA loads of
    every key and value tile, tensor maps at the strides, the symbolic token count kept."""
    vdev = hw.get("h100")
    fused = ((8 + 2 * 2) * 128, 128)
    result, _, build = schedule_template("flash_attention_varlen", vdev, params={
        "batch": 4, "heads": 8, "kv_heads": 2, "max_seqlen_q": 1024, "max_seqlen_k": 1024, "dim": 128,
        "causal": True, "q_strides": fused, "k_strides": fused, "v_strides": fused})
    graph = result.best.graph
    assert graph.buffers["K"].strides == (*fused, 1)
    loads = {t.writes[0].buffer: t.seu for t in graph.loop_stasks
             if t.op.value == "copy" and t.writes[0].scope == "shared"}
    assert loads == {"K_shared": hw.SEUKind.TMA, "V_shared": hw.SEUKind.TMA}
    host = lower_planned(build(), vdev.tvm_target(),
                         templates.get("flash_attention_varlen").pass_configs).host_mod.script()
    found = re.search(r'__tvm_tensormap_create_tiled", K_desc, \d+, 3, K, ([^)]*)', host)
    args = found.group(1).split(", ")
    assert args[:3] == ["128", "total_k", "2"] and [int(a) for a in args[3:6]] == [2, 2 * fused[0], 2 * fused[1]]


@pytest.mark.parametrize("value, message", [
    ((1024, 8), "'q_strides' must be \\(\\) for a packed tensor or its \\(batch, seqlen, heads\\) strides"),
    ((1024, 64, 12), "3 positive multiples of 8 .* got \\(1024, 64, 12\\)"),
    ((1024, 0, 64), "got \\(1024, 0, 64\\)"),
    ("1024,64", "got \\(1024, 64\\)"),  # a CLI string, read as ints
    ("a,b", "'q_strides' expects tuple, got 'a,b'"),
])
def test_attention_strides_refused_by_name(value, message):
    with pytest.raises(TemplateError, match=message):
        schedule_template("flash_attention", hw.get("h100"), params={"seq_len": 256, "q_strides": value})


@pytest.mark.parametrize("name", ["chunk_state", "chunk_scan"])
def test_a_partial_last_chunk_is_a_chunk(name):
    """seqlen 1000 in chunks of 256: four chunks per head, the last one partial."""
    g = _graph(name, seqlen=1000, heads=8, headdim=80, dstate=128, block_K=64)
    assert g.grid["bz"] == 4 * 8
    assert g.buffers["dt"].shape == (1, 8, 4, 256) and g.buffers["x"].shape == (1, 1000, 8, 80)


def _causal_trips(sq: int, sk: int, block_M: int, block_N: int) -> float:
    """Mean key blocks per query block under a bottom-right causal mask (heaviest launched first)."""
    n = -(-sq // block_M)
    trips = [min(-(-sk // block_N), max(0, -(-((qb + 1) * block_M + sk - sq) // block_N))) for qb in range(n)]
    return sum(trips) / n


@pytest.mark.parametrize("sq, sk, causal", [(1000, 1000, False), (1000, 1000, True), (300, 2000, True),
                                            (2000, 300, True), (1, 777, True), (700, 1500, False)])
def test_attention_trip_counts(sq, sk, causal):
    """Ragged lengths and KV caches: ceil(seqlen_q / block_M) query blocks, each reading the key blocks it sees."""
    g = _graph("flash_attention", seq_len_q=sq, seq_len_k=sk, causal=causal, batch=2, heads=4, kv_heads=2,
               block_M=128, block_N=64, threads=256)
    assert g.grid == {"bx": -(-sq // 128), "by": 4, "bz": 2}
    want = _causal_trips(sq, sk, 128, 64) if causal else -(-sk // 64)
    assert g.loop.trip_count == pytest.approx(want)


@pytest.mark.parametrize("sq, sk, causal", [(777, 2500, True), (1000, 1000, False), (100, 300, True)])
def test_packed_gqa_grid_and_trip_counts(sq, sk, causal):
    """GQA packed: a block holds block_M // groups queries of each of a key/value head's query heads, so 777
    queries of GQA 4 make ceil(777 / 32) = 25 blocks per key/value head (7 per query head unpacked: 28 rows of
    every 4 of them padding), each reading the key blocks its queries see."""
    g = _graph("flash_attention", seq_len_q=sq, seq_len_k=sk, causal=causal, batch=2, heads=8, kv_heads=2,
               block_M=128, block_N=128, threads=256, pack_gqa=1)
    assert g.grid == {"bx": -(-sq // 32), "by": 2, "bz": 2}
    want = _causal_trips(sq, sk, 32, 128) if causal else -(-sk // 128)
    assert g.loop.trip_count == pytest.approx(want)
    q_loads = [t for t in g.stasks if t.placement.value == "prologue" and t.reads and t.reads[0].buffer == "Q"]
    assert len(q_loads) == 4 * 2 and all(t.seu.value == "tma" for t in q_loads)  # a box per head and panel


@pytest.mark.parametrize("params, message", [
    ({"heads": 8, "kv_heads": 8}, "'pack_gqa' =1 needs fewer key/value heads"),
    ({"heads": 32, "kv_heads": 1}, "'pack_gqa' =1 needs block_M=128 to hold the 32 query heads"),
    ({"heads": 8, "kv_heads": 2, "pack_gqa": 2}, "'pack_gqa' must be 0 or 1, got 2"),
])
def test_packed_gqa_refusals(params, message):
    with pytest.raises(TemplateError, match=re.escape(message)):
        templates.get("flash_attention").resolve(**{"pack_gqa": 1, "block_M": 128, **params})


@pytest.mark.parametrize("tile, dim, message", [
    ({"block_M": 192, "block_N": 128}, 64, "'block_M' =192 is offered at head dim 64 only, got dim=128"),
    ({"block_M": 128, "block_N": 80}, 256, "'block_N' =80 is offered at head dim 256 only, got dim=128"),
])
def test_head_dim_tiles_refused_elsewhere(tile, dim, message):
    """FlashAttention 3's tiles for head dims 64 (192 query rows) and 256 (80 keys) are offered there only."""
    fa = templates.get("flash_attention")
    fa.resolve(dim=dim, threads=128, **tile)
    with pytest.raises(TemplateError, match=re.escape(message)):
        fa.resolve(dim=128, threads=128, **tile)


def test_the_score_mask_runs_only_on_the_blocks_that_need_it():
    """The length and causal masks are one sTask after the QK gemm (which starts from zero), a branch taken on
    the blocks that need it: priced at its mean over the steps, killing nothing (where it is not taken the scores
    stay the gemm's)."""
    for causal, sq, share in ((False, 1000, 1 / 8), (True, 1024, 8 / 36)):
        g = _graph("flash_attention", seq_len=sq, causal=causal, batch=1, heads=2, kv_heads=2, block_M=128,
                   block_N=128, threads=256)
        qk, mask = [t for t in g.loop_stasks if "acc_s" in t.write_buffers()][:2]
        assert qk.op.value == "gemm" and "acc_s" not in qk.read_buffers()
        assert mask.op.value == "elementwise" and mask.read_buffers() == mask.write_buffers() == {"acc_s"}
        assert mask.attrs["full_writes"] == "" and float(mask.attrs["branch_share"]) == pytest.approx(share, abs=1e-4)
        assert 2 <= mask.flops / (128 * 128 * share) <= 8  # compares and a select a score, on those steps
    unmasked = _graph("flash_attention", seq_len=1024, batch=1, heads=2, kv_heads=2, block_M=128, block_N=128,
                      threads=256)
    assert not any("branch_share" in t.attrs for t in unmasked.stasks)  # tile-multiple keys without causal


def test_the_branch_share_counts_the_steps_at_compile_time_only():
    """A mask whose condition reads run-time lengths (packed sequences) is priced as taken on every step: the
    share is not known at compile time."""
    g = _graph("flash_attention_varlen", batch=3, heads=4, kv_heads=1, max_seqlen_q=700, max_seqlen_k=1500,
               causal=True, block_M=128, block_N=128, threads=256)
    (mask,) = (t for t in g.loop_stasks if "branch_share" in t.attrs)
    assert mask.attrs["branch_share"] == "unknown"


@pytest.mark.filterwarnings("error::pt_tvm.errors.SymbolicSizeWarning")
def test_varlen_grid_and_trip_bound():
    """Packed sequences: the grid covers the longest sequence's queries, the trip count is bounded by the longest
    sequence's key blocks (the lengths are known only at run time)."""
    g = _graph("flash_attention_varlen", batch=3, heads=4, kv_heads=1, max_seqlen_q=700, max_seqlen_k=1500,
               causal=True, block_M=128, block_N=128, threads=256)
    assert g.grid == {"bx": 6, "by": 4, "bz": 3} and g.loop.trip_count == 12
    # the packed totals are symbolic (one kernel serves every batch of such sequences), priced as if every sequence
    # were the longest: the template's own hints, so no warning
    assert g.buffers["Q"].shape == (3 * 700, 4, 128) and g.symbols == {"total_q": 3 * 700, "total_k": 3 * 1500}


def test_varlen_packs_a_key_value_heads_queries_into_one_block():
    """GQA packed on packed sequences: a block holds 32 queries of each of the 4 query heads of one key/value
    head, so the grid has a block per key/value head and 32 queries, and each head's query tile is its own TMA
    copy (one per 64-column panel)."""
    g = _graph("flash_attention_varlen", batch=3, heads=8, kv_heads=2, max_seqlen_q=700, max_seqlen_k=1500,
               causal=True, block_M=128, block_N=128, threads=256, pack_gqa=1)
    assert g.grid == {"bx": 22, "by": 2, "bz": 3} and g.loop.trip_count == 12
    q_copies = [t for t in g.stasks if t.op.value == "copy" and t.reads[0].buffer == "Q"]
    assert len(q_copies) == 4 * 2 and {t.tile_shape for t in q_copies} == {(32, 64)}


def test_the_varlen_search_prices_rows_past_the_sequences_ends():
    """The varlen graph prices every sequence at the longest, where packed and unpacked tiles cost alike (the
    packed one's per-head copies a little more); the template's padding scale prices the rows a sequence's last
    query block holds past its end (63.5 of 128 rows a head on average, 15.5 of 32 packed; twice the weight under
    a causal mask, over three quarters of 1024 queries), so the search packs LLaMA-3-8B's bucket of 1024."""
    tmpl = templates.get("flash_attention_varlen")
    problem = dict(tmpl.problem, batch=1, heads=32, kv_heads=8, max_seqlen_q=1024, max_seqlen_k=1024, causal=True)
    tile = dict(tmpl.tile, block_M=128)
    assert tmpl.padding_scale(problem, tile) == pytest.approx(1 + 127 / 768)
    assert tmpl.padding_scale(problem, {**tile, "pack_gqa": 1}) == pytest.approx(1 + 31 / 768)
    assert tmpl.padding_scale({**problem, "causal": False}, tile) == pytest.approx(1 + 127 / 1536)
    result, _, _ = schedule_template("flash_attention_varlen", "h200", params={**problem, "dtype": "bfloat16"})
    assert result.best.plan.tile["pack_gqa"] == 1
    unpacked = next(c for c in result.ranked if c.plan.tile["pack_gqa"] == 0)
    graph_price = {c.plan.tile["pack_gqa"]: c.seconds / tmpl.padding_scale(problem, c.plan.tile)
                   for c in (result.best, unpacked)}
    assert graph_price[0] <= graph_price[1] * 1.03  # the graph alone does not tell them apart


# ---------------------------------------------------------------- any shape: searched, planned, lowered
FA_PINS = {"block_M": 128, "block_N": 128, "threads": 256}  # one tile: the plans of it are what is tested here
LOWERED = [
    ("gemm", {"M": 200, "N": 320, "K": 200}, "h100"),
    ("gemm", {"M": 200, "N": 320, "K": 200}, "a100"),
    ("gemm_rowsum", {"M": 1000, "N": 264, "K": 136}, "h100"),
    ("flash_attention", {"batch": 2, "heads": 4, "kv_heads": 2, "seq_len_q": 300, "seq_len_k": 1000, "causal": True,
                         **FA_PINS}, "h100"),
    ("flash_attention", {"batch": 2, "heads": 4, "kv_heads": 1, "seq_len_q": 1000, "seq_len_k": 300, "causal": True,
                         "softmax_scale": 0.3, **FA_PINS}, "h100"),
    ("flash_attention", {"batch": 2, "heads": 4, "kv_heads": 4, "seq_len": 1000, **FA_PINS}, "a100"),
    ("flash_attention_varlen", {"batch": 3, "heads": 4, "kv_heads": 2, "max_seqlen_q": 700, "max_seqlen_k": 1500,
                                "causal": True, **FA_PINS}, "h100"),
    ("flash_attention", {"batch": 2, "heads": 8, "kv_heads": 2, "seq_len_q": 777, "seq_len_k": 2500, "causal": True,
                         "pack_gqa": 1, **FA_PINS}, "h100"),
    ("flash_attention_qkv", {"heads": 8, "kv_heads": 1, "seq_len": 777, "pack_gqa": 1, **FA_PINS}, "h100"),
    ("chunk_state", {"seqlen": 1000, "heads": 8, "headdim": 80}, "h100"),
    ("chunk_scan", {"seqlen": 1000, "heads": 8}, "h100"),
    ("chunk_scan", {"seqlen": 1000, "heads": 8}, "a100"),
    ("flash_attention_varlen", {"batch": 3, "heads": 4, "kv_heads": 2, "max_seqlen_q": 700, "max_seqlen_k": 1500,
                                "causal": True, **FA_PINS}, "a100"),
    ("flash_attention_varlen", {"batch": 3, "heads": 8, "kv_heads": 2, "max_seqlen_q": 700, "max_seqlen_k": 1500,
                                "causal": True, "pack_gqa": 1, **FA_PINS}, "h100"),
]


@pytest.fixture(scope="module")
def lowered() -> dict:
    """(plan, CUDA source) of each LOWERED case, the search's pick lowered as the benchmarks lower it."""
    return {}


def _lowered(cache: dict, i: int) -> tuple:
    if i not in cache:
        name, params, chip = LOWERED[i]
        result, _, build = schedule_template(name, chip, params=params)
        vdev = pt_tvm.hw.get(chip)
        cache[i] = (result.best.plan, lower_planned(build(), vdev.tvm_target(), templates.get(name).pass_configs)
                    .kernel_source)
    return cache[i]


@pytest.mark.parametrize("i", range(len(LOWERED)), ids=[f"{n}-{c}-{i}" for i, (n, _, c) in enumerate(LOWERED)])
def test_ragged_plans_lower_with_bounds_kept(lowered, i):
    """The search's plan of a ragged shape lowers to CUDA (its cp.async waits replayed by check_emitted): on
    Hopper the tiles go through TMA, which zero-fills out-of-bounds loads and clips stores in hardware; a
    software pipeline's cp.async loads of a ragged tile are predicated (zero-fill), and stores past an edge are
    guarded in the code."""
    name, params, chip = LOWERED[i]
    plan, src = _lowered(lowered, i)
    assert "__global__" in src
    if name.startswith("gemm"):
        trips = -(-params["K"] // plan.tile["block_K"])
        assert re.search(rf"\b\w+ < {trips}\b", src), f"the K loop of {trips} steps (a ceil-div)"
    if chip == "h100" and plan.style.value == "warp_specialized":
        assert "tma_load" in src
    else:
        assert "cp_async_gs_conditional" in src  # a ragged tile's loads: predicated, zero-filled past the edge


@pytest.mark.parametrize("i", [6, 12], ids=["h100", "a100"])
def test_varlen_reads_its_sequence_bounds_once(lowered, i):
    """The varlen kernel binds its sequence's offsets and lengths once a block (each warp-specialized role
    binds its own), where every mask, bound and address spelled the two ``cu_seqlens`` loads out and TVM's
    simplifier took 4-6 minutes over them in the A100's software pipeline (2026-11-30: 230-360 s, now about
    30 s)."""
    _, src = _lowered(lowered, i)
    reads = [line.strip() for line in src.splitlines() if re.search(r"cu_seqlens_[qk]\[", line)
             and "__global__" not in line]
    assert reads and all(re.match(r"int \w+ = ", r) for r in reads), reads[:4]
    assert len(reads) == 4 * (2 if i == 6 else 1)  # two per sequence per role: offset and length


@pytest.mark.parametrize("i", [6, 12, 13], ids=["h100", "a100", "h100-packed"])
def test_varlen_blocks_past_their_sequence_leave_before_their_first_op(lowered, i):
    """A varlen block past its sequence's queries (the grid covers the longest) returns once its sequence's
    bounds are read: in a warp-specialized plan every role (the producer before its first load, the consumers
    before their first gemm), in a software pipeline the whole block (tests/test_emit.py: no sTask holds it)."""
    _, src = _lowered(lowered, i)
    roles = 2 if i != 12 else 1
    body = src[src.index("__global__"):]
    exits = [m.start() for m in re.finditer(r"return;", body)]
    assert len(exits) == roles
    assert all("cu_seqlens_q[" in body[:e] for e in exits)
    for first_op in ("tma_load(", "wgmma_", "cp_async_gs"):
        hits = [m.start() for m in re.finditer(re.escape(first_op), body)]
        if hits:
            assert min(hits) > exits[0]
    if roles == 2:  # the consumers' first gemm comes after their own exit
        assert min(m.start() for m in re.finditer("wgmma_", body)) > exits[1]


def test_packed_gqa_lowers_to_a_box_per_head(lowered):
    """GQA packed on Hopper: each head's queries come in and go out as TMA boxes of 32 rows (a 128-byte panel
    each), at the head's index, clipped past the last query by the copy engine."""
    _, src = _lowered(lowered, 7)
    loads = re.findall(r"tma_load\(Q_desc, [^;]*", src)
    stores = re.findall(r"tma_store\(O_desc, [^;]*", src)
    assert len(loads) == len(stores) == 4 * 2
    assert all(any(f"blockIdx.y) * 4) + {g})" in x for x in loads) for g in (1, 2, 3))


def test_the_score_mask_follows_a_qk_wgmma_that_starts_from_zero(lowered):
    """Hopper, causal over a KV cache: each QK wgmma group starts from a cleared accumulator (its first k-step's
    scale-d is 0) and no fill precedes it; the mask selects among the gemm's scores after it."""
    _, src = _lowered(lowered, 3)
    qk = [m for m in re.finditer(r"wgmma_ss<[^;]*;", src)]
    assert qk and all(re.search(r"\(acc_s \+ 0\)\), \(\(0 < ki\w*\) \? 1 : 0\)\);$", m.group(0)) for m in qk)
    selects = [m.start() for m in re.finditer(r"condval = acc_s\[", src)]
    assert selects and min(selects) > qk[0].start()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("i", [0, 4, 6, 7, 12, 13], ids=["gemm", "fa-more-queries", "varlen", "fa-packed-gqa",
                                                "varlen-a100", "varlen-packed-gqa"])
def test_ragged_kernels_compile_with_nvcc(lowered, tmp_path, i):
    _, src = _lowered(lowered, i)
    compiles_without_spills(src, tmp_path)


# ---------------------------------------------------------------- symbolic sizes (issue 18 item 5)
def _dynamic_gemm(M, K, N: int = 1024):
    """A GEMM whose M or K may be ``T.dynamic``: one kernel for every such size."""

    @T.prim_func
    def gemm(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, 128), T.ceildiv(M, 128), threads=256) as (bx, by):
            A_s = T.alloc_shared((128, 64), "float16")
            B_s = T.alloc_shared((64, 128), "float16")
            C_l = T.alloc_fragment((128, 128), "float32")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, 64), num_stages=3):
                T.copy(A[by * 128, k * 64], A_s)
                T.copy(B[k * 64, bx * 128], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * 128, bx * 128])

    return gemm


@pytest.mark.parametrize("name", ["gemm", "gemm_swiglu", "gemm_rope"])
def test_dynamic_m_templates_take_the_row_count_at_launch(name, tmp_path):
    """``dynamic_M``: the row count is a kernel argument (``int M``; ``gemm_rope``'s sequence length too, where its
    positions wrap), priced at the problem's ``M`` without a warning, its tiles walked as launched; a swapped tile
    (fitted to a known count) is refused by name."""
    params = {"M": 512, "N": 256, "K": 128, "dynamic_M": True}
    if name == "gemm_rope":
        params = {"M": 512, "K": 128, "heads": 2, "kv_heads": 1, "head_dim": 64, "seqlen": 256, "dynamic_M": True}
    with warnings.catch_warnings():
        warnings.simplefilter("error", SymbolicSizeWarning)
        result, problem, build = schedule_template(name, "h100", params=params)
    symbols = {"M": 512, "seqlen": 256} if name == "gemm_rope" else {"M": 512}
    assert result.best.graph.symbols == symbols and result.best.plan.tile_order.is_launch_order
    assert not result.best.plan.persistent
    src = lower_planned(build(), hw.get("h100").tvm_target(), templates.get(name).pass_configs).kernel_source
    signature = re.search(r"__global__ void[^(]*\(([^)]*)\)", src).group(1)
    assert re.search(r", int M\b", signature) and ("int seqlen" in signature) == (name == "gemm_rope"), signature
    if name == "gemm_rope":
        assert re.search(r"% seqlen\)", src)  # the positions wrap at the launch's length
        compiles_without_spills(src, tmp_path)
    if name == "gemm":
        with pytest.raises(TemplateError, match="'swap_ab' fits a tile to a known token count"):
            templates.get(name).resolve(**{**params, "M": 500, "trans_B": True}, block_M=112, block_N=128, swap_ab=1)


@pytest.mark.parametrize("name", ["chunk_state", "chunk_scan"])
def test_dynamic_seqlen_ssd_kernels_take_the_length_at_launch(name, tmp_path):
    """``dynamic_seqlen``: the sequence length and its chunk count are kernel arguments, priced at the problem's
    length (a partial last chunk) without a warning; the kernel compiles without spills."""
    params = {"batch": 1, "seqlen": 1000, "heads": 8, "headdim": 64, "dstate": 128, "chunk": 256, "groups": 1,
              "dynamic_seqlen": True}
    with warnings.catch_warnings():
        warnings.simplefilter("error", SymbolicSizeWarning)
        result, _, build = schedule_template(name, "h100", params=params)
    assert result.best.graph.symbols == {"seqlen": 1000, "nchunks": 4}
    assert result.best.graph.grid["bz"] == 4 * 8 // result.best.plan.tile.get("block_H", 1)  # chunks x heads
    src = lower_planned(build(), hw.get("h100").tvm_target(), templates.get(name).pass_configs).kernel_source
    signature = re.search(r"__global__ void[^(]*\(([^)]*)\)", src).group(1)
    assert "int nchunks" in signature, signature
    compiles_without_spills(src, tmp_path)
    with pytest.raises(TemplateError, match="'dynamic_seqlen' must be a bool"):
        templates.get(name).resolve(**{**params, "dynamic_seqlen": 1})


def test_a_symbolic_size_is_priced_at_the_default_hint_with_a_warning():
    """Not at the bound of an int32 (a dynamic K gave 3.4e7 loop steps and a 15 s prediction, a dynamic M a grid of
    8 blocks): at SYMBOLIC_HINT, said in a warning, the graph and explain()."""
    func = _dynamic_gemm(T.dynamic("M"), T.dynamic("K"))
    with pytest.warns(SymbolicSizeWarning, match=r"symbolic sizes priced at M=4096, K=4096, pt-tvm's default"):
        g = pt_tvm.extract(func, "h100")
    assert SYMBOLIC_HINT == 4096 and g.symbols == {"M": 4096, "K": 4096}
    assert g.grid == {"bx": 8, "by": 32} and g.loop.trip_count == 64
    assert g.buffers["A"].shape == (4096, 4096) and "symbolic sizes priced at M=4096, K=4096" in g.summary()
    with pytest.warns(SymbolicSizeWarning):
        result = pt_tvm.schedule(func, "h100")
    assert "symbolic sizes priced at M=4096, K=4096" in result.explain()
    assert result.best.seconds < 1e-3  # 4096 x 1024 x 4096 at hundreds of TFLOP/s: tens of microseconds


@pytest.mark.filterwarnings("error::pt_tvm.errors.SymbolicSizeWarning")
def test_hints_price_symbolic_sizes_without_a_warning():
    func = _dynamic_gemm(T.dynamic("M"), 2048)
    small, large = (pt_tvm.schedule(func, "h100", hints={"M": m}) for m in (1024, 16384))
    assert small.best.graph.grid == {"bx": 8, "by": 8} and large.best.graph.grid == {"bx": 8, "by": 128}
    assert 4 < large.best.seconds / small.best.seconds < 32  # 16x the work, on a GPU of 132 SMs
    assert "symbolic sizes priced at M=1024" in small.explain()
    # a grid of symbolic size is walked as launched: a walk laid out for the hint would be wrong at other sizes
    assert all(c.plan.tile_order.is_launch_order and not c.plan.persistent for c in large.ranked)
    src = pt_tvm.lower(func, "h100", hints={"M": 1024}).kernel_source
    assert "int M)" in src  # one kernel for every M: M is a kernel argument, its rows guarded
    assert "tma_load" in src or "cp_async_gs_conditional" in src


@pytest.mark.parametrize("hints, match", [({"N": 64}, r"hints name 'N', which PrimFunc 'gemm' has no symbolic size of "
                                                     r"\(its symbolic sizes: M\)"),
                                          ({"M": 0}, "hint 'M' must be a positive int"),
                                          ({"M": "big"}, "hint 'M' must be a positive int")])
def test_bad_hints_are_named(hints, match):
    with pytest.raises(ExtractionError, match=match):
        pt_tvm.extract(_dynamic_gemm(T.dynamic("M"), 512), "h100", hints=hints)


# ---------------------------------------------------------------- the GPU experiment's shapes
def test_ragged_experiment_pairs_each_shape_with_its_nearest_tile_multiple():
    """benchmarks/experiments/ragged.py (GPU): every pair resolves, the twin is a tile multiple near the ragged
    shape, and the varlen batch's FLOPs count its visible pairs."""
    assert [ragged.nearest(n, 128) for n in (4000, 8000, 1500, 64, 191)] == [3968, 8064, 1536, 128, 128]
    for name, problem, tiles, _ in ragged.PAIRS:
        (_, rag, _, _), (_, twin, _, _) = ragged.cases(name, problem, tiles)
        assert all(twin[k] % t == 0 and abs(twin[k] - rag[k]) <= t // 2 for k, t in tiles.items())
    heads, dim = ragged.FA["heads"], ragged.FA["dim"]
    # 3 queries over 2 keys see 0, 1, 2 keys; 1 query over 4 keys sees all 4
    assert ragged.varlen_flops([3, 1], [2, 4], {**ragged.FA, "causal": True}) == 4.0 * heads * dim * (3 + 4)
    # the bar's ratio from the settled graphs' timing, the queued one beside it; none where a side has no time
    info = {"ragged": {"tflops": 90.0, "queued": {"tflops": 80.0}}, "tile multiple": {"tflops": 100.0, "queued": {}}}
    assert ragged._ratio(info, lambda e: e) == 0.9
    assert ragged._ratio(info, lambda e: e.get("queued", {})) is None
    assert ragged._spread({ragged.TWIN: {"ms": 2.0}, ragged.AGAIN: {"ms": 2.06}}) == pytest.approx(0.03)
    assert ragged._spread({ragged.TWIN: {"ms": 2.0}}) is None


def test_experiments_time_what_their_deadline_leaves(capsys, monkeypatch):
    """``variants.before``: the configs before the deadline, each one after it named as not timed."""
    from benchmarks.experiments import variants

    clock = iter([0.0, 5.0, 11.0, 12.0])
    monkeypatch.setattr(variants.time, "time", lambda: next(clock))
    assert list(variants.before(["a", "b", "c", "d"], 10, 0.0, str.upper)) == ["a", "b"]
    assert capsys.readouterr().out.splitlines() == ["C: not timed, past 10 s", "D: not timed, past 10 s"]
