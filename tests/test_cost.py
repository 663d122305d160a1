"""CPU tests of the cost model: monotonic in work, SFU over-subscription, a simulated timeline that
respects dependences, calibration (fit, save/load, corrupt files), the orderings recorded on an H200,
and the text / Gantt timelines."""
from __future__ import annotations

import math
import os
from dataclasses import replace

import pytest

import pt_tvm
from pt_tvm import cost, hw
from pt_tvm.graph import BufferInfo, DepKind, OpKind, Placement
from pt_tvm.search import search_graph
from pt_tvm.space import Priority, software_pipelined, warp_specialized
from pt_tvm.templates import get
from pt_tvm.verify import shared_bytes, verify, violations

SMALL_FA = {"batch": 1, "heads": 4, "kv_heads": 4, "seq_len": 1024}
_funcs: dict = {}


def _graph(template: str, target: str, **params):
    key = (template, tuple(sorted(params.items())))
    if key not in _funcs:
        _funcs[key] = get(template).build(**params)
    return pt_tvm.extract(_funcs[key], target)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    """No user calibration from ~/.cache leaks into (or out of) these tests."""
    monkeypatch.setenv("PT_TVM_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def fa_h100():
    vdev = hw.get("h100")
    graph = _graph("flash_attention", "h100", **SMALL_FA, block_M=128, block_N=128)
    serial = warp_specialized(graph, vdev, consumer_wgs=2, depth=2, pipeline_stage={}, priority=Priority.PROGRAM)
    staged = warp_specialized(graph, vdev, consumer_wgs=2, depth=2, pipeline_stage={"V_shared": 1},
                              priority=Priority.PROGRAM)
    for p in (serial, staged):
        verify(p, graph, vdev)
    return vdev, graph, serial, staged


def _scaled(graph, sid: str, **factors):
    t = graph.stask(sid)
    return graph.with_stasks(replace(x, **{k: getattr(t, k) * f for k, f in factors.items()}) if x.id == sid else x
                             for x in graph.stasks)


# ---------------------------------------------------------------- sanity
def test_more_flops_take_more_time(fa_h100):
    vdev, graph, serial, staged = fa_h100
    for plan in (serial, staged):
        base = cost.estimate(plan, graph, vdev)
        for gemm in ("gemm_0", "gemm_1"):
            heavier = cost.estimate(plan, _scaled(graph, gemm, flops=2.0), vdev)
            assert heavier.seconds > base.seconds and heavier.cycles_per_iteration > base.cycles_per_iteration
        assert cost.estimate(plan, _scaled(graph, "par_5", flops=8.0, sfu_ops=8.0), vdev).seconds > base.seconds


@pytest.mark.parametrize("target", ["h100", "a100", "mi300x"])
def test_a_longer_k_loop_takes_longer(target):
    vdev = hw.get(target)
    tile = {"block_M": 64, "block_N": 64, "block_K": 32}
    times = []
    for k in (512, 2048):
        graph = _graph("gemm", target, M=512, N=512, K=k, **tile)
        plan = (warp_specialized(graph, vdev, consumer_wgs=1, depth=2, pipeline_stage={}, priority=Priority.PROGRAM)
                if target == "h100" else
                software_pipelined(graph, vdev, num_stages=2, threads=graph.threads, priority=Priority.PROGRAM))
        verify(plan, graph, vdev)
        times.append(cost.estimate(plan, graph, vdev).seconds)
    assert times[1] > 2.5 * times[0]  # 4x the FLOPs; prologue/epilogue amortized


def test_oversubscribed_sfu_is_slower_and_the_bottleneck(fa_h100):
    vdev, graph, serial, staged = fa_h100
    (exp,) = [t.id for t in graph.loop_stasks if t.sfu_ops and len(t.tile_shape) == 2]  # exp2 over the scores
    for plan in (serial, staged):
        base = cost.estimate(plan, graph, vdev)
        hot = cost.estimate(plan, _scaled(graph, exp, sfu_ops=8.0), vdev)
        assert hot.seconds > 1.5 * base.seconds
        assert hot.busy["sfu"] > base.busy["sfu"]
        assert hot.bottleneck() == "sfu" != base.bottleneck()


def _role_of_stream(plan, stream: str) -> str:
    return max((r.name for r in plan.roles if stream.startswith(r.name)), key=len)


def _check_trace(plan, graph, vdev) -> int:
    """No event starts before the events of its RAW predecessors end (same iteration for distance 0,
    the previous one for distance 1, the prologue's for prologue sources); returns the pairs checked."""
    est = cost.estimate(plan, graph, vdev, trace=True)
    assert est.trace
    by_key: dict[tuple[str, int], list] = {}
    for e in est.trace:
        by_key.setdefault((e.stask, e.iteration), []).append(e)
    checked = 0
    for ev in est.trace:
        dst = graph.stask(ev.stask)
        role = _role_of_stream(plan, ev.stream)
        for edge in graph.edges_into(dst.id):
            if edge.kind != DepKind.RAW:
                continue
            src = graph.stask(edge.src)
            if src.placement == Placement.PROLOGUE:
                src_it = -1
            elif src.placement == dst.placement == Placement.LOOP:
                src_it = ev.iteration - edge.distance
                if src_it < 0:
                    continue
            else:
                continue
            same_role = plan.append_of(src.id).role == role
            preds = [p for p in by_key.get((src.id, src_it), [])
                     if (p.stream == ev.stream if same_role else _role_of_stream(plan, p.stream) != role)]
            assert preds, f"{src.id}@{src_it} never ran before {dst.id}@{ev.iteration} on {ev.stream}"
            for p in preds:
                assert p.end <= ev.start + 1e-9, (f"{dst.id}@{ev.iteration} on {ev.stream} starts at {ev.start:.1f} "
                                                  f"before {src.id}@{src_it} on {p.stream} ends at {p.end:.1f}")
                checked += 1
    return checked


def test_simulated_timeline_respects_dependences(fa_h100):
    vdev, graph, serial, staged = fa_h100
    assert _check_trace(serial, graph, vdev) > 100
    assert _check_trace(staged, graph, vdev) > 100
    # events of each stream never overlap
    est = cost.estimate(staged, graph, vdev, trace=True)
    assert {e.stream for e in est.trace} == {"producer", "consumer0", "consumer1"}
    assert all(e.end > e.start >= 0 for e in est.trace)


@pytest.mark.parametrize("target", ["a100", "mi300x"])
def test_simulated_timeline_respects_dependences_software_pipelined(target):
    vdev = hw.get(target)
    graph = _graph("flash_attention", target, **SMALL_FA, block_M=64, block_N=64, threads=128)
    for n in (1, 2):
        plan = software_pipelined(graph, vdev, num_stages=n, threads=graph.threads, priority=Priority.PROGRAM)
        if violations(plan, graph, vdev):
            continue
        assert _check_trace(plan, graph, vdev) > 50


# ---------------------------------------------------------------- calibration
@pytest.fixture(scope="module")
def gemm_samples():
    """Plans of a small GEMM on H100 over several tiles and depths, with synthetic 'measured' times from a
    hidden truth: tensor cores 1.5x slower, TMA 1.3x slower, 100 cycles per iteration of overhead. The grid
    has more blocks than the GPU has SMs, so that every copy streams at its share of DRAM and the truth
    shows in the times."""
    vdev = hw.get("h100")
    truth = cost.Calibration("h100", {"tensor_core": 1.5, "tma": 1.3}, 100.0)
    out = []
    for bm, bn in ((64, 64), (128, 128), (128, 64)):
        graph = _graph("gemm", "h100", M=2048, N=2048, K=512, block_M=bm, block_N=bn, block_K=64)
        for wgs, depth in ((1, 1), (1, 3), (2, 2)):
            plan = warp_specialized(graph, vdev, consumer_wgs=wgs, depth=depth, pipeline_stage={},
                                    priority=Priority.PROGRAM)
            if plan is not None and not violations(plan, graph, vdev):
                out.append((plan, graph, cost.estimate(plan, graph, vdev, truth).seconds))
    assert len(out) >= 5
    return vdev, out


def _loss(samples, vdev, cal) -> float:
    return sum(math.log(cost.estimate(p, g, vdev, cal).seconds / s) ** 2 for p, g, s in samples) / len(samples)


def test_calibrate_reduces_the_loss(gemm_samples):
    vdev, samples = gemm_samples
    before = _loss(samples, vdev, None)
    fitted = cost.calibrate(samples, vdev, rounds=1)
    after = _loss(samples, vdev, fitted)
    assert after < before / 4, (before, after, fitted)
    assert fitted.samples == len(samples) and fitted.target == "h100"
    assert fitted.factor(hw.SEUKind.TENSOR_CORE) > 1.0  # the hidden truth: slower tensor cores
    assert cost.calibrate(samples, vdev, rounds=1) == fitted  # deterministic


def test_calibrate_needs_samples():
    with pytest.raises(ValueError):
        cost.calibrate([], hw.get("h100"))


def test_calibration_round_trips_through_save_and_load(tmp_path):
    cal = cost.Calibration("h100", {"tensor_core": 1.2, "cuda_core": 0.85}, 50.0, 7)
    path = cost.save_calibration(cal, str(tmp_path))
    assert path == os.path.join(str(tmp_path), "h100.json")
    assert cost.load_calibration("h100", str(tmp_path)) == cal
    assert cost.load_calibration("a100", str(tmp_path)) is None  # an explicit directory has no fallback
    # the default directory is PT_TVM_CACHE_DIR/calibration
    user = cost.Calibration("h200", {"sfu": 3.0}, 0.0, 1)
    assert cost.save_calibration(user).startswith(os.environ["PT_TVM_CACHE_DIR"])
    assert cost.load_calibration("h200") == user


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"format": "pt-tvm.calibration/0"}',
                                     '{"format": "pt-tvm.calibration/1", "target": "h100"}',
                                     '{"format": "pt-tvm.calibration/1", "target": "h100", "scale": 3, '
                                     '"overhead": "lots"}'])
