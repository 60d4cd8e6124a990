"""The normal's upper tail against scipy and against 40-digit references."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from retrieval_gate.stats.normal_tail import normal_tails

# P(Z >= x) to 20 significant digits, computed at 40 digits (mpmath's ncdf): scipy's own
# sf loses about x^2 units in the last place, where the argument x / sqrt(2) is rounded
# before its erfc.
FAR_TAIL = [
    (0.5, 0.30853753872598689636),
    (3.0, 0.0013498980316300945267),
    (6.0, 9.865876450376981407e-10),
    (10.0, 7.619853024160526066e-24),
    (20.0, 2.7536241186062336951e-89),
    (30.0, 4.9067139271481870595e-198),
    (37.5, 4.6053530095819548438e-308),
]


def test_the_tail_is_scipy_s_within_scipy_s_own_error() -> None:
    # Every branch: the centre (|x| <= 0.66291), the tail to sqrt(32) and beyond, both signs;
    # scipy's error grows to about x^2 units in the last place (7e-15 at 8).
    x = np.linspace(-8.0, 8.0, 16001)
    assert normal_tails(x) == pytest.approx(stats.norm.sf(x), rel=1.5e-14, abs=0)


@pytest.mark.parametrize(("x", "expected"), FAR_TAIL)
def test_the_tail_keeps_its_relative_precision(x: float, expected: float) -> None:
    assert normal_tails(np.asarray([x]))[0] == pytest.approx(expected, rel=3e-15)
    assert normal_tails(np.asarray([-x]))[0] == pytest.approx(1.0 - expected, rel=1e-16)


def test_the_branches_meet_without_a_step() -> None:
    for edge in (0.66291, math.sqrt(32.0)):
        x = np.asarray([np.nextafter(edge, 0.0), edge, np.nextafter(edge, 9.0)])
        got = normal_tails(x)
        assert got == pytest.approx(stats.norm.sf(x), rel=5e-15)
        assert got[0] >= got[1] >= got[2]


def test_the_tail_and_its_mirror_add_to_one() -> None:
    x = np.random.default_rng(5).normal(0.0, 3.0, 2000)
    assert normal_tails(x) + normal_tails(-x) == pytest.approx(np.ones(x.size), abs=2e-16)


def test_infinite_nan_and_beyond_fifty() -> None:
    got = normal_tails(np.asarray([np.inf, -np.inf, np.nan, 50.0, -50.0, 1e300, -0.0]))
    assert got[:2].tolist() == [0.0, 1.0]
    assert math.isnan(got[2])
    assert got[3:6].tolist() == [0.0, 1.0, 0.0]
    assert got[6] == 0.5


def test_the_shape_is_kept() -> None:
    x = np.linspace(-3.0, 3.0, 12).reshape(3, 4)
    got = normal_tails(x)
    assert got.shape == (3, 4)
    assert got == pytest.approx(stats.norm.sf(x), rel=1e-14)
