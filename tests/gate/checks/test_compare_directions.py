"""Checks where lower is better, and in their own units: the mirror of a drop, shown as is."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval_gate.errors import CannotFailError
from retrieval_gate.gate.checks.compare import Comparison, ComparisonSettings, Threshold, compare


def _one(base: np.ndarray, cur: np.ndarray, threshold: Threshold, metric: str) -> Comparison:
    found = compare(
        {metric: base},
        {metric: cur},
        {"all": np.arange(base.size), "half": np.arange(base.size // 2)},
        {metric: threshold},
        {},
        ComparisonSettings(min_size=10),
    )
    return found[0]


@pytest.mark.parametrize("shift", [0.0, 4.0, 15.0, -10.0])
def test_a_lower_is_better_check_is_the_mirror_of_its_negation(shift: float) -> None:
    rng = np.random.default_rng(7)
    base = rng.lognormal(np.log(120.0), 0.4, 300)
    cur = base * rng.lognormal(0.0, 0.1, 300) + shift
    lower = _one(
        base, cur, Threshold(max_drop=5.0, floor=400.0, direction="lower", unit="ms"), "latency"
    )
    higher = _one(-base, -cur, Threshold(max_drop=5.0, floor=-400.0, unit="ms"), "latency")
    assert lower.direction == "lower"
    assert lower.unit == "ms"
    assert lower.baseline_mean == pytest.approx(-higher.baseline_mean)
    assert lower.current_mean == pytest.approx(-higher.current_mean)
    assert lower.delta == pytest.approx(-higher.delta)
    assert lower.gain == pytest.approx(higher.gain)
    assert (lower.ci_low, lower.ci_high) == pytest.approx((-higher.ci_high, -higher.ci_low))
    assert lower.p_value == higher.p_value
    assert lower.p_adjusted == higher.p_adjusted
    assert (lower.wins, lower.ties, lower.losses) == (higher.wins, higher.ties, higher.losses)
    assert lower.verdict == higher.verdict
    assert lower.failed == higher.failed
    assert lower.floor == 400.0
    assert lower.max_drop == 5.0
    assert lower.detectable_drop == higher.detectable_drop


def test_an_increase_past_the_tolerance_fails_and_a_decrease_never_does() -> None:
    rng = np.random.default_rng(3)
    base = rng.lognormal(np.log(100.0), 0.3, 400)
    slower = base * 1.3
    faster = base * 0.7
    relative = Threshold(max_drop=0.2, relative=True, direction="lower", unit="ms")
    failing = _one(base, slower, relative, "latency_mean")
    assert failing.failed
    assert failing.verdict == "regressed"
    assert failing.max_drop == pytest.approx(0.2 * base.mean())  # 20% of the baseline's
    assert failing.delta > 0
    assert failing.wins == 0
    assert failing.losses == 400
    passing = _one(base, faster, relative, "latency_mean")
    assert not passing.failed
    assert passing.delta < 0
    assert passing.wins == 400


def test_a_ceiling_fails_a_mean_above_it() -> None:
    base = np.full(50, 100.0) + np.arange(50) % 7
    check = _one(base, base + 1.0, Threshold(floor=102.0, direction="lower", unit="ms"), "x")
    assert check.verdict == "below_floor"
    assert check.failed
    kept = _one(base, base - 5.0, Threshold(floor=102.0, direction="lower", unit="ms"), "x")
    assert not kept.failed


def test_an_own_unit_column_is_not_held_to_the_zero_one_range() -> None:
    # A 1-5 rating whose per-query spread is larger than its mean of a 0-1 metric would be:
    # the range test (detectable drop past the baseline mean) must not blind it.
    rng = np.random.default_rng(5)
    base = rng.integers(1, 6, 200).astype(float)
    check = _one(base, base - 1.0, Threshold(max_drop=0.5, unit="own"), "stars")
    assert check.gated
    assert check.failed


def test_a_slower_latency_and_a_lower_score_are_both_a_negative_gain() -> None:
    # The mirror test holds whichever sign gain takes: this pins that worse is negative.
    base = np.linspace(100.0, 200.0, 40)
    slower = _one(base, base + 10.0, Threshold(max_drop=5.0, direction="lower", unit="ms"), "t")
    assert slower.delta == pytest.approx(10.0)
    assert slower.gain == pytest.approx(-10.0)
    scores = np.linspace(0.4, 0.8, 40)
    worse = _one(scores, scores - 0.1, Threshold(max_drop=0.05), "ndcg@10")
    assert worse.delta == pytest.approx(-0.1)
    assert worse.gain == pytest.approx(-0.1)


def test_only_a_higher_is_better_check_on_0_1_has_its_mean_as_the_most_it_can_lose() -> None:
    # A mean of 0.1 on 40 queries of sd 0.3: at its level, 0.025 beside the slice, the check
    # catches 13.9 pt, more than the 10 pt a [0, 1] metric with that mean has to lose, so on
    # that scale it is blind. Lower is better, or in units, the mean bounds nothing: gated.
    base = np.zeros(40)
    base[:4] = 1.0
    cur = base.copy()
    with pytest.raises(CannotFailError, match=r"only a drop of 13\.9 pt, more than the 10\.0 pt"):
        _one(base, cur, Threshold(max_drop=0.02), "m")
    for threshold in (
        Threshold(max_drop=0.02, direction="lower"),
        Threshold(max_drop=0.02, unit="stars"),
    ):
        found = _one(base, cur, threshold, "m")
        assert (found.gated, found.reason, found.level) == (True, "", 0.025)
