"""The sign-flip tests, Student's t and the interval as values, against scipy and by hand."""

from __future__ import annotations

import itertools
import math
from statistics import NormalDist
from typing import Any

import numpy as np
import pytest
from scipy import stats

from retrieval_gate.stats import significance
from retrieval_gate.stats.significance import (
    interval,
    noisy_sign_flip,
    sign_flip,
    smallest_p,
    t_quantile,
    t_tail,
)


class Recording:
    """A generator that keeps every block of random bytes it hands out."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.blocks: list[np.ndarray] = []

    def integers(self, *args: Any, **kwargs: Any) -> np.ndarray:
        block = self.rng.integers(*args, **kwargs)
        self.blocks.append(block.copy())
        return block


@pytest.mark.parametrize("resamples", [5_000, 4_100])
def test_the_sampled_noisy_test_averages_exactly_resamples_sign_vectors(resamples: int) -> None:
    # 1,000 queries: sign vectors come 2,000 at a time, so the last block is a part one.
    n, sd, df = 1_000, 5.0, 3
    diffs = np.random.default_rng(5).normal(-0.01, 0.2, n)
    rng = Recording(11)
    found = noisy_sign_flip(diffs, [sd], [df], resamples=resamples, rng=rng)  # type: ignore[arg-type]
    bits = np.unpackbits(np.concatenate(rng.blocks), axis=1, count=n).astype(np.float64)
    assert bits.shape == (resamples, n)
    # p_drop = P(sum* + sd T <= S) with sum* = S - 2 (bits . d): the mean of T's cdf at the gap.
    gap = 2.0 * (bits @ diffs) / sd
    assert found.drop[0] == pytest.approx(float(np.mean(stats.t.cdf(gap, df))), rel=1e-12)
    assert found.rise[0] == pytest.approx(float(np.mean(stats.t.cdf(-gap, df))), rel=1e-12)
    assert not found.bound[0]


def test_student_s_quantile_becomes_the_normal_one_at_a_million_degrees_of_freedom() -> None:
    for p in (0.975, 0.999, 0.01):
        assert t_quantile(p, 1e6) == pytest.approx(NormalDist().inv_cdf(p), rel=1e-13)
        assert t_quantile(p, 999_999) == pytest.approx(stats.t.ppf(p, 999_999), rel=1e-10)
        assert t_quantile(p, 999_999) != pytest.approx(NormalDist().inv_cdf(p), rel=1e-8)


def test_the_sampled_sign_flip_counts_the_draws_of_its_documented_stream() -> None:
    # 100 queries, a drop with p near 0.003: no tail stops early on the drop side and none is
    # past Hoeffding's skip, so p = (1 + draws at least as extreme) / (1 + resamples), the
    # draws being ceil(n / 8) random bytes per sign vector, bit 1 = flipped.
    n, resamples = 100, 10_000
    diffs = np.random.default_rng(3).normal(0.0, 0.2, n) - 0.055
    rng = Recording(17)
    found = sign_flip(diffs, resamples=resamples, rng=rng)  # type: ignore[arg-type]
    # Drawn in calls of 128 rows, doubling (the seeded stream depends on these sizes).
    assert [len(block) for block in rng.blocks] == [128, 256, 512, 1024, 2048, 4096, 1936]
    blocks = np.concatenate(rng.blocks)
    assert blocks.shape == (resamples, (n + 7) // 8)
    bits = np.unpackbits(blocks, axis=1, count=n).astype(np.float64)
    total = float(diffs.sum())
    flipped = total - 2.0 * (bits @ diffs)
    tolerance = 1e-10 * float(np.abs(diffs).sum())
    extreme = int(np.count_nonzero(flipped <= total + tolerance))
    assert 0 < extreme < 100
    assert found.drop[0] == (1 + extreme) / (1 + resamples)
    assert not found.bound[0]


def test_the_noisy_exact_test_leaves_zero_differences_out() -> None:
    # A zero difference changes no sum: enumerating every sign of all 7 values (zeros too)
    # gives the p-value over the 2^5 sign vectors of the non-zero ones.
    diffs = np.array([0.3, 0.0, -0.1, 0.25, 0.0, 0.4, -0.2])
    sd, df = 0.3, 4
    total = float(diffs.sum())
    sums = np.array([np.dot(s, diffs) for s in itertools.product((1, -1), repeat=diffs.size)])
    expected = float(np.mean(stats.t.cdf((total - sums) / sd, df)))
    found = noisy_sign_flip(diffs, [sd], [df], resamples=10_000, rng=np.random.default_rng(0))
    assert found.drop[0] == pytest.approx(expected, rel=1e-12)


def test_t_tail_at_an_infinite_square_is_0_or_1() -> None:
    assert t_tail(1e200, 5) == 0.0  # t^2 overflows: x = df / (df + t^2) is 0
    assert t_tail(-1e200, 5) == 1.0
    assert t_tail(40.0, 5) == pytest.approx(stats.t.sf(40.0, 5), rel=1e-10, abs=0)
    assert t_tail(math.inf, 5) == 0.0
    assert t_tail(-math.inf, 5) == 1.0


def test_t_quantile_below_one_degree_of_freedom_is_cauchy_s() -> None:
    # Rounded down, but never to 0 degrees of freedom: 1, Cauchy, the heaviest t there is.
    assert t_quantile(0.975, 0.5) == pytest.approx(math.tan(math.pi * 0.475), rel=1e-9)


def test_the_interval_of_one_value_or_equal_values_is_that_value() -> None:
    assert interval([0.3]) == (0.3, 0.3)
    assert interval([0.1, 0.1, 0.1], t_test=True) == (0.1, 0.1)


def test_the_smallest_p_is_exact_up_to_two_to_the_n_resamples_and_62_queries() -> None:
    assert smallest_p(10, resamples=1_024) == 2.0**-10  # 1,024 sign vectors: all of them
    assert smallest_p(10, resamples=1_023) == 1 / 1_024  # sampled: the resolution
    assert smallest_p(62, resamples=2**62) == 2.0**-62
    # 63 queries are never enumerated (sign vectors are numbered in int64), whatever resamples.
    assert smallest_p(63, resamples=2**64) == 1 / (2**64 + 1)
    assert smallest_p(100, resamples=10**6) == math.exp(-50)  # Hoeffding, below 1e-6


def test_each_call_draws_at_most_two_million_random_bits_in_all(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 666,667 queries: 2,000,000 // n = 2 sign vectors per call (sampled here though the
    # saddlepoint takes such columns in a gate).
    monkeypatch.setattr(significance, "SADDLEPOINT_FROM", 10**9)
    n = 666_667
    diffs = np.random.default_rng(1).normal(-0.001, 0.2, n)
    rng = Recording(2)
    sign_flip(diffs, resamples=7, rng=rng)  # type: ignore[arg-type]
    assert [len(block) for block in rng.blocks] == [2, 2, 2, 1]