def test_corrupt_calibration_is_ignored_with_a_warning(tmp_path, content):
    (tmp_path / "h100.json").write_text(content)
    with pytest.warns(UserWarning, match="ignoring corrupt calibration"):
        assert cost.load_calibration("h100", str(tmp_path)) is None


def test_a_corrupt_user_calibration_does_not_break_scheduling(tmp_path, monkeypatch):
    from pt_tvm.compiler import schedule

    cal_dir = tmp_path / "cache" / "calibration"
    cal_dir.mkdir(parents=True)
    (cal_dir / "a100.json").write_text("\x00garbage")
    func = get("gemm").build(M=256, N=256, K=256, block_M=64, block_N=64)
    with pytest.warns(UserWarning, match="ignoring corrupt calibration"):
        result = schedule(func, "a100", space=pt_tvm.search.SearchSpace(random_orders=0))
    verify(result.best.plan, result.best.graph, hw.get("a100"))


# ---------------------------------------------------------------- recorded H200 measurements
# fp16 FlashAttention forward, B8 H16 S4096 D128 (the template's default problem), one H200:
#   WSSchedule 1 TMA warp + 2 consumer WGs, serial body, 128x128: 521 TFLOP/s
#   same with 1 consumer WG, block_M 64:                           409 TFLOP/s
#   FA3-style (PV of block j-1 after QK of block j), 2 WGs:        577 TFLOP/s
#   same with 3 K/V stages:                 fails to launch (256 KB of shared memory)
#   D256, TileLang's default (128x128, num_stages=2): "Failed to set the allowed dynamic shared memory size
#   to 327680"
@pytest.fixture(scope="module")
def h200_fa():
    vdev = hw.get("h200")
    g128 = _graph("flash_attention", "h200", block_M=128, block_N=128)
    g64 = _graph("flash_attention", "h200", block_M=64, block_N=128, threads=128)
    return vdev, g128, g64


