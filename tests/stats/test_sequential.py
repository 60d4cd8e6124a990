"""The betting e-process: valid under its null at every look, consistent, and exact at the end."""

from __future__ import annotations

import math

import numpy as np
import pytest

from retrieval_gate.stats.sequential import CAP, PRIOR_VARIANCE, log_wealth

LEVEL = 0.05


def _false_alarms(draw: object, trials: int, population: int | None) -> float:
    """Share of seeded sequences whose wealth ever reached 1 / LEVEL."""
    hits = 0
    for trial in range(trials):
        values = draw(np.random.default_rng([7, trial]))  # type: ignore[operator]
        null = float(values.mean()) if population else 0.0
        path = log_wealth(values, null, population=population)
        hits += bool(np.max(path) >= math.log(1 / LEVEL))
    return hits / trials


def _deltas(rng: np.random.Generator) -> np.ndarray:
    """300 paired deltas in [-1, 1]: mean about 0, 30% ties at exactly 0, clipped tails."""
    values = np.clip(rng.normal(0.0, 0.3, 300), -0.9, 0.9)
    values[rng.random(300) < 0.3] = 0.0
    return values


def test_draws_at_the_null_mean_rarely_reach_the_level() -> None:
    # Ville's bound at every look: independent draws of mean 0 against H0 "mean >= 0" ...
    assert _false_alarms(_deltas, 400, None) <= LEVEL
    # ... and a set drawn without replacement against H0 "the set's mean >= its own mean".
    assert _false_alarms(_deltas, 400, 300) <= LEVEL


def test_a_drop_past_the_null_is_found_and_the_path_is_predictable() -> None:
    rng = np.random.default_rng(3)
    values = np.clip(rng.normal(-0.15, 0.2, 400), -1, 1)
    path = log_wealth(values, -0.02)
    assert path[-1] > math.log(1 / LEVEL)
    # Each bet uses only the values before it: a prefix's path is the path's prefix.
    np.testing.assert_allclose(log_wealth(values[:123], -0.02), path[:123])
    without = log_wealth(values, -0.02, population=400)
    np.testing.assert_allclose(log_wealth(values[:123], -0.02, population=400), without[:123])


def test_a_set_whose_mean_is_settled_below_the_null_is_infinite_evidence() -> None:
    # Four of five values at -1: the fifth cannot lift the mean of the five to -0.5.
    path = log_wealth(np.array([-1.0, -1.0, -1.0, -1.0]), -0.5, population=5)
    assert math.isinf(path[-1])
    # Values that cannot settle it keep the evidence finite.
    assert math.isfinite(log_wealth(np.array([-1.0, 1.0]), -0.5, population=5)[-1])


@pytest.mark.parametrize("null", [0.0, -0.02, -0.5])
def test_no_evidence_when_the_values_sit_above_the_null(null: float) -> None:
    values = np.full(200, 0.1)
    assert np.max(log_wealth(values, null)) <= 0.0


def _reference_path(
    values: np.ndarray, null: float, population: int | None, upper: float, lower: float
) -> np.ndarray:
    """The e-process written out one look at a time: before value t the bettor has seen a
    pseudo-observation 0 and values[:t]; aGRAPA bets gap / (variance + gap^2) with gap the
    null's expected value minus their mean and variance (PRIOR_VARIANCE + their squared
    deviations) / (t + 1), clipped to [0, CAP / (upper - expected)]."""
    log_k, path = 0.0, []
    for t, x in enumerate(values):
        seen = np.concatenate(([0.0], values[:t]))
        mean = float(seen.mean())
        variance = (PRIOR_VARIANCE + float(((seen - mean) ** 2).sum())) / (t + 1)
        if population is None:
            expected = null
        else:
            expected = (population * null - float(values[:t].sum())) / (population - t)
        gap = expected - mean
        bet = gap / (variance + gap * gap) if gap > 0 else 0.0
        if expected < lower:
            bet = 0.0
        elif expected < upper:
            bet = min(bet, CAP / (upper - expected))
        else:
            bet = 0.0
        log_k += math.log1p(bet * (expected - x))
        rest = 0 if population is None else population - t - 1
        settled = population is not None and (
            population * null - float(values[: t + 1].sum()) - upper * rest > 1e-9
        )
        path.append(math.inf if settled else log_k)
    return np.array(path)


@pytest.mark.parametrize(
    ("null", "population", "upper", "lower"),
    [
        (0.0, None, 1.0, -1.0),
        (-0.05, None, 1.0, -1.0),
        (0.02, 60, 1.0, -1.0),
        (-0.1, 45, 1.0, -1.0),
        (0.6, None, 1.5, 0.5),  # a range above 0: the prior's 0 lies below every value
        (0.5, None, 1.5, 0.5),  # the null at the range's floor: no bet is allowed
    ],
)
def test_the_path_matches_the_bets_written_out_one_look_at_a_time(
    null: float, population: int | None, upper: float, lower: float
) -> None:
    rng = np.random.default_rng([11, int(null * 100) + 100, population or 0])
    middle = (upper + lower) / 2
    values = np.clip(rng.normal(middle - 0.1, 0.35, 45), lower, upper)
    values[rng.random(45) < 0.2] = middle  # ties, as paired deltas have
    got = log_wealth(values, null, population=population, upper=upper, lower=lower)
    np.testing.assert_allclose(got, _reference_path(values, null, population, upper, lower))
