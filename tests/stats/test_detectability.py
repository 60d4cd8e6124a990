"""What a check can see: P(fail) at a true drop, the detectable drop and the queries needed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from retrieval_gate.gate.checks.compare import ComparisonSettings, Threshold, compare
from retrieval_gate.stats.detectability import (
    TARGET,
    critical_t,
    detectable_drop,
    fail_probability,
    queries_needed,
)

COMMON = {"resamples": 10_000}


def test_the_critical_value_is_the_normal_quantile_on_the_t_scale() -> None:
    z = 1.959963984540054
    assert critical_t(500, 0.025, **COMMON) == pytest.approx(z * math.sqrt(499 / (500 - z * z)))
    assert critical_t(10**8, 0.025, **COMMON) == pytest.approx(z, rel=1e-6)
    assert critical_t(3, 0.025, **COMMON) == math.inf  # n <= z^2
    assert critical_t(8, 0.001, **COMMON) == math.inf  # exact: 2^-8 > 0.001
    # Past the Monte Carlo resolution only Hoeffding's bound can reject.
    assert critical_t(500, 1e-4, resamples=1_000) > critical_t(500, 1e-4, resamples=100_000)
    t = critical_t(30, 0.025, resamples=1_000, t_test=True)
    assert t == pytest.approx(2.0452, abs=2e-4)  # Student's t_{0.975, 29}


@pytest.mark.parametrize(
    ("sd", "n", "level", "max_drop"),
    [
        (0.27, 500, 0.025 / 3, 0.02),  # the overall check, family of a README config
        (0.27, 60, 0.025 / 27, 0.02),  # a 60-query slice: the test binds
        (0.05, 2_000, 0.05, 0.02),  # the threshold binds
    ],
)
def test_the_detectable_drop_is_where_p_fail_reaches_the_power(
    sd: float, n: int, level: float, max_drop: float
) -> None:
    drop = detectable_drop(sd=sd, n=n, level=level, max_drop=max_drop, **COMMON)
    assert drop is not None
    assert drop > max_drop
    assert fail_probability(drop, sd=sd, n=n, level=level, max_drop=max_drop, **COMMON) == (
        pytest.approx(0.8)
    )
    at_threshold = fail_probability(max_drop, sd=sd, n=n, level=level, max_drop=max_drop, **COMMON)
    assert at_threshold <= 0.5
    grid = [
        fail_probability(d / 100, sd=sd, n=n, level=level, max_drop=max_drop, **COMMON)
        for d in range(30)
    ]
    assert grid == sorted(grid)


def test_without_significance_only_the_threshold_binds() -> None:
    drop = detectable_drop(sd=0.2, n=400, level=None, max_drop=0.02, **COMMON)
    assert drop == pytest.approx(0.02 + 0.8416212335729143 * 0.2 / 20)


def test_queries_needed_detect_half_again_the_threshold() -> None:
    for sd, level, max_drop in [(0.27, 0.0083, 0.02), (0.1, 0.05, 0.01), (0.3, 1e-3, 0.05)]:
        needed = queries_needed(sd=sd, level=level, max_drop=max_drop, **COMMON)
        assert needed is not None
        found = detectable_drop(sd=sd, n=needed, level=level, max_drop=max_drop, **COMMON)
        before = detectable_drop(sd=sd, n=needed - 1, level=level, max_drop=max_drop, **COMMON)
        assert found is not None
        assert found <= TARGET * max_drop * (1 + 1e-9)
        assert before is None or before > TARGET * max_drop
    assert queries_needed(sd=0.1, level=0.05, max_drop=0.0, **COMMON) is None
    assert queries_needed(sd=0.0, level=0.05, max_drop=0.02, **COMMON) is None


def test_a_check_too_small_for_its_level_detects_nothing() -> None:
    assert detectable_drop(sd=0.2, n=8, level=0.001, max_drop=0.02, **COMMON) is None
    assert fail_probability(0.5, sd=0.2, n=8, level=0.001, max_drop=0.02, **COMMON) == 0.0


def test_the_claim_holds_in_a_simulation_of_the_gate_itself() -> None:
    # One check, 400 queries, half of them tied: the drop the gate reports as caught 80% of
    # the time is caught 80% of the time (+- 3.5 Monte Carlo standard errors).
    n, sd, max_drop = 400, 0.2, 0.02
    rng = np.random.default_rng(31)
    base = rng.random(n)
    settings = ComparisonSettings(resamples=2_000)
    probe = compare(
        {"m": base},
        {"m": base + rng.normal(0, sd, n)},
        {"all": np.arange(n)},
        {"m": Threshold(max_drop=max_drop)},
        {},
        settings,
    )[0]
    assert probe.level == 0.05
    claimed = detectable_drop(sd=sd, n=n, level=0.05, max_drop=max_drop, resamples=2_000)
    assert claimed is not None
    trials, caught = 300, 0
    for _ in range(trials):
        moved = rng.random(n) < 0.5
        diff = np.where(moved, rng.normal(0, sd * math.sqrt(2), n), 0.0) - claimed
        (c,) = compare(
            {"m": base},
            {"m": base + diff},
            {"all": np.arange(n)},
            {"m": Threshold(max_drop=max_drop)},
            {},
            settings,
        )
        caught += c.verdict == "regressed"
    assert abs(caught / trials - 0.8) <= 3.5 * math.sqrt(0.8 * 0.2 / trials)
