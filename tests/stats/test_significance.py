"""One-sided paired tests, the interval they invert, and weighted multiplicity control."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from retrieval_gate.stats import significance
from retrieval_gate.stats.significance import (
    STOP_EXCEEDANCES,
    adjust_p_values,
    interval,
    noisy_sign_flip,
    paired_t,
    sign_flip,
    smallest_p,
    t_cdf,
    t_quantile,
    t_tail,
)


def flip(
    diff: list[float] | np.ndarray, resamples: int = 10_000, seed: int = 0
) -> tuple[float, float, bool]:
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
    # Besag-Clifford: a tail stops at its 100th extreme draw, the L-th (its p then known to
    # about 10%, 1 / sqrt(100)), so p = 100 / L exactly.
    for p in (drop, rise):
        draws = 100 / p
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


def straightforward_monte_carlo(
    values: np.ndarray, resamples: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sequential Monte Carlo as first written: one call for random bytes per block (128
    rows, doubling, at most 2,000,000 / n), every open column summed over every query, no
    tail decided by Hoeffding's bound alone."""
    rng = np.random.default_rng(seed)
    n, columns = values.shape
    total = values.sum(axis=0)
    half = 1e-10 * np.abs(values).sum(axis=0) / 2
    extreme = np.zeros((2, columns), dtype=np.int64)
    stopped_at = np.zeros((2, columns), dtype=np.int64)
    drawn, block = 0, 128
    while drawn < resamples and (stopped_at == 0).any():
        size = min(block, max(1, 2_000_000 // n), resamples - drawn)
        packed = rng.integers(0, 256, size=(size, (n + 7) // 8), dtype=np.uint8)
        flipped = np.unpackbits(packed, axis=1, count=n).astype(float) @ values
        for tail, hits in enumerate((flipped >= -half, flipped <= half)):
            running = np.cumsum(hits, axis=0) + extreme[tail]
            for c in np.flatnonzero(stopped_at[tail] == 0):
                if running[-1, c] >= STOP_EXCEEDANCES:
                    stopped_at[tail, c] = drawn + np.argmax(running[:, c] >= STOP_EXCEEDANCES) + 1
                extreme[tail, c] = running[-1, c]
        drawn += size
        block *= 2
    p = np.where(stopped_at > 0, STOP_EXCEEDANCES / np.maximum(stopped_at, 1), 1.0)
    none = (stopped_at == 0) & (extreme == 0)
    p = np.where(stopped_at > 0, p, (1.0 + extreme) / (1.0 + drawn))
    square = np.square(values).sum(axis=0)
    for tail, sign in ((0, -1.0), (1, 1.0)):
        hoeffding = np.exp(-(np.where(sign * total > 0, total, 0.0) ** 2) / (2 * square))
        p[tail] = np.where(none[tail], np.minimum(p[tail], hoeffding), p[tail])
    return p[0], p[1], none[0]


@pytest.mark.parametrize(("n", "resamples"), [(61, 3_000), (301, 10_000), (20_011, 1_500)])
def test_blocked_monte_carlo_gives_the_straightforward_p_values(
    n: int, resamples: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Null, moderate (run to the end), strong (decided by Hoeffding's bound) and slice-only
    # columns; 20,011 queries make the calls for random bytes smaller than the first block
    # (sampled here though the saddlepoint takes such columns in a gate).
    monkeypatch.setattr(significance, "SADDLEPOINT_FROM", 10**9)
    rng = np.random.default_rng(n)
    means = (0.0, 0.0, -2.5, 3.0, -8.0, 12.0, -0.5)
    values = np.stack([rng.normal(m / math.sqrt(n), 1.0, n) for m in means], axis=1)
    values[rng.random(values.shape) < 0.3] = 0.0
    values[: n // 2, 1] = 0.0
    values[n // 3 :, 6] = 0.0
    assert np.count_nonzero(values, axis=0).min() > math.log2(resamples)  # none tested exactly
    found = sign_flip(values, resamples=resamples, rng=np.random.default_rng(5))
    drop, rise, bound = straightforward_monte_carlo(values, resamples, 5)
    # Counts of draws agree exactly; Hoeffding's bound up to the last bits of sum(d^2).
    assert found.drop == pytest.approx(drop, rel=1e-12)
    assert found.rise == pytest.approx(rise, rel=1e-12)
    assert found.bound.tolist() == bound.tolist()


def test_sampled_sums_within_the_tie_tolerance_are_ties_and_past_it_are_not() -> None:
    # Six pairs (1, -(1 + e)): flipping both signs of j pairs moves the sum by 2 j e, near
    # ties at a quarter and at three quarters of the tolerance 1e-10 x sum |d| (j = 1).
    # 2^12 sign vectors, 3,000 draws: sampled, and compared with the plain reading.
    drops = []
    for share in (0.25, 0.75):
        e = share * 1e-10 * 12
        values = np.tile([1.0, -(1.0 + e)], 6)[:, None]
        assert 2 * e == pytest.approx(2 * share * 1e-10 * np.abs(values).sum(), rel=1e-9)
        found = sign_flip(values, resamples=3_000, rng=np.random.default_rng(5))
        drop, rise, _ = straightforward_monte_carlo(values, 3_000, 5)
        assert (found.drop[0], found.rise[0]) == pytest.approx((drop[0], rise[0]), rel=1e-12)
        drops.append(found.drop[0])
    # The near ties count toward the drop's p-value only within the tolerance.
    assert drops[0] > drops[1]


def test_a_tail_past_hoeffding_s_skip_threshold_is_what_full_sampling_gives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Strong drops and rises (z from 7 to 40) beside ordinary columns: with the skip rule off
    # every tail is sampled, no draw is as extreme, and the p-values are the same.
    rng = np.random.default_rng(14)
    columns = np.stack(
        [rng.normal(z / math.sqrt(500), 1.0, 500) for z in (-40, -9, -7, 0, 1.5, 7, 9, 40)],
        axis=1,
    )
    skipping = sign_flip(columns, resamples=10_000, rng=np.random.default_rng(2))
    total, square = columns.sum(axis=0), np.square(columns).sum(axis=0)
    hoeffding = np.exp(-(total**2) / (2 * square))
    decided = hoeffding * 10_000 < 1e-6
    assert decided.sum() == 5
    strong_drop = decided & (total < 0)
    assert skipping.drop[strong_drop] == pytest.approx(hoeffding[strong_drop], rel=1e-12)
    assert skipping.bound[strong_drop].all()
    monkeypatch.setattr(significance, "_SKIP_RISK", 0.0)
    sampling = sign_flip(columns, resamples=10_000, rng=np.random.default_rng(2))
    assert skipping.drop.tolist() == sampling.drop.tolist()
    assert skipping.rise.tolist() == sampling.rise.tolist()
    assert skipping.bound.tolist() == sampling.bound.tolist()


@pytest.mark.parametrize(("n", "cells"), [(1, 8), (13, 40), (100, 64), (1_003, 2_000_000)])
@pytest.mark.parametrize("still", [0.0, 0.8])
def test_flipped_sums_in_slices_of_queries_equal_one_product(
    monkeypatch: pytest.MonkeyPatch, n: int, cells: int, still: float
) -> None:
    monkeypatch.setattr(significance, "_UNPACK_CELLS", cells)
    rng = np.random.default_rng(n)
    packed = rng.integers(0, 256, size=(9, (n + 7) // 8), dtype=np.uint8)
    values = rng.normal(0.0, 1.0, (n, 4))
    values[rng.random(n) < still] = 0.0  # `still`: the share of queries moved in no column
    expected = np.unpackbits(packed, axis=1, count=n).astype(float) @ values
    rows, dense = significance._live(values)  # summed over the others alone when most are
    if rows is not None:
        assert len(rows) * 2 <= n
        assert (values[np.setdiff1d(np.arange(n), rows)] == 0).all()
    found = significance._flipped_sums(packed, dense, rows)
    assert found == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_flipped_sums_hold_about_unpack_cells_of_bits_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 20,000 queries x 64 sign vectors unpacked at once would be 1.3 MB of bits and 10 MB as
    # floats; in slices of 4,096 cells a few tens of kB (the inputs are allocated before).
    cells = 4_096
    monkeypatch.setattr(significance, "_UNPACK_CELLS", cells)
    rng = np.random.default_rng(3)
    n = 20_000
    packed = rng.integers(0, 256, size=(64, (n + 7) // 8), dtype=np.uint8)
    values = rng.normal(0.0, 1.0, (n, 4))
    tracemalloc.start()
    try:
        significance._flipped_sums(packed, values)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * cells * 9  # bytes: a slice's bits as uint8 and as float64, with room


@pytest.mark.parametrize("seed", range(4))
def test_p_values_summed_over_the_live_queries_are_those_over_all(
    monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    # Checks of small slices and rarely moved metrics: most of the 3,000 queries hold 0.
    rng = np.random.default_rng(seed)
    values = np.zeros((3_000, 5))
    for c in range(5):
        moved = rng.choice(3_000, int(rng.integers(20, 400)), replace=False)
        values[moved, c] = rng.normal((c - 2) / 40.0, 0.3, len(moved)).round(2)
    fast = sign_flip(values, resamples=10_000, rng=np.random.default_rng(seed))
    monkeypatch.setattr(significance, "_live", lambda v: (None, v))
    every = sign_flip(values, resamples=10_000, rng=np.random.default_rng(seed))
    assert fast.drop.tolist() == every.drop.tolist()
    assert fast.rise.tolist() == every.rise.tolist()
    assert fast.bound.tolist() == every.bound.tolist()


@pytest.mark.parametrize(("block_bytes", "unpack_cells"), [(1, 8), (300, 1_000), (10**9, 10**9)])
def test_p_values_do_not_depend_on_how_the_draws_are_blocked(
    monkeypatch: pytest.MonkeyPatch, block_bytes: int, unpack_cells: int
) -> None:
    # The blocks only bound memory: the draws, and so the seeded p-values, are the same.
    rng = np.random.default_rng(3)
    values = np.stack([rng.normal(z / 30.0, 1.0, 900) for z in (0.0, -2.0, 2.5, -6.0)], axis=1)
    values[rng.random(values.shape) < 0.2] = 0.0
    expected = sign_flip(values, resamples=4_000, rng=np.random.default_rng(8))
    monkeypatch.setattr(significance, "_BLOCK_BYTES", block_bytes)
    monkeypatch.setattr(significance, "_UNPACK_CELLS", unpack_cells)
    found = sign_flip(values, resamples=4_000, rng=np.random.default_rng(8))
    assert found.drop == pytest.approx(expected.drop, rel=1e-12)
    assert found.rise == pytest.approx(expected.rise, rel=1e-12)
    assert found.bound.tolist() == expected.bound.tolist()
    columnwise = sign_flip(np.asfortranarray(values), resamples=4_000, rng=np.random.default_rng(8))
    assert columnwise.drop == pytest.approx(expected.drop, rel=1e-12)


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


def test_paired_t_of_two_values_and_of_constant_rises() -> None:
    # Two values are the fewest with a t statistic (1 degree of freedom): scipy's.
    for pair in ([-0.3, -0.1], [0.2, -0.05], [0.4, 0.9]):
        drop, rise = paired_t(pair)
        assert drop == pytest.approx(stats.ttest_1samp(pair, 0.0, alternative="less").pvalue)
        assert rise == pytest.approx(stats.ttest_1samp(pair, 0.0, alternative="greater").pvalue)
    # No variation: certain in the direction of the change, whatever its size.
    for size in (0.1, 0.5, 1.0, 3.0):
        assert paired_t(np.full(10, size)) == (1.0, 0.0)
        assert paired_t(np.full(10, -size)) == (0.0, 1.0)


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


# --- run-wide noise: the sign flips plus a Student-t shift ------------------------------------


@pytest.mark.parametrize("df", [1, 2, 3, 4, 5, 8, 11, 40])
def test_t_cdf_matches_scipy_for_whole_degrees_of_freedom(df: int) -> None:
    x = np.linspace(-40.0, 40.0, 801)
    assert np.abs(t_cdf(x, df) - stats.t.cdf(x, df)).max() < 1e-14
    for p in (0.001, 0.0125, 0.5, 0.975):
        assert t_quantile(p, df) == pytest.approx(stats.t.ppf(p, df), abs=1e-9)


def test_t_quantile_rounds_a_fractional_df_down_to_the_heavier_tail() -> None:
    assert t_quantile(0.975, 4.9) == pytest.approx(stats.t.ppf(0.975, 4), abs=1e-9)
    assert t_quantile(0.975, 1e7) == pytest.approx(stats.norm.ppf(0.975), abs=1e-12)


def test_noisy_p_value_is_the_sign_flips_convolved_with_the_shift_by_hand() -> None:
    # Three differences: 8 sign vectors, each a sum*; p = mean of F_t((S - sum*) / sd).
    diff = np.asarray([-0.3, -0.1, 0.2])
    total = diff.sum()
    sums = [float(np.dot(signs, diff)) for signs in itertools.product([1, -1], repeat=3)]
    sd, df = 0.25, 4
    expected = np.mean([stats.t.cdf((total - s) / sd, df) for s in sums])
    found = noisy_sign_flip(diff, [sd], [df], resamples=10_000, rng=np.random.default_rng(0))
    assert float(found.drop[0]) == pytest.approx(expected, abs=1e-14)
    assert float(found.rise[0]) == pytest.approx(1 - expected, abs=1e-14)
    assert not found.bound[0]


def test_noisy_monte_carlo_agrees_with_enumeration() -> None:
    rng = np.random.default_rng(3)
    diff = rng.normal(-0.05, 0.2, 14)
    exact = noisy_sign_flip(diff, [0.3], [4], resamples=2**14, rng=np.random.default_rng(0))
    sampled = noisy_sign_flip(diff, [0.3], [4], resamples=2**14 - 1, rng=np.random.default_rng(1))
    assert float(sampled.drop[0]) == pytest.approx(float(exact.drop[0]), abs=0.01)


def test_noisy_monte_carlo_flips_every_query_however_many() -> None:
    # 80 queries, the 14 non-zero ones last (past 72 bits, past whole bytes): each must be
    # flipped in half the draws for the sampled p to match the enumeration over those 14.
    rng = np.random.default_rng(3)
    diff = np.concatenate([np.zeros(66), rng.normal(-0.05, 0.2, 6), np.full(8, -0.4)])
    exact = noisy_sign_flip(diff, [0.3], [4], resamples=2**14, rng=np.random.default_rng(0))
    sampled = noisy_sign_flip(diff, [0.3], [4], resamples=2**14 - 1, rng=np.random.default_rng(1))
    assert float(sampled.drop[0]) == pytest.approx(float(exact.drop[0]), abs=0.01)
    assert float(sampled.rise[0]) == pytest.approx(float(exact.rise[0]), abs=0.01)


def test_sign_flip_routes_noisy_columns_and_leaves_the_others_alone() -> None:
    rng = np.random.default_rng(4)
    diffs = rng.normal(-0.02, 0.1, (60, 3))
    plain = sign_flip(diffs, resamples=2_000, rng=np.random.default_rng(9))
    mixed = sign_flip(
        diffs,
        resamples=2_000,
        rng=np.random.default_rng(9),
        run_sd=np.asarray([0.0, 0.5, 0.0]),
        run_df=np.asarray([0, 4, 0]),
    )
    assert mixed.drop[0] == plain.drop[0]
    assert mixed.drop[2] == plain.drop[2]
    assert mixed.drop[1] > plain.drop[1]  # the shift widens the null: less evidence
    with pytest.raises(ValueError, match="run_df"):
        sign_flip(diffs, resamples=10, rng=np.random.default_rng(0), run_sd=np.ones(3))


def test_with_a_shared_shift_only_the_noisy_test_keeps_its_level() -> None:
    # Every run of an unchanged retriever moves all queries together by N(0, 0.01^2): the sign
    # flips alone read that shift as evidence; with 3 runs a side the t shift absorbs it.
    rng = np.random.default_rng(11)
    n, runs, trials = 200, 3, 800
    base = rng.uniform(0.2, 0.8, n)
    plain = noisy = 0
    for _ in range(trials):
        sides = [
            base + rng.normal(0, 0.01, (runs, 1)) + rng.normal(0, 0.05, (runs, n)) for _ in range(2)
        ]
        means = [side.mean(axis=0) for side in sides]
        spread = np.var([side.mean(axis=1) for side in sides], ddof=1, axis=1).mean()
        sd = n * np.sqrt(spread * (2 / runs))
        diff = means[1] - means[0]
        found = sign_flip(
            diff, resamples=1_000, rng=rng, run_sd=np.asarray([sd]), run_df=np.asarray([4])
        )
        noisy += float(found.drop[0]) <= 0.05
        plain += flip(sides[1][0] - sides[0][0], resamples=1_000)[0] <= 0.05
    assert plain / trials > 0.2
    # At most alpha plus 3 Monte Carlo standard errors of the simulation.
    assert noisy / trials <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / trials)


@pytest.mark.parametrize("df", [1, 3, 7.5, 40, 19_999, 200_000])
def test_t_tail_matches_scipy_into_the_far_tails(df: float) -> None:
    for t in (-60.0, -8.0, -1.3, -1e-9, 0.0, 2e-9, 0.7, 3.0, 12.0, 60.0):
        expected = float(stats.t.sf(t, df))
        # abs: scipy rounds the tail within 1e-9 of 0.5 to 0.5 (Cauchy, t = 2e-9: 0.5 - 6.4e-10)
        assert t_tail(t, df) == pytest.approx(expected, rel=1e-9, abs=1e-9), (df, t)
    # Student's t with 1 degree of freedom is Cauchy: P(T >= t) = 1/2 - atan(t) / pi, exactly.
    if df == 1:
        for t in (-1e-9, 2e-9, 0.5, 1e6):
            assert t_tail(t, 1) == pytest.approx(0.5 - math.atan(t) / math.pi, rel=1e-13)


def test_the_t_test_path_needs_no_scipy() -> None:
    code = (
        "import sys, numpy as np; "
        "from retrieval_gate.stats.significance import paired_t, interval; "
        "d = np.random.default_rng(1).normal(-0.01, 0.1, 500); paired_t(d); "
        "interval(d, t_test=True); print('scipy' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize("p", [0.0, 1.0, -0.5, 1.5])
def test_t_quantile_refuses_a_probability_outside_0_to_1(p: float) -> None:
    for df in (5.0, 2e6):  # the t bisection and the normal quantile above 10^6
        with pytest.raises(ValueError, match=r"p must be within \(0, 1\), got"):
            t_quantile(p, df)
