"""The saddlepoint tails of the sign-flip test against every sign vector, and in the gate."""

from __future__ import annotations

import math

import numpy as np
import pytest

from retrieval_gate.stats.saddlepoint import SADDLEPOINT_FROM, _span, sign_flip_tails
from retrieval_gate.stats.significance import sign_flip


def _exact(d: np.ndarray) -> tuple[float, float]:
    m = d.size
    signs = ((np.arange(1 << m)[:, None] >> np.arange(m)) & 1) * 2 - 1
    sums = signs @ d
    total = float(d.sum())
    tolerance = 1e-9 * float(np.abs(d).sum())
    return float(np.mean(sums <= total + tolerance)), float(np.mean(sums >= total - tolerance))


@pytest.mark.parametrize("seed", range(6))
def test_the_tails_are_within_a_few_percent_of_every_sign_vector_s_at_18_values(
    seed: int,
) -> None:
    rng = np.random.default_rng(seed)
    d = rng.normal(-0.08, 0.2, 18)
    low, high, _ = sign_flip_tails(d)
    exact_low, exact_high = _exact(d)
    for found, exact in ((low[0], exact_low), (high[0], exact_high)):
        assert found == pytest.approx(exact, rel=0.05, abs=2e-4)


def test_a_lattice_keeps_the_atom_at_the_observed_sum() -> None:
    # recall@10-like differences in tenths: the observed sum is an atom of sum*, which the
    # continuity correction keeps inside both tails.
    rng = np.random.default_rng(3)
    d = rng.choice([-0.2, -0.1, 0.1, 0.2], 18, p=[0.3, 0.35, 0.2, 0.15])
    low, high, _ = sign_flip_tails(d)
    exact_low, exact_high = _exact(d)
    assert low[0] == pytest.approx(exact_low, rel=0.05)
    assert high[0] == pytest.approx(exact_high, rel=0.05)
    assert low[0] + high[0] > 1.0  # the atom counts in both


def test_every_value_moving_one_way_has_the_exact_tail() -> None:
    d = -np.linspace(0.01, 0.3, 40)
    low, high, _ = sign_flip_tails(d)
    assert low[0] == 2.0**-40
    assert high[0] == pytest.approx(1.0)
    # Past 1,074 values 2^-m underflows: the smallest positive float stands above it.
    low, _, _ = sign_flip_tails(np.full(1_500, -0.5))
    assert 0.0 < low[0] < 1e-307


def test_a_tail_past_every_float_short_of_the_edge_is_the_smallest_float_not_0() -> None:
    # 40 values of 1 all positive (2^-40) and of 3,500 values of 1e-6 at least 3,000 so:
    # about 1e-400, short of the edge and of Hoeffding's 1e-300 (exp(-20)), so the
    # saddlepoint's; 0 would reject at any level.
    d = np.concatenate([np.ones(40), np.full(3_000, 1e-6), np.full(500, -1e-6)])
    _, high, bound = sign_flip_tails(d)
    assert high[0] == np.nextafter(0.0, 1.0)
    assert not bound[0]


def test_under_no_change_the_p_value_is_uniform_enough_at_1000_queries() -> None:
    rng = np.random.default_rng(11)
    magnitudes = rng.exponential(0.1, SADDLEPOINT_FROM)
    signs = rng.choice([-1.0, 1.0], (SADDLEPOINT_FROM, 2_000))
    low, _, _ = sign_flip_tails(magnitudes[:, None] * signs)
    # 2,000 draws: 0.05 +- 3 binomial sds, 0.01 +- 3 sds.
    assert abs(float(np.mean(low <= 0.05)) - 0.05) < 3 * math.sqrt(0.05 * 0.95 / 2_000)
    assert abs(float(np.mean(low <= 0.01)) - 0.01) < 3 * math.sqrt(0.01 * 0.99 / 2_000)


def test_the_gate_takes_it_from_1000_differences_and_samples_below() -> None:
    rng = np.random.default_rng(5)
    large = rng.normal(-0.004, 0.15, SADDLEPOINT_FROM)
    small = np.concatenate([large[: SADDLEPOINT_FROM - 1], [0.0]])  # 999 non-zero
    found = sign_flip(np.stack([large, small], axis=1), resamples=10_000, rng=rng)
    expected_low, expected_high, _ = sign_flip_tails(large)
    assert found.drop[0] == expected_low[0]
    assert found.rise[0] == expected_high[0]
    assert not found.bound[0]
    # The 999-value column is sampled: its p-value is a count of draws.
    assert found.drop[1] != pytest.approx(sign_flip_tails(small)[0][0], rel=1e-9)


