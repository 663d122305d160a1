"""FlashAttention's key tail: the keys past the last whole key block as a step of their own after the loop
(tile ``key_tail``), its place in the tile space, its graph, its registers, the search's preference for it and
the CUDA it lowers to."""
from __future__ import annotations

import re
import shutil

import pytest
from _util import compiles_without_spills

import pt_tvm
from pt_tvm import hw, templates
from pt_tvm.compiler import PREFER_TOLERANCE, lower_planned, schedule_template
from pt_tvm.graph import OpKind, Placement
from pt_tvm.templates import TemplateError
from pt_tvm.verify import fragment_bytes

FA = {"batch": 8, "heads": 16, "kv_heads": 16, "dim": 128}
TILE = {"block_M": 128, "block_N": 128, "threads": 256}


def _graph(key_tail: int, **params):
    problem = {**FA, "seq_len": 1500, **TILE, **params}
    return pt_tvm.extract(templates.get("flash_attention").build(**problem, key_tail=key_tail), "h200")


def _offered(name: str, **problem) -> set:
    tmpl = templates.get(name)
    resolved, _ = tmpl.resolve_problem(**problem)
    return {(t["block_N"], t["key_tail"]) for t in tmpl.tile_candidates(resolved, hw.get("h200").features)}


def test_the_tail_is_offered_where_keys_lie_past_the_last_whole_block():
    """1500 keys: a tail at 64- and 128-key tiles (80 only at head dim 256); 1536 at 128 has none (at 80 it would);
    a causal mask or a key length within one block: none."""
    assert _offered("flash_attention", **FA, seq_len=1500) == {(64, 0), (64, 1), (128, 0), (128, 1)}
    assert _offered("flash_attention", **FA, seq_len=1536) == {(64, 0), (128, 0)}
    assert _offered("flash_attention", **FA, seq_len=1500, causal=True) == {(64, 0), (128, 0)}
    assert _offered("flash_attention", **FA, seq_len=100, seq_len_k=120) == {(64, 0), (64, 1), (128, 0)}
    assert (80, 1) in _offered("flash_attention_qkv", batch=1, heads=8, kv_heads=8, dim=256, seq_len=1500,
                               causal=False)


@pytest.mark.parametrize("params, message", [
    ({"seq_len": 1536}, "needs a non-causal key length past one block and no multiple of block_N=128"),
    ({"seq_len": 1500, "causal": True}, "causal=True"),
    ({"seq_len": 100}, "got seq_len_k=100"),
    ({"seq_len": 1500, "key_tail": 2}, "'key_tail' must be 0 or 1, got 2"),
])
def test_a_tail_that_cannot_be_is_refused_by_name(params, message):
    with pytest.raises(TemplateError, match=message):
        schedule_template("flash_attention", "h200", params={**FA, **TILE, "key_tail": 1, **params})


def test_varlen_has_no_key_tail():
    """Packed sequences' lengths are known only at run time: the tail's width is not."""
    with pytest.raises(TemplateError, match="has no parameter 'key_tail'"):
        templates.get("flash_attention_varlen").resolve_problem(key_tail=1)


def test_the_tail_is_a_step_after_the_loop_its_rows_loaded_with_q():
    """1500 keys in 128-key blocks: 11 whole blocks in the loop, the 92 keys past them one step after it at 96
    keys (its two gemms and its mask in the epilogue), its K and V rows loaded in the prologue with Q; its score
    fragments, which only the epilogue touches, take the loop's dead ones' registers."""
    g, whole = _graph(1), _graph(0)
    assert (g.loop.trip_count, whole.loop.trip_count) == (11, 12)
    loads = {t.writes[0].buffer for t in g.placed(Placement.PROLOGUE) if t.writes}
    assert {"Q_shared", "K_tail", "V_tail"} <= loads
    assert g.buffers["K_tail"].shape == (96, 128) and g.buffers["acc_t"].shape == (128, 96)
    epilogue = g.placed(Placement.EPILOGUE)
    assert sum(t.op == OpKind.GEMM for t in epilogue) == 2
    tail = {"acc_t", "acc_t_cast"}
    assert all(t.placement == Placement.EPILOGUE for t in g.stasks if tail & (t.read_buffers() | t.write_buffers()))
    assert fragment_bytes(g) == fragment_bytes(whole)
    every = sum(b.nbytes for b in g.buffers.values() if b.scope in ("fragment", "local"))
    assert fragment_bytes(g) < every
    # walked persistently, the loop and the epilogue are one body: every fragment counts (ptxas spilled the tail
    # step of a persistent walk and serialized its wgmmas)
    assert fragment_bytes(g, persistent=True) == every
    assert fragment_bytes(whole, persistent=True) == fragment_bytes(whole)


