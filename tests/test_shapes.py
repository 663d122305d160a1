"""Shapes and tiles (issue 14 items 1-2, issue 18 item 3): a shape is checked against the tiles the search may
choose, tile parameters a user passes pin that dimension of the search, and tiles no kernel can launch are
refused in one line naming the parameter."""
from __future__ import annotations

import pytest

import pt_tvm
from pt_tvm import templates
from pt_tvm.cli import main
from pt_tvm.compiler import schedule_template
from pt_tvm.errors import PtTvmError
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


def test_varlen_grid_and_trip_bound():
    """Packed sequences: the grid covers the longest sequence's queries, the trip count is bounded by the longest
    sequence's key blocks (the lengths are known only at run time)."""
    g = _graph("flash_attention_varlen", batch=3, heads=4, kv_heads=1, max_seqlen_q=700, max_seqlen_k=1500,
               causal=True, block_M=128, block_N=128, threads=256)
    assert g.grid == {"bx": 6, "by": 4, "bz": 3} and g.loop.trip_count == 12
    assert g.buffers["Q"].shape == (None, 4, 128)  # total_q: one kernel for every batch of such sequences