def test_cost_model_ranks_recorded_h200_plans(h200_fa):
    vdev, g128, g64 = h200_fa
    two = warp_specialized(g128, vdev, consumer_wgs=2, depth=2, pipeline_stage={}, priority=Priority.PROGRAM)
    one = warp_specialized(g64, vdev, consumer_wgs=1, depth=2, pipeline_stage={}, priority=Priority.PROGRAM)
    fa3 = warp_specialized(g128, vdev, consumer_wgs=2, depth=2, pipeline_stage={"V_shared": 1},
                           priority=Priority.PROGRAM)
    for plan, graph in ((two, g128), (one, g64), (fa3, g128)):
        verify(plan, graph, vdev)
    t_two, t_one, t_fa3 = (cost.estimate(p, g, vdev).seconds for p, g in ((two, g128), (one, g64), (fa3, g128)))
    assert t_two < t_one  # measured 521 vs 409 TFLOP/s
    assert t_fa3 < t_two  # measured 577 vs 521 TFLOP/s


def test_three_kv_stages_at_d128_are_rejected_for_shared_memory(h200_fa):
    """The measured kernel staged its output through its own O_shared tile (the template now reuses Q_shared):
    with that 32 KB tile, Q + 3 x (K + V) + O is the 256 KB that failed to launch. It was lowered with every
    buffer apart, as a persistent plan still is; a non-persistent one now lays O over the stages and fits."""
    vdev, g128, _ = h200_fa
    assert "O_shared" not in g128.buffers
    measured = replace(g128, buffers={**g128.buffers,
                                      "O_shared": BufferInfo("O_shared", (128, 128), "float16", "shared")})
    plan = warp_specialized(measured, vdev, consumer_wgs=2, depth=3, pipeline_stage={"V_shared": 1},
                            priority=Priority.PROGRAM)
    assert not violations(plan, measured, vdev)
    plan = replace(plan, persistent=True)
    assert [v.rule for v in violations(plan, measured, vdev)] == ["shared_memory"]
    assert shared_bytes(plan, measured) >= 256 * 1024
    # two stages of the same kernel fit, as measured (577 TFLOP/s)
    two = warp_specialized(measured, vdev, consumer_wgs=2, depth=2, pipeline_stage={"V_shared": 1},
                           priority=Priority.PROGRAM)
    assert not violations(two, measured, vdev)
    # and four stages do not fit even with the output staged through Q_shared
    four = warp_specialized(g128, vdev, consumer_wgs=2, depth=4, pipeline_stage={"V_shared": 1},
                            priority=Priority.PROGRAM)
    assert [v.rule for v in violations(four, g128, vdev)] == ["shared_memory"]