def _best(name: str, chip: str, **params):
    result, _, _ = schedule_template(name, chip, params=params)
    return result


def test_the_search_takes_the_tail_in_its_twins_place():
    """At 8 x 1500 (head dim 128) the model prices the tail's tile 7% above the whole block's (it ran 3% faster on
    an H200): within the tolerance, so the tail's tile is the pick and the whole block's 128-key tile is not
    ranked; the tail's plans keep their own prices. Launched plans (``o_shared=0``): walked persistently, the tail's
    fragments do not fit beside the loop's (:func:`pt_tvm.verify.fragment_bytes`)."""
    result = _best("flash_attention", "h200", **FA, seq_len=1500, dtype="bfloat16", o_shared=0)
    assert result.best.plan.tile["key_tail"] == 1 and result.best.plan.num_stages >= 2
    assert not any(c.plan.tile["key_tail"] == 0 and c.plan.tile["block_N"] == 128 for c in result.ranked)
    whole = _best("flash_attention", "h200", **FA, seq_len=1500, dtype="bfloat16", key_tail=0, block_N=128,
                  o_shared=0)
    assert whole.best.seconds < result.best.seconds <= whole.best.seconds * (1 + PREFER_TOLERANCE)


@pytest.mark.parametrize("name, chip, params", [
    # head dim 256: at 80-key tiles the tail's tiles leave one stage; the whole 80-key block stays the pick
    ("flash_attention", "h200", {"batch": 8, "heads": 8, "kv_heads": 8, "dim": 256, "seq_len": 1500}),
    # an A100's 163 KB: at 128 x 128 the tail leaves one stage
    ("flash_attention", "a100", {"batch": 2, "heads": 4, "kv_heads": 4, "dim": 128, "seq_len": 1000, **TILE}),
])
def test_a_tail_that_leaves_one_stage_keeps_the_whole_block(name, chip, params):
    result = _best(name, chip, **params)
    assert result.best.plan.tile["key_tail"] == 0 and result.best.plan.num_stages >= 2
    tail = [c for c in result.ranked if c.plan.tile == {**result.best.plan.tile, "key_tail": 1}]
    assert all(c.plan.num_stages == 1 for c in tail)


@pytest.fixture(scope="module")
def source() -> str:
    """The CUDA of the search's launched pick at 8 x 1500, head dim 128, bf16, on an H200."""
    result, _, build = schedule_template("flash_attention", "h200", params={**FA, "seq_len": 1500,
                                                                             "dtype": "bfloat16", "o_shared": 0})
    assert result.best.plan.tile["key_tail"] == 1
    return lower_planned(build(), hw.get("h200").tvm_target(), templates.get("flash_attention").pass_configs) \
        .kernel_source


def test_the_tail_lowers_to_a_narrower_wgmma_after_the_loop(source):
    """The producer loads the tail's 96 rows of K and V by TMA before the loop's stages (row 1408 on); the
    consumers' QK gemm of the tail is one m64n96 wgmma group after their loop, its P V one of K 96."""
    producer = source[:source.index("warpgroup_reg_alloc")]
    tails = [m.start() for m in re.finditer(r"tma_load\([KV]_desc\w*, p_[KV]_tail_full\[0\][^;]*, 1408,", producer)]
    stages = [m.start() for m in re.finditer(r"tma_load\([KV]_desc\w*, p_[KV]_shared_full", producer)]
    assert len(tails) == 2 and max(tails) < min(stages)
    assert len(re.findall(r"wgmma_ss<[^>]*, 64, 96, 16,", source)) == 1
    last_loop = list(re.finditer(r"for \(int k_\d+ = \d+; k_\d+ < 11;", source))[-1].start()
    assert source.index(", 64, 96, 16,") > last_loop


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_tail_compiles_without_spills_or_serialized_wgmmas(source, tmp_path):
    """ptxas fits the tail's score tiles in the consumers' registers after the loop: no spill, no wgmma
    serialized (the same step taken before the loop serialized every wgmma, 2026-11-30)."""
    log = compiles_without_spills(source, tmp_path)
    assert "C7512" not in log
