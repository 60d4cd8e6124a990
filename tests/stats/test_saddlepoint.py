"""The saddlepoint tails of the sign-flip test against every sign vector, and in the gate."""

from __future__ import annotations

import math

import numpy as np
import pytest

from retrieval_gate.stats.saddlepoint import SADDLEPOINT_FROM, sign_flip_tails
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
