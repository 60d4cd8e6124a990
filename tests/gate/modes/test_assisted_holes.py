"""The bounds of a prediction-powered check over every grading of its unjudged pairs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from retrieval_gate.gate.modes.assisted_holes import (
    FREE_AT_MOST,
    _largest_p,
    _smallest_p,
)
from retrieval_gate.stats.ppi import ppi_mean
from retrieval_gate.stats.significance import t_tail

Problem = tuple[np.ndarray, float, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _problem(seed: int, free: int) -> Problem:
    """People's deltas on n labelled queries, a judge weight, and each query's judge delta
    box (lowest, highest): `free` of the queries have a box wider than a point."""
    rng = np.random.default_rng(seed)
    n, big_n = int(rng.integers(4, 15)), int(rng.integers(3, 30))
    y = rng.normal(-0.08, 0.15, n)
    low = np.concatenate([y + rng.normal(0, 0.05, n), rng.normal(-0.05, 0.15, big_n)])
    high = low.copy()
    loose = rng.choice(n + big_n, size=min(free, n + big_n), replace=False)
    high[loose] += rng.uniform(0.0, 0.6, loose.size)
    return y, float(rng.uniform(0.1, 1.0)), low, high, np.arange(n), np.arange(n, n + big_n)


def _p_at(y: np.ndarray, lam: float, f: np.ndarray, ours: np.ndarray, theirs: np.ndarray) -> float:
    return ppi_mean(y, f[ours], f[theirs], lam=lam).p_drop


@pytest.mark.parametrize("seed", range(40))
def test_every_grading_has_a_p_value_between_the_bounds(seed: int) -> None:
    y, lam, low, high, ours, theirs = _problem(seed, free=5)
    smallest = _smallest_p(y, lam, (low, high), ours, theirs)
    largest = _largest_p(y, lam, (low, high), ours, theirs)
    rng = np.random.default_rng(seed + 1000)
    corners = []
    inside = [low + rng.uniform(0, 1, low.size) * (high - low) for _ in range(300)]
    loose = np.flatnonzero(high > low)
    for bits in itertools.product((False, True), repeat=loose.size):
        f = low.copy()
        f[loose[list(bits)]] = high[loose[list(bits)]]
        corners.append(f)
    values = [_p_at(y, lam, f, ours, theirs) for f in [*corners, *inside]]
    assert smallest <= min(values) + 1e-12
    assert max(values) <= largest + 1e-12


@pytest.mark.parametrize("seed", range(20))
def test_the_largest_p_value_is_a_corners_at_the_fewest_degrees_of_freedom(seed: int) -> None:
    """-estimate / se is a linear function over a convex one: its least value is at a corner,
    so the largest p-value found there is the box's (up to Welch's degrees of freedom, which
    the bound takes at their fewest)."""
    y, lam, low, high, ours, theirs = _problem(seed, free=4)
    largest = _largest_p(y, lam, (low, high), ours, theirs)
    loose = np.flatnonzero(high > low)
    ratios, estimates = [], []
    for bits in itertools.product((False, True), repeat=loose.size):
        f = low.copy()
        f[loose[list(bits)]] = high[loose[list(bits)]]
        found = ppi_mean(y, f[ours], f[theirs], lam=lam)
        ratios.append(-found.estimate / found.se)
        estimates.append(found.estimate)
    if max(estimates) >= 0:  # a grading with no drop: nothing bounds the p-value below 1
        assert largest == 1.0
        return
    df = min(ours.size - 1, theirs.size - 1) if theirs.size >= 2 else ours.size - 1
    assert largest == pytest.approx(t_tail(min(ratios), df), rel=1e-9)


def test_past_the_corners_it_tries_the_bound_still_holds() -> None:
    y, lam, low, high, ours, theirs = _problem(3, free=FREE_AT_MOST + 8)
    largest = _largest_p(y, lam, (low, high), ours, theirs)
    rng = np.random.default_rng(7)
    for _ in range(500):
        f = np.where(rng.random(low.size) < 0.5, low, high)
        assert _p_at(y, lam, f, ours, theirs) <= largest + 1e-12