def test_past_1e_300_the_tail_is_hoeffding_s_bound_and_says_so() -> None:
    rng = np.random.default_rng(9)
    d = rng.normal(-0.06, 0.2, 20_000)  # z about 42: exp(-S^2 / (2 sum d^2)) underflows
    low, high, bound = sign_flip_tails(d)
    total, square = float(d.sum()), float(np.square(d).sum())
    assert bound[0]
    assert low[0] == max(math.exp(-(total**2) / (2 * square)), float(np.nextafter(0.0, 1.0)))
    assert high[0] == pytest.approx(1.0)
    moderate = rng.normal(-0.005, 0.2, 20_000)
    assert not sign_flip_tails(moderate)[2][0]
    # Between 1e-300 and the smallest float the bound is its own value, over sum d^2.
    near = np.random.default_rng(9).normal(-0.055, 0.2, 20_000)  # exponent about -697
    low, _, bound = sign_flip_tails(near)
    total, square = float(near.sum()), float(np.square(near).sum())
    assert bound[0]
    assert 1e-308 < low[0] == math.exp(-(total**2) / (2 * square)) < 1e-300


@pytest.mark.parametrize("cells", [1, 2_000, 1 << 20])
@pytest.mark.parametrize("order", ["C", "F"])
def test_tails_taken_a_few_columns_at_a_time_are_the_same_numbers(
    monkeypatch: pytest.MonkeyPatch, cells: int, order: str
) -> None:
    from retrieval_gate.stats import saddlepoint

    rng = np.random.default_rng(11)
    values = rng.normal(-0.01, 0.3, (1_500, 7)).round(2)
    values[rng.random(values.shape) < 0.3] = 0.0
    values = np.asarray(values, order=order)  # type: ignore[call-overload]
    whole = saddlepoint._Columns.of(values)
    expected = sign_flip_tails(values)
    monkeypatch.setattr(saddlepoint, "_CELLS_AT_ONCE", cells)  # a column (or two) at a time
    part = saddlepoint._Columns.of(values)
    for name in ("absolute", "nonzero", "largest", "powers"):
        assert getattr(part, name).tolist() == getattr(whole, name).tolist(), name
    found = sign_flip_tails(values)
    for a, b in zip(found, expected, strict=True):
        assert a.tolist() == b.tolist()
    if order == "F":  # each column's figures are those of the column alone
        alone = saddlepoint._Columns.of(np.ascontiguousarray(values[:, 3:4]))
        assert alone.powers[:, 0].tolist() == whole.powers[:, 3].tolist()


def test_the_lattice_span_is_the_largest_every_value_is_a_whole_multiple_of() -> None:
    assert _span(np.array([0.0, -0.2, 0.1, 0.3])) == pytest.approx(0.1, rel=1e-12)
    # The first 64 values on tenths decide nothing alone: the 65th, 0.15, halves the span.
    assert _span(np.r_[np.full(64, 0.1), 0.15]) == pytest.approx(0.05, rel=1e-12)
    assert _span(np.array([1.0, 13.0 / 12.0])) == pytest.approx(1.0 / 12.0, rel=1e-12)
    assert _span(np.array([1.0, 14.0 / 13.0])) == 0.0  # 13 steps: past the 12 tried
    assert _span(np.array([1.0, math.sqrt(2.0)])) == 0.0
    assert _span(np.zeros(3)) == 0.0
    # Whole to 1e-9 of the ratio: 1e-10 off is on the lattice, 1e-6 off is not.
    assert _span(np.array([1.0, 2.0 + 1e-10])) == 1.0
    assert _span(np.array([1.0, 2.0 + 1e-6])) == 0.0
    assert _span(np.array([1.0, 100.0 + 5e-8])) == 1.0  # 1e-9 of a ratio of 100 is 1e-7


def _series_slope(d: np.ndarray, t: float) -> float:
    """K'(t) from log cosh x = x^2/2 - x^4/12 + x^6/45 - 17 x^8/2520, term by term."""
    y = t * d
    return float(np.sum(d * (y - y**3 / 3 + 2 * y**5 / 15 - 17 * y**7 / 315)))


