"""The judge in the gate's units against computations by hand on small cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from retrieval_gate.stats.judge_units import bland_altman, effective_queries, sign_agreement


def test_bland_altman_is_the_mean_difference_and_its_1_96_sd_limits() -> None:
    # Differences judge - people: 0.1, -0.1, 0.3; mean 0.1; sd (ddof 1) sqrt(0.08 / 2) = 0.2.
    bias, low, high = bland_altman(np.array([0.5, 0.7, 0.9]), np.array([0.4, 0.8, 0.6]))
    assert bias == pytest.approx(0.1)
    assert low == pytest.approx(0.1 - 1.96 * 0.2)
    assert high == pytest.approx(0.1 + 1.96 * 0.2)
    # One unit: no spread to state, the limits are the bias itself.
    assert bland_altman(np.array([0.3]), np.array([0.5])) == pytest.approx((-0.2, -0.2, -0.2))
    # Two units already have a spread: differences 0.3 and -0.1, sd |0.3 + 0.1| / sqrt(2).
    sd = 0.4 / math.sqrt(2)
    assert bland_altman(np.array([0.5, 0.2]), np.array([0.2, 0.3])) == pytest.approx(
        (0.1, 0.1 - 1.96 * sd, 0.1 + 1.96 * sd)
    )
    with pytest.raises(ValueError, match="at least one unit"):
        bland_altman(np.array([]), np.array([]))


def test_sign_agreement_counts_the_deltas_that_reach_the_threshold() -> None:
    people = np.array([-0.10, -0.02, 0.05, 0.20, -0.05, 0.0])
    judge = np.array([-0.30, 0.10, -0.01, 0.15, 0.00, -0.2])
    # |people| >= 0.05: -0.10 (judge -0.30, same), 0.05 (-0.01, not), 0.20 (0.15, same),
    # -0.05 (0.00: no sign, not the same).
    assert sign_agreement(people, judge, 0.05) == (4, 2)
    assert sign_agreement(people, judge, 0.5) == (0, 0)


def test_the_estimate_is_worth_the_queries_that_give_its_standard_error() -> None:
    people = np.array([0.1, -0.1, 0.3, 0.0])
    spread = float(np.var(people, ddof=1))
    # Mean 0.075; deviations 0.025, -0.175, 0.225, -0.075.
    assert spread == pytest.approx((0.000625 + 0.030625 + 0.050625 + 0.005625) / 3)
    # People alone: se^2 = spread / n; an estimate with half that variance is worth 2n.
    alone = math.sqrt(spread / 4)
    assert effective_queries(people, alone, 100) == pytest.approx(4.0)
    assert effective_queries(people, alone / math.sqrt(2), 100) == pytest.approx(8.0)
    # Never worth more queries than it read.
    assert effective_queries(people, alone / 10, 50) == 50.0
    assert effective_queries(people, 0.0, 50) is None
    assert effective_queries(np.array([0.2, 0.2]), 0.1, 50) is None
    assert effective_queries(np.array([0.2]), 0.1, 50) is None
    # Two units: var (ddof 1) (0.1 - 0.3)^2 / 2 = 0.02; at se 0.1 they are worth 2.
    assert effective_queries(np.array([0.1, 0.3]), 0.1, 50) == pytest.approx(2.0)
    # An estimate without a finite standard error is worth nothing stated.
    assert effective_queries(people, math.inf, 50) is None
    assert effective_queries(people, math.nan, 50) is None