def test_tilelang_default_at_d256_is_rejected_and_the_searched_plan_accepted():
    from pt_tvm.compiler import schedule_template

    vdev = hw.get("h200")
    graph = _graph("flash_attention", "h200", dim=256)  # 128x128, threads 256: the template's default tile
    default = software_pipelined(graph, vdev, num_stages=2, threads=graph.threads, priority=Priority.PROGRAM)
    found = violations(default, graph, vdev)
    assert "shared_memory" in {v.rule for v in found}
    assert shared_bytes(default, graph) >= 327680  # what TileLang failed to allocate at launch
    ws = warp_specialized(graph, vdev, consumer_wgs=2, depth=2, pipeline_stage={}, priority=Priority.PROGRAM)
    assert "shared_memory" in {v.rule for v in violations(ws, graph, vdev)}
    result, _, _ = schedule_template("flash_attention", "h200", params={"dim": 256})
    best = result.best
    verify(best.plan, best.graph, vdev)
    assert shared_bytes(best.plan, best.graph) <= vdev.eu.smem_per_block
    assert result.rejected.get("shared_memory", 0) > 0


# ---------------------------------------------------------------- timelines
def test_text_and_plot_timeline(fa_h100, tmp_path):
    from pt_tvm.timeline import plot_timeline, steady_window, text_timeline

    vdev, graph, _, staged = fa_h100
    est = cost.estimate(staged, graph, vdev, trace=True)
    text = text_timeline(est)
    assert text.startswith(f"steady-state iteration: {est.cycles_per_iteration:.0f} cycles")
    for stream in ("consumer0", "consumer1"):  # (the producer may have run ahead of the last window)
        assert stream in text
    assert len(text.splitlines()) >= 5
    assert "tensor_core" in text and "gemm_1@it" in text
    lo, hi = steady_window(est)
    assert hi - lo == pytest.approx(est.cycles_per_iteration)
    pytest.importorskip("matplotlib", reason="charts need matplotlib (pip install 'pt-tvm[plot]')")
    png = tmp_path / "t.png"
    plot_timeline(est, str(png), "FA on h100")
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    with pytest.raises(ValueError, match="trace=True"):
        text_timeline(cost.estimate(staged, graph, vdev))