def _reference_upper(d: np.ndarray, s: float, half: float) -> tuple[float, bool]:
    """P(sum* >= s) for s > 0 as the docstrings state it, by a root finder: Lugannani-Rice at
    s - half with K(t) = sum log cosh(t d) (its series where every |t d| stays within 0.5),
    the all-agreeing edge 2^-m, and Hoeffding's bound below 1e-300."""
    from scipy.optimize import brentq

    d = d[d != 0]
    m, square = d.size, float(np.square(d).sum())
    if s >= float(np.abs(d).sum()) * (1.0 - 1e-12):
        return max(2.0**-m, float(np.nextafter(0.0, 1.0))), False
    hoeffding = math.exp(-(s**2) / (2.0 * square))
    if hoeffding < 1e-300:
        return max(hoeffding, float(np.nextafter(0.0, 1.0))), True
    x = max(s - half, 0.0)
    reach = 0.5 / float(np.abs(d).max())
    if _series_slope(d, reach) >= x:  # the root keeps every |t d| <= 0.5: the series
        t = brentq(lambda v: _series_slope(d, v) - x, 0.0, reach, xtol=1e-300, rtol=1e-15)
        y = t * d
        k = float(np.sum(y**2 / 2 - y**4 / 12 + y**6 / 45 - 17 * y**8 / 2520))
        k2 = float(np.sum(d * d * (1 - y**2 + 2 * y**4 / 3 - 17 * y**6 / 45)))
    else:
        high = 1.0
        while float(np.dot(d, np.tanh(high * d))) < x:
            high *= 2.0
        t = brentq(
            lambda v: float(np.dot(d, np.tanh(v * d))) - x, 0.0, high, xtol=1e-300, rtol=1e-15
        )
        k = float(np.sum(np.logaddexp(t * d, -t * d)) - m * math.log(2.0))
        k2 = float(np.dot(d * d, 1.0 - np.tanh(t * d) ** 2))
    w = math.sqrt(max(2.0 * (t * x - k), 0.0))
    u = t * math.sqrt(k2)
    if w < 1e-4 or u <= 0:
        p = 0.5 * math.erfc(x / math.sqrt(2.0 * square))
    else:
        density = math.exp(-0.5 * w * w) / math.sqrt(2.0 * math.pi)
        p = 0.5 * math.erfc(w / math.sqrt(2.0)) + density * (1.0 / u - 1.0 / w)
    return min(max(p, 2.0**-m), 1.0), False


def _reference_tails(d: np.ndarray) -> tuple[float, float, bool]:
    """(P(sum* <= S), P(sum* >= S), whether the first is Hoeffding's bound); a tail past the
    middle is one minus the other side's beyond the atom at S, which lies a step of 2 span
    away."""
    half = _span(d)
    total = float(d.sum())

    def upper(s: float) -> tuple[float, bool]:
        if s > 0:
            return _reference_upper(d, s, half)
        if s < 0:
            return 1.0 - _reference_upper(d, -s + 2.0 * half, half)[0], False
        return 0.5, False

    (low, bound), (high, _) = upper(-total), upper(total)
    return low, high, bound


@pytest.mark.parametrize(
    ("case", "rel"),
    [
        ("middle", 1e-10),  # S 4e-4: the signed root below 1e-4, the normal formula
        ("centre", 1e-10),  # |t d| small: K from its series
        ("tail", 1e-10),  # a tail near 1e-5, still the series
        ("scaled", 1e-10),  # in a unit a million times smaller: the root is as exact
        ("lattice", 1e-10),  # tenths: the continuity correction
        ("far", 1e-12),  # |t d| past 0.5: the exact K
        ("few", 1e-12),  # 30 values, a tail near 1e-8
        ("hits", 1e-12),  # a hit rate's -1, 0 and 1: the exact K, over values of -1 exactly
        ("edge", 0.0),  # every value one way: 2^-m
        ("hoeffding", 0.0),  # past 1e-300
    ],
)
def test_the_tails_are_lugannani_rice_at_the_root_of_the_exact_k(case: str, rel: float) -> None:
    rng = np.random.default_rng(21)
    middle = np.random.default_rng(24).normal(0.0, 0.2, 1_500)
    middle[-1] -= middle.sum() - 4e-4
    d = {
        "middle": middle,
        "centre": rng.normal(-0.004, 0.2, 1_500),
        "tail": np.random.default_rng(22).normal(-0.02, 0.2, 1_500),
        "scaled": np.random.default_rng(22).normal(-0.02, 0.2, 1_500) * 1e6,
        "lattice": rng.choice([-0.2, -0.1, 0.0, 0.1, 0.2], 1_200, p=[0.24, 0.22, 0.1, 0.22, 0.22]),
        "far": rng.choice([-1.0, 1.0], 300, p=[0.8, 0.2]) * rng.uniform(0.5, 2.0, 300),
        "few": np.r_[-rng.uniform(0.1, 1.0, 27), rng.uniform(0.1, 0.3, 3)],
        "hits": np.r_[-np.ones(200), np.ones(60), np.zeros(40)],
        "edge": np.r_[-rng.uniform(0.1, 1.0, 40), np.zeros(5)],
        "hoeffding": rng.normal(-0.06, 0.2, 20_000),
    }[case]
    low, high, bound = sign_flip_tails(d)
    expected_low, expected_high, expected_bound = _reference_tails(d)
    assert low[0] == pytest.approx(expected_low, rel=rel, abs=0.0)
    assert high[0] == pytest.approx(expected_high, rel=rel, abs=0.0)
    assert bool(bound[0]) is expected_bound
    mirrored = sign_flip_tails(-d)  # the mirror image swaps the tails
    assert (mirrored[0][0], mirrored[1][0]) == (high[0], low[0])


