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


@pytest.mark.parametrize("k", [2, 4, 8])
def test_every_style_gets_measured(gemm_result, k):
    """The best plan of the other emission style gets a GPU slot whatever its prediction, the model's own
    best stays first, and no plan is measured twice."""
    ranked = gemm_result.ranked
    best_of = {style: next(c for c in ranked if c.plan.style == style) for style in Style}
    picks = diverse_top(gemm_result, k)
    assert len(picks) == k and len({id(c) for c in picks}) == k
    assert picks[0] is ranked[0] and all(c in picks for c in best_of.values())


def test_error_outliers_flag_a_plan_far_less_accurate_than_its_siblings():
    """A plan within the tolerance but 30x less accurate than the others (chunk_scan's race) is set aside."""
    from pt_tvm.tune import _error_outliers

    kept, suspect = _error_outliers([("a", 2.26e-4), ("b", 2.3e-4), ("race", 6.9e-3)])
    assert [c for c, _ in kept] == ["a", "b"] and [c for c, _ in suspect] == ["race"]
    assert _error_outliers([("only", 5e-3)]) == ([("only", 5e-3)], [])
    assert _error_outliers([("a", 2e-4), ("b", 6e-4)])[1] == []