@pytest.mark.parametrize("target", ["a100", "h100"])
def test_cp_async_copies_run_behind_their_warps(target):
    """A software pipeline's loop copies are cp.async (num_stages >= 2): issued, then overlapped with the
    compute; with one stage TileLang copies through registers and the warps wait. So the steady-state
    iteration of a two-stage GEMM is shorter than the serial one's, not equal."""
    vdev = hw.get(target)
    g = _graph("gemm", target, M=2048, N=2048, K=2048, block_M=128, block_N=128, block_K=32)
    serial, staged = (software_pipelined(g, vdev, num_stages=n, threads=g.threads, priority=Priority.PROGRAM)
                      for n in (1, 2))
    for plan in (serial, staged):
        verify(plan, g, vdev)
    e1, e2 = cost.estimate(serial, g, vdev), cost.estimate(staged, g, vdev)
    assert e2.cycles_per_iteration < 0.9 * e1.cycles_per_iteration


def test_l2_bound_gemm_loops_price_deeper_pipelines_faster(fa_h100):
    """A GEMM main loop whose loads outlast its tensor-core work waits on L2's queues (cost.TMA_LOADED_CYCLES):
    the LLaMA layer's 512-token output projection ran 1.17x faster 5 deep than 3 deep on an H100
    (benchmarks/results/2026-11-26-h100-depth), and the model prices it faster. 128x256 tiles keep as many
    bytes in flight 3 deep and ran as fast as 4 deep (2026-11-26-h100-depth-alias): priced alike.
    FlashAttention's loop (softmax on the CUDA cores beside the tensor cores) is not priced as L2-bound, nor a
    GEMM on a chip without TMA."""
    vdev = hw.get("h100")
    graph = _graph("gemm", "h100", M=512, N=4096, K=4096, trans_B=True, block_M=128, block_N=128, block_K=64)
    assert cost.l2_bound(graph, vdev)
    times = {}
    for depth in (3, 4, 5):
        plan = warp_specialized(graph, vdev, consumer_wgs=2, depth=depth, pipeline_stage={},
                                priority=Priority.PROGRAM)
        verify(plan, graph, vdev)
        times[depth] = cost.estimate(plan, graph, vdev).seconds
    assert times[3] > 1.05 * times[4] and times[4] >= times[5]
    wide = _graph("gemm", "h100", M=777, N=4096, K=4096, trans_B=True, block_M=128, block_N=256, block_K=64)
    three, four = (cost.estimate(warp_specialized(wide, vdev, consumer_wgs=2, depth=d, pipeline_stage={},
                                                  priority=Priority.PROGRAM), wide, vdev).seconds for d in (3, 4))
    assert three == pytest.approx(four, rel=1e-3)
    _, fa_graph, _, _ = fa_h100
    assert not cost.l2_bound(fa_graph, vdev)
    assert not cost.l2_bound(_graph("gemm", "a100", M=512, N=4096, K=4096, block_M=128, block_N=128, block_K=64),
                             hw.get("a100"))


