"""The cost model against recorded GPU measurements: calibration fits them, and the fit ships with pt-tvm."""
import json
import math
import os

import pytest

from pt_tvm import cost, hw
from pt_tvm.tune import samples_from_run

RUN = os.path.join(os.path.dirname(__file__), "..", "benchmarks", "results", "2026-11-22-h200-smoke.json")


@pytest.fixture(scope="module")
def fa_samples():
    """The FlashAttention D128 plans measured on one H200 in the recorded smoke run."""
    with open(RUN) as f:
        run = json.load(f)
    run["rows"] = [r for r in run["rows"] if r["kernel"] == "flash_attention" and r["config"]["dim"] == 128]
    samples = samples_from_run(run, hw.get("h200"))
    assert len(samples) >= 6
    return samples


def _log_error(samples, cal):
    vdev = hw.get("h200")
    return sum(math.log(cost.estimate(p, g, vdev, cal).seconds / s) ** 2 for p, g, s in samples) / len(samples)


def test_calibration_reduces_error_on_recorded_measurements(fa_samples):
    vdev = hw.get("h200")
    uncalibrated = _log_error(fa_samples, cost.Calibration("h200"))
    fitted = cost.calibrate(fa_samples, vdev, rounds=1)
    assert _log_error(fa_samples, fitted) < uncalibrated / 2
    assert fitted.samples == len(fa_samples)


def test_packaged_h200_calibration_predicts_within_ten_percent(fa_samples):
    cal = cost.load_calibration("h200", directory=None)
    assert cal is not None and cal.source.endswith("h200-smoke.json")
    vdev = hw.get("h200")
    for plan, graph, seconds in fa_samples:
        assert abs(cost.estimate(plan, graph, vdev, cal).seconds / seconds - 1) < 0.10


def test_recorded_serial_plans_rank_below_the_pipelined_ones(fa_samples):
    """Measured: every plan with PV at stage 1 beat every stage-0 (serial) plan; the model agrees."""
    vdev = hw.get("h200")
    cal = cost.load_calibration("h200")
    staged = [(p, g, s) for p, g, s in fa_samples if any(a.stage for a in p.appends)]
    serial = [(p, g, s) for p, g, s in fa_samples if not any(a.stage for a in p.appends)]
    assert staged and serial
    assert max(s for _, _, s in staged) < min(s for _, _, s in serial)
    predicted = lambda group: [cost.estimate(p, g, vdev, cal).seconds for p, g, _ in group]  # noqa: E731
    assert max(predicted(staged)) < min(predicted(serial))


def test_corrupt_user_calibration_is_ignored_with_a_warning(tmp_path):
    (tmp_path / "h200.json").write_text("{not json")
    with pytest.warns(UserWarning, match="corrupt calibration"):
        assert cost.load_calibration("h200", directory=str(tmp_path)) is None
