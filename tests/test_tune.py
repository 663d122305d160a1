"""Which plans measured refinement puts on the GPU (pt_tvm.tune.diverse_top), on a CPU."""
from __future__ import annotations

import pytest

from pt_tvm.compiler import schedule_template
from pt_tvm.plan import Style
from pt_tvm.tune import diverse_top


@pytest.fixture(scope="module")
def gemm_result():
    result, _, _ = schedule_template("gemm", "h100", params={"M": 2048, "N": 2048, "K": 2048})
    return result


def test_model_choice_alone_for_k1(gemm_result):
    assert diverse_top(gemm_result, 1) == [gemm_result.ranked[0]]


@pytest.fixture(scope="module")
def attention_result():
    result, _, _ = schedule_template("flash_attention", "h100",
                                     params={"batch": 4, "heads": 16, "seq_len": 2048, "dim": 128})
    return result


@pytest.mark.parametrize("k", [2, 4, 8])
def test_every_style_gets_measured(attention_result, k):
    """The model predicts software-pipelined Hopper plans of FlashAttention slower than warp-specialized ones
    (a GEMM's main loop gets no software pipelines there at all): their best still gets a GPU slot, the model's
    own best stays first, and no plan is measured twice."""
    ranked = attention_result.ranked
    assert ranked[0].plan.style == Style.WARP_SPECIALIZED
    best_sp = next(c for c in ranked if c.plan.style == Style.SOFTWARE_PIPELINE)
    assert best_sp.seconds > ranked[0].seconds * 1.25  # outside the usual cut-off
    picks = diverse_top(attention_result, k)
    assert len(picks) == k and len({id(c) for c in picks}) == k
    assert picks[0] is ranked[0] and best_sp in picks
    assert sum(c.plan.style == Style.WARP_SPECIALIZED for c in picks) == k - 1


def test_error_outliers_flag_a_plan_far_less_accurate_than_its_siblings():
    """A plan within the tolerance but 30x less accurate than the others (chunk_scan's race) is set aside."""
    from pt_tvm.tune import _error_outliers

    kept, suspect = _error_outliers([("a", 2.26e-4), ("b", 2.3e-4), ("race", 6.9e-3)])
    assert [c for c, _ in kept] == ["a", "b"] and [c for c, _ in suspect] == ["race"]
    assert _error_outliers([("only", 5e-3)]) == ([("only", 5e-3)], [])
    assert _error_outliers([("a", 2e-4), ("b", 6e-4)])[1] == []


def test_candidates_are_timed_replayed_and_all_queued_if_one_cannot_be_captured(monkeypatch):
    """The tuner compares its plans as the benchmarks' headline times them, replayed from CUDA graphs (queued
    calls of a short kernel time the launch path and tie every plan); if any plan cannot be captured, all are
    timed queued, never a mix (CPU stand-ins for CUDA events and graphs)."""
    import torch

    from pt_tvm import measure

    class Fake:
        def __init__(self, ms, calls_per_sample=1):
            self.ms, self.calls_per_sample = ms, calls_per_sample

        def __call__(self, samples, offset=0):
            return [self.ms] * samples

    def capture(fn, sets):
        if fn == "uncapturable":
            raise RuntimeError("operation not permitted when stream is capturing")
        return Fake(fn, calls_per_sample=len(sets))

    monkeypatch.setattr(measure, "capture", capture)
    monkeypatch.setattr(measure, "Queued", lambda fn, sets: Fake(9.0))  # launch-bound: every plan ties
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    way, got = measure.time_replayed({"a": 0.5, "b": 0.25}, [(), ()], rounds=2, warmup_ms=1.0, round_ms=4.0)
    assert way == measure.GRAPH and (got["a"].ms, got["b"].ms) == (0.5, 0.25)
    way, got = measure.time_replayed({"a": 0.5, "b": "uncapturable"}, [()], rounds=2, warmup_ms=1.0, round_ms=4.0)
    assert way == measure.QUEUED and got["a"].ms == got["b"].ms == 9.0


@pytest.mark.gpu
def test_a_graph_of_short_calls_repeats_its_input_sets():
    """A captured graph holds about ``REPLAY_MIN_MS`` of calls, the sets repeated, so that a replay's own launch
    weighs little on each call; a call longer than that is captured once per set."""
    import torch

    from pt_tvm import measure

    x = torch.randn(1 << 16, device="cuda")
    sets = [(x,), (x.clone(),)]
    short = measure.capture(lambda t: t.mul_(1.0), sets)
    assert short.calls_per_sample > 2 and short.calls_per_sample % 2 == 0
    assert short.calls_per_sample <= measure.MAX_GRAPH_CALLS
    assert measure.capture(lambda t: t.mul_(1.0), sets, min_replay_ms=0.0).calls_per_sample == 2
    a = torch.randn(8192, 8192, device="cuda")  # 1.1 TFLOP in float32: milliseconds on any GPU
    assert measure.capture(lambda m: m @ m, [(a,), (a,)]).calls_per_sample == 2


def test_candidates_settle_before_each_timed_round(monkeypatch):
    """Each candidate runs ``settle_ms`` of untimed calls before each of its timed rounds, as the benchmarks time
    systems: on a GPU at its power cap a plan is otherwise timed at the clock the plan before it left."""
    import inspect

    from pt_tvm import measure, tune

    calls = []

    class Fake:
        calls_per_sample = 1

        def __init__(self, name):
            self.name = name

        def __call__(self, samples, offset=0):
            calls.append((self.name, samples))
            return [0.5] * samples

    monkeypatch.setattr(measure, "capture", lambda fn, sets: Fake(fn))
    measure.time_replayed({"a": "a", "b": "b"}, [()], rounds=2, warmup_ms=1.0, round_ms=4.0, settle_ms=10.0)
    assert calls[-8:] == [("a", 20), ("a", 8), ("b", 20), ("b", 8), ("b", 20), ("b", 8), ("a", 20), ("a", 8)]
    assert inspect.signature(tune.tune_template).parameters["settle_ms"].default == measure.SETTLE_MS


def test_refinement_keeps_the_model_pick_unless_another_plan_measured_clearly_faster(gemm_result):
    """A plan measured faster than the model's first pick by less than REFINE_MARGIN is noise between runs, not
    a better plan; by more, it replaces the pick; a first pick that failed to run is replaced by the fastest."""
    from pt_tvm.tune import REFINE_MARGIN, Measured, refined

    first, second, third = gemm_result.ranked[:3]
    close = [Measured(first, 1.0, 1e-4), Measured(second, 1.0 / (1 + REFINE_MARGIN / 2), 1e-4),
             Measured(third, 1.1, 1e-4)]
    assert refined(close, first).candidate is first
    clear = [Measured(first, 1.0, 1e-4), Measured(second, 1.0 / (1 + 2 * REFINE_MARGIN), 1e-4)]
    assert refined(clear, first).candidate is second
    assert refined([Measured(third, 1.1, 1e-4), Measured(second, 1.2, 1e-4)], first).candidate is third