def test_a_tile_of_more_than_128_accumulators_a_thread_is_priced_as_measured_slower():
    """At 777 tokens x 6144 the search picks a swapped 160x256 tile (120 tiles on 132 SMs; 160 accumulators a thread
    over two consumer warpgroups) and prices it WIDE_ACCUMULATOR_FACTOR over its timeline, as such tiles ran on one
    H100; a 128x256 tile (128 a thread) keeps its timeline's price."""
    from pt_tvm.compiler import schedule_template

    vdev = hw.get("h100")
    result, _, _ = schedule_template("gemm", vdev, params=dict(M=777, N=6144, K=4096, trans_B=True))
    wide = result.best
    assert (wide.plan.tile["block_M"], wide.plan.tile["block_N"], wide.plan.tile["swap_ab"]) == (160, 256, 1)
    narrow = next(c for c in result.ranked
                  if c.plan.tile["block_M"] * c.plan.tile["block_N"] <= 128 * 256 and not c.plan.tile["swap_ab"])
    assert cost._tile_factor(wide.plan, wide.graph, vdev) == pytest.approx(
        cost.WIDE_ACCUMULATOR_FACTOR * cost.SWAPPED_TILE_FACTOR)
    assert cost.WIDE_ACCUMULATOR_FACTOR > 1 and cost.SWAPPED_TILE_FACTOR > 1
    assert cost._tile_factor(narrow.plan, narrow.graph, vdev) == 1.0


@pytest.mark.parametrize("name, params, swapped", [
    # measured on one H200 (benchmarks/results/2026-12-04-h200-swap-tiles): 768 tokens of QKV + RoPE ran 76.9 us
    # swapped (120 tiles of 160 x 256) against 98.1 plain (144 of 128 x 256); Mamba2's in-projection at 2048 tokens
    # 120.2 us plain against 131.7 swapped, and LLaMA's down projection at 16 x 4096 tokens 11.57 ms against 11.71
    ("gemm_rope", dict(M=768, seqlen=768), True),
    ("gemm", dict(M=2048, N=8512, K=2048, trans_B=True), False),
    ("gemm", dict(M=65536, N=4096, K=14336, trans_B=True), False),
])
def test_swapped_tiles_are_picked_where_they_ran_faster(name, params, swapped):
    """Swapped tiles are offered at token counts that are multiples of 64 too; the model picks them where they
    fill the waves better and keeps plain tiles where those ran faster."""
    from pt_tvm.compiler import schedule_template

    result, _, _ = schedule_template(name, hw.get("h200"), params=params)
    assert bool(result.best.plan.tile["swap_ab"]) is swapped, result.best.plan.tile


def test_three_consumer_warpgroups_steady_iteration_is_stretched(monkeypatch):
    """FlashAttention's 192-row tile at head dim 64 (three consumer warpgroups) has its steady iteration priced
    THIRD_WARPGROUP_STRETCH over its timeline's; a 128-row tile (two) keeps its timeline's, and so does an A100's
    software pipeline of eight warps."""
    from pt_tvm.compiler import schedule_template

    vdev = hw.get("h200")
    problem = dict(batch=1, seq_len=2048, heads=8, kv_heads=8, dim=64)
    three, two = (schedule_template("flash_attention", vdev, params={**problem, "block_M": m})[0].best
                  for m in (192, 128))
    def prices():
        return [cost.estimate(c.plan, c.graph, vdev) for c in (three, two)]

    factor = cost.THIRD_WARPGROUP_STRETCH
    (three_s, two_s) = prices()
    monkeypatch.setattr(cost, "THIRD_WARPGROUP_STRETCH", 1.0)
    (three_p, two_p) = prices()
    assert factor > 1 and three_s.cycles_per_iteration / three_p.cycles_per_iteration == pytest.approx(factor)
    assert three_s.seconds > three_p.seconds
    assert two_s.cycles_per_iteration == two_p.cycles_per_iteration
    a100 = hw.get("a100")  # its warpgroup is one warp: a 256-thread software pipeline has eight, not stretched
    pipelined = schedule_template("flash_attention", a100, params={**problem, "threads": 256})[0].best
    assert len(pipelined.plan.roles) == 1 and pipelined.plan.num_warps == 8
    assert cost._third_warpgroup_stretch(pipelined.plan, pipelined.graph, a100) == 1.0


