"""CPU tests of Propagate: retiling an extracted graph must give the graph extracted from the
template built with the new tile (offset strings aside), and bad anchors must be refused."""
from __future__ import annotations

from typing import Any

import pytest

import pt_tvm
from pt_tvm.graph import STaskGraph
from pt_tvm.propagate import Propagate, PropagateError, tile_anchors
from pt_tvm.templates import get


def _graph(name: str, **params: Any) -> STaskGraph:
    """The H100 sTask-graph of a template at the given parameters."""
    return pt_tvm.extract(get(name).build(**params), "h100")


def _accesses(t) -> list[tuple]:
    """An sTask's regions without their offsets, which Propagate leaves as written."""
    return [(a.buffer, a.scope, a.extents, a.block_vars) for a in (*t.reads, *t.writes)]


def _assert_same(got: STaskGraph, want: STaskGraph, exact_trips: bool = True) -> None:
    """Same buffer shapes, per-sTask tiles, work and regions, grid, trip count and edges."""
    assert {k: b.shape for k, b in got.buffers.items()} == {k: b.shape for k, b in want.buffers.items()}
    assert [t.id for t in got.stasks] == [t.id for t in want.stasks]
    for g, w in zip(got.stasks, want.stasks):
        assert (g.tile_shape, g.flops, g.sfu_ops, g.bytes) == (w.tile_shape, w.flops, w.sfu_ops, w.bytes), g.id
        assert _accesses(g) == _accesses(w), g.id
    assert dict(got.grid) == dict(want.grid)
    assert got.edges == want.edges
    if exact_trips:
        assert got.loop.trip_count == want.loop.trip_count
        assert got.loop.extent == want.loop.extent


GEMM_CASES = [
    pytest.param("gemm", {"block_M": 64, "block_N": 256, "block_K": 32}, id="gemm-all"),
    pytest.param("gemm", {"block_K": 32}, id="gemm-K"),
    pytest.param("gemm", {"block_N": 64}, id="gemm-N"),
    pytest.param("gemm_rowsum", {"block_M": 64, "block_N": 64, "block_K": 32}, id="rowsum-all"),
]


@pytest.mark.parametrize("name, new", GEMM_CASES)
def test_gemm_matches_rebuilt(name: str, new: dict) -> None:
    _assert_same(Propagate(_graph(name), tile_anchors(_graph(name), new)), _graph(name, **new))


# block_M=64 needs threads=128 (FullRow gives each warp 16 query rows), so both sides use it.
FA_CASES = [
    pytest.param({"block_M": 64, "block_N": 64}, id="MN"),
    pytest.param({"block_M": 64}, id="M"),
    pytest.param({"block_N": 64}, id="N"),
]


@pytest.mark.parametrize("new", FA_CASES)
def test_flash_attention_matches_rebuilt(new: dict) -> None:
    base = _graph("flash_attention", threads=128)
    _assert_same(Propagate(base, tile_anchors(base, new)), _graph("flash_attention", threads=128, **new))


def test_flash_attention_causal_block_n_is_exact() -> None:
    base = _graph("flash_attention", threads=128, causal=True)
    got = Propagate(base, tile_anchors(base, {"block_N": 64}))
    want = _graph("flash_attention", threads=128, causal=True, block_N=64)
    _assert_same(got, want, exact_trips=False)
    assert got.loop.trip_count == want.loop.trip_count == 33.0


def test_flash_attention_causal_trip_count_is_proportional() -> None:
    """Documented exception: a grid-averaged trip count scales by old/new, ignoring the diagonal
    block: 128/128 -> 64/64 at seq_len 4096 gives 33 where re-extraction averages 32.5."""
    base = _graph("flash_attention", threads=128, causal=True)
    got = Propagate(base, tile_anchors(base, {"block_M": 64, "block_N": 64}))
    want = _graph("flash_attention", threads=128, causal=True, block_M=64, block_N=64)
    _assert_same(got, want, exact_trips=False)
    assert got.loop.trip_count == pytest.approx(want.loop.trip_count, rel=0.02)
    assert got.loop.extent == base.loop.extent  # a non-literal extent is left as written


def test_anchor_on_any_dim_of_a_class() -> None:
    """Anchoring a row-statistics vector retiles the query rows through reduce and T.Parallel."""
    base = _graph("flash_attention", threads=128)
    by_vector = Propagate(base, {("scores_sum", 0): 64})
    _assert_same(by_vector, _graph("flash_attention", threads=128, block_M=64))


def test_no_anchor_is_identity() -> None:
    base = _graph("gemm")
    _assert_same(Propagate(base, {}), base)


def test_tile_anchors_maps_conventional_names() -> None:
    assert tile_anchors(_graph("gemm"), {"block_M": 64, "block_N": 32, "block_K": 16}) == {
        ("C_l", 0): 64, ("C_l", 1): 32, ("A_s", 1): 16}
    assert tile_anchors(_graph("flash_attention"), {"block_M": 64, "block_N": 32}) == {
        ("acc_o", 0): 64, ("K_shared", 0): 32}


@pytest.mark.parametrize("tile, match", [
    pytest.param({("nope", 0): 64}, "no buffer 'nope'", id="unknown-buffer"),
    pytest.param({("A", 0): 64}, "global buffer", id="global-buffer"),
    pytest.param({("A_s", 2): 64}, "has dims 0..1", id="dim-out-of-range"),
    pytest.param({("A_s", -1): 64}, "has dims 0..1", id="negative-dim"),
    pytest.param({("A_s", 0): 0}, "positive int", id="zero-extent"),
    pytest.param({("A_s", 0): True}, "positive int", id="bool-extent"),
    pytest.param({("A_s", 1): 32, ("B_s", 0): 64}, "conflicting anchors", id="conflict"),
])
def test_bad_anchors_raise(tile: dict, match: str) -> None:
    with pytest.raises(PropagateError, match=match):
        Propagate(_graph("gemm"), tile)


def test_agreeing_anchors_in_one_class_are_fine() -> None:
    got = Propagate(_graph("gemm"), {("A_s", 1): 32, ("B_s", 0): 32})
    assert got.buffers["B_s"].shape == (32, 128) and got.loop.trip_count == 128


def test_tile_anchors_rejects_unknown_names() -> None:
    with pytest.raises(PropagateError, match="'threads' has no conventional anchor"):
        tile_anchors(_graph("gemm"), {"threads": 256})
    assert issubclass(PropagateError, ValueError)
