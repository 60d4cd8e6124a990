"""One-sided paired tests, the interval they invert, and weighted multiplicity control."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from retrieval_gate.significance import (
    STOP_EXCEEDANCES,
    adjust_p_values,
    interval,
    paired_t,
    sign_flip,
    smallest_p,
)


def flip(diff: list[float] | np.ndarray, resamples: int = 10_000, seed: int = 0) -> tuple:
    found = sign_flip(
        np.asarray(diff, dtype=float), resamples=resamples, rng=np.random.default_rng(seed)
    )
    return float(found.drop[0]), float(found.rise[0]), bool(found.bound[0])


def enumerated(values: list[int]) -> tuple[float, float]:
    """One-sided sign-flip p-values by brute force over every sign vector, in integers."""
    total = sum(values)
    sums = [
        sum(s * v for s, v in zip(signs, values, strict=True))
        for signs in itertools.product([1, -1], repeat=len(values))
    ]
    return sum(s <= total for s in sums) / len(sums), sum(s >= total for s in sums) / len(sums)


# --------------------------------------------------------------------------------------------
# The sign-flip test
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("diff", "drop", "rise"),
    [
        ([1.0, 1.0, 1.0], 1.0, 1 / 8),
        ([-1.0, -1.0, -1.0], 1 / 8, 1.0),
        ([1.0, 2.0, 3.0, 4.0], 1.0, 1 / 16),
        # Signs of (1, 2, 3, -4): the sum is 2; sums >= 2 come from the subsets flipped to
        # sum 4 or less: 7 of 16 (the zero changes nothing).
        ([0.0, 1.0, 2.0, 3.0, -4.0], 11 / 16, 7 / 16),
        ([0.0, 0.0], 1.0, 1.0),
        ([], 1.0, 1.0),
    ],
)
def test_exact_one_sided_p_values_by_hand(diff: list[float], drop: float, rise: float) -> None:
    assert flip(diff)[:2] == (drop, rise)
    if any(diff):
        nonzero = [int(v) for v in diff if v]
        assert enumerated(nonzero) == (drop, rise)


@pytest.mark.parametrize("seed", range(5))
def test_exact_test_counts_float_ties_as_ties(seed: int) -> None:
    # Differences on a 0.1 grid: many sign vectors tie with the observed sum in exact
    # arithmetic but not in floats (0.1 + 0.2 != 0.3); they must count as extreme.
    tenths = np.random.default_rng(seed).integers(-5, 6, 10)
    expected = enumerated([int(t) for t in tenths if t])
    assert flip(tenths / 10)[:2] == expected


def test_exact_and_monte_carlo_agree() -> None:
    diff = np.random.default_rng(4).normal(-0.04, 0.1, 12)
    exact = flip(diff, resamples=4096)
    assert 0.01 < exact[0] < 0.5
    monte_carlo = flip(diff, resamples=200_000)
    assert monte_carlo[0] == pytest.approx(exact[0], rel=0.15)
    assert monte_carlo[1] == pytest.approx(exact[1], abs=0.03)


def test_a_tail_far_from_significance_stops_early_and_is_seeded() -> None:
    diff = np.random.default_rng(5).normal(0.0, 0.1, 300)
    drop, rise, bound = flip(diff, resamples=10_000, seed=7)
    assert not bound
    # Besag-Clifford: STOP_EXCEEDANCES extreme draws out of L, so p = STOP / L exactly.
    for p in (drop, rise):
        draws = STOP_EXCEEDANCES / p
        assert draws == pytest.approx(round(draws))
        assert draws < 1_000
    assert flip(diff, resamples=10_000, seed=7) == (drop, rise, bound)
    assert flip(diff, resamples=10_000, seed=8) != (drop, rise, bound)


def test_a_column_s_p_value_does_not_depend_on_the_others() -> None:
    rng = np.random.default_rng(9)
    columns = np.stack([rng.normal(m, 0.1, 400) for m in (-0.012, 0.0, -0.2, 0.01)], axis=1)
    together = sign_flip(columns, resamples=5_000, rng=np.random.default_rng(3))
    for c in range(columns.shape[1]):
        alone = sign_flip(columns[:, c], resamples=5_000, rng=np.random.default_rng(3))
        # Equal up to the last bits of a sum taken over another matrix shape.
        assert alone.drop[0] == pytest.approx(together.drop[c], rel=1e-9)
        assert alone.rise[0] == pytest.approx(together.rise[c], rel=1e-9)
        assert alone.bound[0] == together.bound[c]


def test_past_the_resolution_hoeffding_bounds_the_p_value() -> None:
    diff = np.random.default_rng(5).normal(-0.5, 0.1, 300)
    drop, rise, bound = flip(diff, resamples=999)
    assert bound
    hoeffding = math.exp(-(diff.sum() ** 2) / (2 * np.square(diff).sum()))
    assert drop == pytest.approx(min(1 / 1000, hoeffding), rel=1e-9)
    assert drop < 1e-30
    assert rise > 0.99
    # A moderate drop (z = 2.6) with no extreme draw in 50: the resolution is the bound.
    noise = np.random.default_rng(6).normal(0.0, 0.1, 300)
    noise -= noise.mean()
    weak = noise - 2.6 * noise.std() / math.sqrt(300)
    p, _, at_limit = flip(weak, resamples=50)
    assert at_limit
    assert p == 1 / 51


def test_p_values_are_valid_when_nothing_changed() -> None:
    # 3,000 symmetric columns: P(p <= u) <= u, up to Monte Carlo error, at every u.
    rng = np.random.default_rng(11)
    columns = rng.normal(0.0, 0.1, (60, 3_000)) * (rng.random((60, 3_000)) < 0.6)
    found = sign_flip(columns, resamples=2_000, rng=np.random.default_rng(12))
    for u in (0.01, 0.05, 0.2, 0.5):
        share = float(np.mean(found.drop <= u))
        assert share <= u + 3 * math.sqrt(u * (1 - u) / 3_000)
        assert share >= u - 4 * math.sqrt(u * (1 - u) / 3_000)  # and not needlessly strict


def test_paired_t_matches_scipy_one_sided() -> None:
    rng = np.random.default_rng(6)
    base = rng.beta(2.0, 2.0, 200)
    cur = np.clip(base + rng.normal(-0.01, 0.1, 200), 0.0, 1.0)
    drop, rise = paired_t(cur - base)
    assert drop == pytest.approx(stats.ttest_rel(cur, base, alternative="less").pvalue, rel=1e-9)
    assert rise == pytest.approx(stats.ttest_rel(cur, base, alternative="greater").pvalue, rel=1e-9)
    assert paired_t(np.zeros(10)) == (1.0, 1.0)
    assert paired_t(np.full(10, -0.1)) == (0.0, 1.0)
    assert paired_t(np.array([0.5])) == (1.0, 1.0)


def test_smallest_p_by_test_and_size() -> None:
    assert smallest_p(12, resamples=10_000) == 2.0**-12  # exact
    assert smallest_p(14, resamples=10_000) == 1 / 10_001  # Monte Carlo resolution
    assert smallest_p(40, resamples=1_000) == math.exp(-20)  # Hoeffding beyond it
    assert smallest_p(0, resamples=1_000) == 1.0
    assert smallest_p(2, resamples=1_000, t_test=True) == 0.0
    assert smallest_p(1, resamples=1_000, t_test=True) == 1.0


# --------------------------------------------------------------------------------------------
# The interval
# --------------------------------------------------------------------------------------------


def test_the_interval_is_the_sign_flip_test_inverted() -> None:
    diff = np.random.default_rng(8).normal(-0.02, 0.1, 500)
    low, high = interval(diff)  # type: ignore[misc]
    z = 1.959963984540054
    mean = diff.mean()
    half = z * math.sqrt(np.square(diff - mean).sum() / (500 * (500 - z * z)))
    assert (low, high) == pytest.approx((mean - half, mean + half), rel=1e-12)
    # At its ends the normal-form test is exactly at its cut-off.
    for shift in (low, high):
        moved = diff - shift
        assert abs(moved.sum()) / math.sqrt(np.square(moved).sum()) == pytest.approx(z)
    assert interval(np.full(7, 0.1)) == (0.1, 0.1)
    assert interval(np.array([0.1, -0.2, 0.3])) is None  # n <= z^2: no finite interval
    assert interval(np.array([])) is None
    wide = interval(diff, level=0.99)
    assert wide is not None
    assert wide[0] < low < high < wide[1]


def test_the_t_interval_matches_scipy() -> None:
    diff = np.random.default_rng(8).normal(-0.02, 0.1, 30)
    expected = stats.t.interval(0.95, 29, loc=diff.mean(), scale=stats.sem(diff))
    assert interval(diff, t_test=True) == pytest.approx(expected, rel=1e-12)


def test_the_interval_covers_at_n_30_on_data_with_point_masses() -> None:
    # Differences with 40% exact ties and heavy tails, like unchanged and reshuffled rankings.
    rng = np.random.default_rng(21)
    covered = 0
    trials = 4_000
    for _ in range(trials):
        moved = rng.random(30) < 0.6
        diff = np.where(moved, np.clip(rng.normal(0, 0.3, 30), -1, 1), 0.0)
        found = interval(diff)
        covered += found is not None and found[0] <= 0.0 <= found[1]
    assert covered / trials >= 0.94


# --------------------------------------------------------------------------------------------
# Multiplicity
# --------------------------------------------------------------------------------------------


def test_holm_and_bh_on_the_textbook_example() -> None:
    # Wikipedia's Holm-Bonferroni example; BH by hand: sorted 0.005, 0.01, 0.03, 0.04 times
    # 4/1, 4/2, 4/3, 4/4 = 0.02, 0.02, 0.04, 0.04 (already monotone).
    p = [0.01, 0.04, 0.03, 0.005]
    assert adjust_p_values(p, "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert adjust_p_values(p, "bh") == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert adjust_p_values(p, "none") == p
    assert adjust_p_values([], "holm") == []
    assert adjust_p_values([0.3, 0.6], "holm") == [0.6, 0.6]
    assert adjust_p_values([0.9, 0.9], "holm") == [1.0, 1.0]
    with pytest.raises(ValueError, match="within"):
        adjust_p_values([1.5], "holm")
    with pytest.raises(ValueError, match="weights"):
        adjust_p_values([0.1, 0.2], "holm", [1.0, 0.0])


def test_weighted_holm_by_hand() -> None:
    # Weights 1/2, 1/4, 1/4. p/w: 0.02, 0.04, 0.08. Step 1: 0.01 / 0.5 * 1 = 0.02; step 2:
    # 0.01 / 0.25 * 0.5 = 0.02 -> max 0.02; step 3: 0.02 / 0.25 * 0.25 = 0.02.
    assert adjust_p_values([0.01, 0.01, 0.02], "holm", [2, 1, 1]) == pytest.approx(
        [0.02, 0.02, 0.02]
    )
    # The overall check alone moved: tested at alpha * its weight, as `level` claims.
    p = [0.024, 0.6, 0.3, 0.9]
    adjusted = adjust_p_values(p, "holm", [0.5, 0.5 / 3, 0.5 / 3, 0.5 / 3])
    assert adjusted[0] == pytest.approx(0.048)
    assert adjusted[0] <= 0.05 < adjust_p_values(p, "holm")[0]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(0.0, 1.0), st.floats(0.01, 10.0)), min_size=1, max_size=30))
def test_adjusted_p_values_are_bounded_and_monotone(pairs: list[tuple[float, float]]) -> None:
    p = [raw for raw, _ in pairs]
    w = [weight for _, weight in pairs]
    share = [weight / sum(w) for weight in w]
    holm = adjust_p_values(p, "holm", w)
    bh = adjust_p_values(p, "bh", w)
    for raw, s, h, b in zip(p, share, holm, bh, strict=True):
        assert raw <= h <= 1.0
        assert 0.0 <= b <= 1.0
        assert h <= min(1.0, raw / s) * (1 + 1e-12)  # never worse than weighted Bonferroni
    ratio = [raw / s for raw, s in zip(p, share, strict=True)]
    for adjusted in (holm, bh):
        for i, j in itertools.permutations(range(len(p)), 2):
            if ratio[i] < ratio[j] * (1 - 1e-9):
                assert adjusted[i] <= adjusted[j]
    equal = adjust_p_values(p, "bh")
    unweighted = adjust_p_values(p, "holm")
    assert all(
        r <= b * (1 + 1e-12) and b <= h * (1 + 1e-12)
        for r, b, h in zip(p, equal, unweighted, strict=True)
    )
    assert equal == pytest.approx(list(stats.false_discovery_control(p, method="bh")), abs=1e-12)
    assert adjust_p_values(p, "holm", [1.0] * len(p)) == adjust_p_values(p, "holm")
