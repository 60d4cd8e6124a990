"""The paired swap test of a quantile's change."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from retrieval_gate.stats.quantile_tests import QuantileChange, quantile_change


def change(
    ref: np.ndarray, cur: np.ndarray, q: float = 0.95, resamples: int = 2000, seed: int = 0
) -> QuantileChange:
    return quantile_change(ref, cur, q, resamples=resamples, rng=np.random.default_rng(seed))


def test_identical_sides_show_no_change_either_way() -> None:
    values = np.random.default_rng(1).lognormal(3.0, 0.5, 80)
    found = change(values, values.copy())
    assert found.delta == 0.0
    assert found.p_increase == 1.0
    assert found.p_decrease == 1.0
    assert found.n == 80


def test_a_real_slowdown_of_the_tail_is_evidence_of_an_increase() -> None:
    rng = np.random.default_rng(2)
    base = rng.lognormal(3.0, 0.5, 130)
    ref = base * rng.lognormal(0.0, 0.1, 130)
    cur = base * rng.lognormal(0.0, 0.1, 130) * 1.5
    found = change(ref, cur)
    assert found.current == pytest.approx(float(np.quantile(cur, 0.95)))
    assert found.reference == pytest.approx(float(np.quantile(ref, 0.95)))
    assert found.delta > 0
    assert found.p_increase < 0.01
    assert found.p_decrease > 0.9


def test_matches_the_exact_swap_distribution_when_enumerated() -> None:
    """Four pairs: 16 swaps. Monte Carlo with many draws lands on the exact tail share."""
    ref = np.array([10.0, 12.0, 30.0, 11.0])
    cur = np.array([11.0, 15.0, 45.0, 10.0])
    observed = np.quantile(cur, 0.75) - np.quantile(ref, 0.75)
    tails = 0
    for swaps in itertools.product((False, True), repeat=4):
        mask = np.array(swaps)
        a, b = np.where(mask, cur, ref), np.where(mask, ref, cur)
        tails += np.quantile(b, 0.75) - np.quantile(a, 0.75) >= observed - 1e-9
    exact = tails / 16
    found = change(ref, cur, q=0.75, resamples=200_000)
    assert found.p_increase == pytest.approx(exact, abs=0.01)


def test_unmeasured_pairs_are_left_out() -> None:
    ref = np.array([1.0, math.nan, 3.0, 4.0, 5.0])
    cur = np.array([1.0, 2.0, math.nan, 4.0, 6.0])
    found = change(ref, cur, q=0.5)
    assert found.n == 3
    assert found.reference == 4.0
    assert found.current == 4.0
    empty = change(np.array([math.nan]), np.array([1.0]))
    assert empty.n == 0
    assert math.isnan(empty.delta)
    assert empty.p_increase == 1.0


def test_false_alarms_stay_within_alpha_when_the_sides_are_exchangeable() -> None:
    """300 A/A trials of skewed latencies with per-query effects: the rate of p <= 0.05 is
    within its binomial error of 5% or below (a test that cannot alarm would pass: so the
    second assertion shows it alarms on a real change of the same size of sample)."""
    rng = np.random.default_rng(3)
    alarms = caught = 0
    for trial in range(300):
        base = rng.lognormal(3.0, 0.6, 60)
        ref = base * rng.lognormal(0.0, 0.2, 60)
        cur = base * rng.lognormal(0.0, 0.2, 60)
        alarms += change(ref, cur, resamples=400, seed=trial).p_increase <= 0.05
        caught += change(ref, cur * 1.4, resamples=400, seed=trial).p_increase <= 0.05
    assert alarms / 300 <= 0.05 + 2.6 * math.sqrt(0.05 * 0.95 / 300)
    assert caught / 300 > 0.5


def test_seeded_results_repeat() -> None:
    rng = np.random.default_rng(4)
    ref, cur = rng.lognormal(3, 1, 50), rng.lognormal(3, 1, 50)
    assert change(ref, cur, seed=7) == change(ref, cur, seed=7)


@pytest.mark.parametrize(
    ("ref", "cur", "q", "resamples", "message"),
    [
        ([1.0], [1.0], 1.5, 10, "q must be"),
        ([1.0], [1.0], -0.5, 10, "q must be"),
        ([1.0], [1.0], 0.5, 0, "resamples"),
        ([1.0, 2.0], [1.0], 0.5, 10, "one length"),
    ],
)
def test_refuses_bad_arguments(ref, cur, q, resamples, message) -> None:
    with pytest.raises(ValueError, match=message):
        quantile_change(
            np.array(ref), np.array(cur), q, resamples=resamples, rng=np.random.default_rng(0)
        )


def test_turns_swap_together() -> None:
    """Two turns of three queries: a turn's shared load is one piece of evidence, not three.
    With every query of the slow turn 10x on the current side, per-query swaps find it rare
    (1 draw in 8 of the turn's queries agree); turn swaps find it a coin flip."""
    ref = np.array([1.0, 1.1, 1.2, 1.0, 1.1, 1.2])
    cur = np.array([10.0, 11.0, 12.0, 1.0, 1.1, 1.2])
    blocks = np.array([0, 0, 0, 1, 1, 1])
    alone = change(ref, cur, q=0.9, resamples=4000)
    together = quantile_change(
        ref, cur, 0.9, resamples=4000, rng=np.random.default_rng(0), blocks=blocks
    )
    assert alone.p_increase < 0.2
    assert together.p_increase == pytest.approx(0.5, abs=0.03)


def test_turns_of_unmeasured_pairs_drop_out() -> None:
    ref = np.array([1.0, math.nan, 2.0])
    cur = np.array([1.0, 5.0, 2.0])
    found = quantile_change(
        ref, cur, 0.5, resamples=10, rng=np.random.default_rng(0), blocks=np.array([7, 3, 9])
    )
    assert found.n == 2
    with pytest.raises(ValueError, match="one block per pair"):
        quantile_change(ref, cur, 0.5, resamples=10, rng=np.random.default_rng(0), blocks=[1])


def test_the_edges_of_the_arguments_and_no_pair_at_all() -> None:
    """q 0 and 1 and a single draw are taken; with no pair measured on both sides there is
    no evidence either way."""
    ref, cur = np.array([1.0, 2.0, 3.0]), np.array([2.0, 3.0, 4.0])
    for q in (0.0, 1.0):
        assert change(ref, cur, q=q, resamples=1).delta == pytest.approx(1.0)
    empty = change(np.array([math.nan, 1.0]), np.array([2.0, math.nan]))
    assert (empty.n, empty.p_increase, empty.p_decrease) == (0, 1.0, 1.0)


@pytest.mark.parametrize("offset", [0.0, 250.0])
def test_differences_equal_but_for_rounding_are_ties(offset: float) -> None:
    """Median latencies of tenths: of the 16 swaps, 10 give a difference at least the
    observed one in exact arithmetic, 3 of them only within the last bits (0.7 - 0.6 is not
    0.1 in floats). Counted as ties, the share is 10 / 16, not 7 / 16; 250 ms higher too,
    where the last bits are larger: the tolerance grows with the values."""
    ref = offset + np.array([0.6, 0.5, 0.7, 0.6])
    cur = offset + np.array([0.8, 0.8, 0.4, 0.1])
    found = change(ref, cur, q=0.5, resamples=20_000)
    assert found.p_increase == pytest.approx(10 / 16, abs=0.015)


def test_more_pairs_than_a_chunk_holds_are_drawn_one_resample_at_a_time() -> None:
    # 500,001 pairs: past the chunk's 500,000 cells, each draw is one row of its own.
    ref = np.linspace(0.0, 1.0, 500_001)
    found = change(ref, ref + 1.0, q=0.5, resamples=3)
    assert (found.n, found.delta) == (500_001, pytest.approx(1.0, rel=1e-12))
    # Random swaps of so many pairs move the median by far less than 1: none reaches it.
    assert (found.p_increase, found.p_decrease) == (0.25, 1.0)


def test_the_unit_of_the_values_does_not_change_the_test() -> None:
    # Seconds or hours: scaling by a power of two is exact, so every tie and p-value stays.
    rng = np.random.default_rng(9)
    ref = rng.lognormal(0.0, 0.5, 60)
    cur = ref * rng.lognormal(0.05, 0.1, 60)
    cur[:10] = ref[:10]  # and some pairs unchanged
    found = change(ref, cur, q=0.9, resamples=500)
    for scale in (2.0**-60, 2.0**40):
        scaled = change(ref * scale, cur * scale, q=0.9, resamples=500)
        assert (scaled.p_increase, scaled.p_decrease) == (found.p_increase, found.p_decrease)
        assert scaled.delta == found.delta * scale