def test_each_column_s_tails_are_those_of_the_column_alone() -> None:
    # Columns of every path side by side (zeros add nothing to sum*): exact K, series, edge.
    rng = np.random.default_rng(23)
    columns = np.zeros((600, 5))
    columns[:300, 0] = rng.choice([-1.0, 1.0], 300, p=[0.8, 0.2]) * rng.uniform(0.5, 2.0, 300)
    columns[:, 1] = rng.normal(-0.02, 0.2, 600)
    columns[:200, 2] = rng.choice([-1.0, 1.0], 200, p=[0.75, 0.25]) * rng.uniform(0.2, 1.0, 200)
    columns[:40, 3] = -rng.uniform(0.1, 1.0, 40)
    columns[:, 4] = rng.choice([-1.0, 1.0], 600, p=[0.7, 0.3]) * rng.uniform(0.1, 3.0, 600)
    together = sign_flip_tails(np.asfortranarray(columns))  # summed column by column
    for j in range(columns.shape[1]):
        alone = sign_flip_tails(columns[:, j])
        for both, one in zip(together, alone, strict=True):
            assert both[j] == one[0], j


def test_three_newton_steps_on_the_series_settle_a_root_near_its_reach(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Newton on K's series with the series' own K'' converges quadratically: from the
    normal approximation's root, three steps settle one at |t d| about 0.45 (a tail near
    1e-5) to the last digits; a wrong curve converges only linearly there."""
    from retrieval_gate.stats import saddlepoint

    d = np.r_[-np.full(71, 0.5), np.full(29, 0.5)]
    expected_low, expected_high, _ = _reference_tails(d)
    monkeypatch.setattr(saddlepoint, "_NEWTON_STEPS", 3)
    low, high, _ = sign_flip_tails(d)
    assert low[0] == pytest.approx(expected_low, rel=1e-13, abs=0.0)
    assert high[0] == pytest.approx(expected_high, rel=1e-13, abs=0.0)


def test_at_the_centre_the_tails_are_the_normal_s_past_the_powers_overflow() -> None:
    # At 1e40 d^8 overflows and every column takes the exact K, whose log cosh loses the
    # last digits near 0: the tiny t s - K it leaves may round below 0, which reads as 0.
    centre = np.random.default_rng(0).normal(0.0, 0.2, 1_500)
    centre[-1] -= centre.sum() - 1e-9
    with np.errstate(over="ignore"):
        low, high, bound = sign_flip_tails(centre * 1e40)
    z = 1e-9 / math.sqrt(2.0 * float(np.square(centre).sum()))
    assert low[0] == pytest.approx(0.5 * math.erfc(-z), rel=1e-14)
    assert high[0] == pytest.approx(0.5 * math.erfc(z), rel=1e-14)
    assert not bound[0]


def test_a_sum_of_0_on_a_lattice_holds_half_the_atom_past_a_half() -> None:
    # 500 values of 0.1 and 500 of -0.1: sum* = 0.2 (B - 500), B binomial(1000, 1/2), so
    # P(sum* >= 0) = 1/2 + P(B = 500) / 2, either tail.
    d = np.concatenate([np.full(500, 0.1), np.full(500, -0.1)])
    low, high, _ = sign_flip_tails(d)
    exact = 0.5 + math.comb(1000, 500) / 2**1001
    assert low[0] == pytest.approx(exact, rel=1e-4)
    assert high[0] == pytest.approx(exact, rel=1e-4)
    # Off any lattice a sum of 0 is the middle.
    spread = np.concatenate([d, [math.pi * 1e-3, -math.pi * 1e-3]])
    assert sign_flip_tails(spread)[1][0] == pytest.approx(0.5, abs=1e-12)