def test_wgmma_operand_reads_and_tile_loads_share_the_shared_memory_port():
    """A 256x160 GEMM tile on two consumer warpgroups: TileLang's Square split gives each 2 x m64n80 wgmmas, which
    read A's slice again for each, where a split by rows gives one m64n160; with the tile's loads both pass through
    shared memory's 128 bytes a cycle. The Square split's 1568 cycles an iteration outlast the loop's L2-bound
    loads (1451), the rows' 1312 do not; the extra reads stretch an L2-bound iteration too
    (cost._load_bound_stretch: 1.11 for m64n80, 1.03 for m64n160), past the port: priced 9.3% slower, as it ran
    1.03-1.22x slower on H100s and H200s at cb5b2ef (benchmarks/results/2026-11-27-x4-suites,
    2026-11-28-h200-x2-suites) where the model had them 0.1% apart. Since the TMA's request cost fell to 25 cycles
    the Square split's simulated iteration (1479, its wgmmas' factor counted) outlasts its loads, and the stretch
    multiplies that again: a double count (NOTES-parity) that orders these two plans as measured. Without wgmma
    (an A100) the port is not priced."""
    vdev = hw.get("h100")
    graph = _graph("gemm", "h100", M=8192, N=8192, K=8192, block_M=256, block_N=160, block_K=64)
    square = warp_specialized(graph, vdev, consumer_wgs=2, depth=3, pipeline_stage={}, priority=Priority.PROGRAM)
    rows = replace(square, row_split=True)
    for p in (square, rows):
        verify(p, graph, vdev)
    loads = 256 * 64 * 2 + 64 * 160 * 2
    for p, n in ((square, 80), (rows, 160)):  # wgmmas an iteration, each reading A's 64x16 and B's 16xn
        reads = 256 * 160 * 64 // (64 * n * 16) * (64 * 16 + 16 * n) * 2
        assert cost.shared_port_cycles(p, graph, vdev) == pytest.approx((loads + reads) / 128)
    slow, fast = (cost.estimate(p, graph, vdev) for p in (square, rows))
    stretch = [cost.wgmma_factor(p, graph, vdev)["gemm_0"] for p in (square, rows)]
    assert stretch == [pytest.approx(1.11), pytest.approx(1.03)]
    loads = fast.cycles_per_iteration / stretch[1]
    assert loads == pytest.approx(1451, abs=1)
    assert fast.cycles_per_iteration > cost.shared_port_cycles(rows, graph, vdev)
    assert slow.cycles_per_iteration > loads * stretch[0]
    assert slow.cycles_per_iteration == pytest.approx(1479 * stretch[0], abs=2)
    assert slow.cycles_per_iteration > cost.shared_port_cycles(square, graph, vdev)
    assert slow.seconds > 1.07 * fast.seconds
    a100 = hw.get("a100")
    ampere = _graph("gemm", "a100", M=2048, N=2048, K=2048)
    plan = software_pipelined(ampere, a100, num_stages=3, threads=128, priority=Priority.PROGRAM)
    assert cost.shared_port_cycles(plan, ampere, a100) == 0.0


def test_unequal_causal_blocks_cost_their_share_of_the_work():
    """A causal grid's blocks loop 1 to n times, the heaviest launched first, so the light ones fill the last
    wave: the kernel is priced near its share of the whole work (fractional waves; the blocks walked in launch
    order, each on the first free SM, cost.walk_span), no less than its heaviest block, where whole waves of the
    mean block priced 800 packed blocks (6.06 waves) as 7 full ones."""
    vdev = hw.get("h100")
    graph = _graph("flash_attention", "h100", batch=8, heads=16, kv_heads=4, seq_len=777, seq_len_k=2500,
                   causal=True, block_M=128, block_N=128, threads=128, pack_gqa=1)
    assert graph.grid_blocks() == 800 and graph.loop.max_trip_count == 20 > graph.loop.trip_count
    plan = warp_specialized(graph, vdev, consumer_wgs=2, depth=2, pipeline_stage={"V_shared": 1},
                            priority=Priority.PROGRAM)
    verify(plan, graph, vdev)
    shared = cost.estimate(plan, graph, vdev)
    even = lambda g: replace(g, loop=replace(g.loop, max_trip_count=0.0, block_trips=()))  # noqa: E731
    whole = cost.estimate(plan, even(graph), vdev)
    assert whole.waves == shared.waves == 7
    share = whole.seconds * (800 / 132) / 7
    assert share <= shared.seconds < 1.05 * share < whole.seconds
    # a lone heaviest block bounds it: one batch entry of one key/value head is 25 blocks on 132 SMs
    one = _graph("flash_attention", "h100", batch=1, heads=4, kv_heads=1, seq_len=777, seq_len_k=2500,
                 causal=True, block_M=128, block_N=128, threads=128, pack_gqa=1)
    est = cost.estimate(plan, one, vdev)
    assert est.seconds > cost.estimate(plan, even(one), vdev).seconds


def test_packing_costs_nothing_where_queries_fill_their_tiles():
    """Packed, a block loads its four query heads' Q as eight 32 x 64 boxes into disjoint parts of one shared
    tile: no dependence orders them (each still feeds the QK gemm), so they are priced issued back to back, not
    one after another's arrival (which priced the packed kernel 11% slower than the unpacked one at 768 over
    2560 tokens, where one H100 measured them 208.1 and 207.8 us, benchmarks/results/2026-11-26-h100-ragged-gqa)."""
    params = dict(batch=8, heads=16, kv_heads=4, seq_len=768, seq_len_k=2560, causal=True, block_M=128,
                  block_N=128, threads=128)
    packed = _graph("flash_attention", "h200", pack_gqa=1, **params)
    q_copies = [t.id for t in packed.stasks if t.op == OpKind.COPY and t.writes[0].buffer == "Q_shared"
                and t.placement == Placement.PROLOGUE]
    assert len(q_copies) == 8
    assert not [e for e in packed.edges if e.src in q_copies and e.dst in q_copies]
    assert all(any(e.src == c and e.dst == "gemm_0" and e.kind == DepKind.RAW for e in packed.edges)
               for c in q_copies)
    h200, tile = hw.get("h200"), {k: params[k] for k in ("block_M", "block_N", "threads")}
    best = lambda graph: next(iter(search_graph(graph, h200, tile=tile))).seconds  # noqa: E731
    assert best(packed) == pytest.approx(best(_graph("flash_attention", "h200", pack_gqa=0, **params)), rel=0.03)


def test_the_search_packs_gqa_where_queries_leave_tiles_empty():
    """777 queries of GQA 4 over 2500 keys: packed, 25 full blocks per key/value head instead of 7 per query head
    (measured 221.5 against 251.5 us on one H100, benchmarks/results/2026-11-26-h100-ragged-gqa)."""
    result, _, _ = pt_tvm.compiler.schedule_template(
        "flash_attention", "h100", params={"batch": 8, "heads": 16, "kv_heads": 4, "seq_len": 777,
                                           "seq_len_k": 2500, "causal": True, "block_N": 128})
    assert result.best.plan.tile["pack_gqa"] == 1
