"""The detectability figures as values, against scipy and the formulas written out by hand.

The other tests check directions ("wider", "larger", "monotone"), which a wrong constant also
satisfies; these pin each branch of `critical_t` and the run-noise terms to the number.
"""

from __future__ import annotations

import math

import pytest
from scipy import stats

from retrieval_gate.stats.detectability import (
    TARGET,
    critical_t,
    detectable_drop,
    fail_probability,
    queries_needed,
    short_of_target,
    stated_chance,
)

NORMAL = stats.norm
STUDENT = stats.t


def sign_flip_critical(n: int, z: float) -> float:
    """The sign-flip test's normal form, S / sqrt(sum d^2) > z, on the t scale: t past
    z sqrt((n - 1) / (n - z^2)) (t = S / sqrt((sum d^2 - S^2 / n) / (n - 1)), solved)."""
    return z * math.sqrt((n - 1) / (n - z * z))


def cornish_fisher(z: float, nu: int) -> float:
    """Student's t quantile by Abramowitz and Stegun 26.7.5, the terms up to nu^-3."""
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    return z + g1 / nu + g2 / nu**2 + g3 / nu**3


# critical_t, branch by branch -----------------------------------------------------------------


def test_the_normal_branch_uses_the_upper_normal_quantile() -> None:
    z = NORMAL.isf(0.01)
    assert critical_t(200, 0.01, resamples=10_000) == pytest.approx(
        sign_flip_critical(200, z), rel=1e-12
    )
    # Two queries are the fewest with a value: z^2 = 0.455 < 2 at level 0.25.
    z = NORMAL.isf(0.25)
    assert critical_t(2, 0.25, resamples=10_000) == pytest.approx(
        sign_flip_critical(2, z), rel=1e-12
    )
    assert critical_t(1, 0.25, resamples=10_000) == math.inf


def test_a_tiny_level_takes_the_lower_quantile_and_keeps_its_digits() -> None:
    # 1 - 1e-12 keeps only 4 significant digits of the tail: at 1e-12 the lower quantile is
    # used, which scipy's isf matches to the last digits.
    for level in (1e-12, 1e-13, 1e-30):
        z = NORMAL.isf(level)
        got = critical_t(10_000, level, resamples=10**40)
        assert got == pytest.approx(sign_flip_critical(10_000, z), rel=1e-10)
    z = NORMAL.isf(2e-12)
    got = critical_t(10_000, 2e-12, resamples=10**40)
    assert got == pytest.approx(sign_flip_critical(10_000, z), rel=1e-5)


def test_the_exact_branch_needs_two_to_the_minus_n_at_or_below_the_level() -> None:
    # 10 queries, 2^10 <= resamples: the exact test enumerates 1,024 sign vectors; its
    # smallest p is 2^-10, so a level of exactly 2^-10 is reachable and one below is not.
    z = NORMAL.isf(2.0**-10)
    assert z * z < 10
    assert critical_t(10, 2.0**-10, resamples=1_024) == pytest.approx(
        sign_flip_critical(10, z), rel=1e-12
    )
    assert critical_t(10, 2.0**-10 * 0.999, resamples=1_024) == math.inf
    z = NORMAL.isf(0.01)
    assert critical_t(10, 0.01, resamples=10_000) == pytest.approx(
        sign_flip_critical(10, z), rel=1e-12
    )


def test_exactly_two_to_the_n_resamples_still_enumerate() -> None:
    # 2 queries, 4 resamples = 2^2: the test enumerates the 4 sign vectors, so its smallest
    # p is 1/4 and a level of 0.22 is out of reach, though 5 x 0.22 >= 1 would let a Monte
    # Carlo draw show it and the normal z^2 = 0.60 is under 2 queries.
    assert NORMAL.isf(0.22) ** 2 < 2
    assert critical_t(2, 0.22, resamples=4) == math.inf
    assert critical_t(2, 0.25, resamples=4) == pytest.approx(
        sign_flip_critical(2, NORMAL.isf(0.25)), rel=1e-12
    )


def test_past_the_monte_carlo_resolution_hoeffding_sets_the_bar() -> None:
    # (resamples + 1) * level < 1: no draw can show it, only exp(-z^2 / 2) <= level can.
    z = math.sqrt(2 * math.log(1 / 1e-4))
    assert critical_t(500, 1e-4, resamples=1_000) == pytest.approx(
        sign_flip_critical(500, z), rel=1e-12
    )
    # At (resamples + 1) * level == 1 exactly a draw can still show it: the normal quantile.
    assert critical_t(500, 0.25, resamples=3) == pytest.approx(
        sign_flip_critical(500, NORMAL.isf(0.25)), rel=1e-12
    )
    # Just below it (4 x 0.2 < 1) only Hoeffding's bound can.
    z = math.sqrt(2 * math.log(1 / 0.2))
    assert critical_t(500, 0.2, resamples=3) == pytest.approx(sign_flip_critical(500, z), rel=1e-12)
    # Hoeffding's z^2 = 2 ln(1e4) = 18.4: 18 queries cannot pass it, 19 can.
    assert critical_t(18, 1e-4, resamples=1_000) == math.inf
    assert math.isfinite(critical_t(19, 1e-4, resamples=1_000))


@pytest.mark.parametrize(("n", "level"), [(5, 0.05), (12, 0.01), (40, 0.001)])
def test_the_t_test_bar_is_the_cornish_fisher_expansion(n: int, level: float) -> None:
    got = critical_t(n, level, resamples=10, t_test=True)  # resamples play no part
    assert got == pytest.approx(cornish_fisher(NORMAL.isf(level), n - 1), rel=1e-12)
    # And that is Student's quantile, to the expansion's accuracy.
    assert got == pytest.approx(STUDENT.isf(level, n - 1), rel=0.02 if n == 5 else 2e-3)


@pytest.mark.parametrize("level", [0.0, 1.0, -0.1])
def test_a_level_outside_0_1_is_refused(level: float) -> None:
    with pytest.raises(ValueError, match="level must be within"):
        critical_t(100, level, resamples=1_000)


# P(fail) and the detectable drop ------------------------------------------------------------


def bar(n: int, level: float, sd: float, run_variance: float, run_df: int | None) -> tuple:
    """The test's bar and the sd of the t statistic around its noncentrality: 1 + c^2 / (2 df)
    is the noncentral t's variance to first order. Without run-wide noise only (with it the
    bar is test_detectability_noise.py's)."""
    assert not run_variance
    c = sign_flip_critical(n, NORMAL.isf(level))
    return c, math.sqrt(1 + c * c / (2 * (n - 1)))


CASES = [
    # sd, n, level, max_drop, run variance, its df
    (0.25, 400, 0.025, 0.02, 0.0, None),
    (0.25, 60, 0.001, 0.02, 0.0, None),
]


@pytest.mark.parametrize(("sd", "n", "level", "max_drop", "run_variance", "run_df"), CASES)
def test_the_detectable_drop_is_the_bigger_of_the_two_hurdles(
    sd: float, n: int, level: float, max_drop: float, run_variance: float, run_df: int | None
) -> None:
    se = math.sqrt(sd * sd / n + run_variance)
    z = NORMAL.isf(0.2)  # 80% power
    c, spread = bar(n, level, sd, run_variance, run_df)
    expected = max(max_drop + z * se, se * (c + z * spread))
    got = detectable_drop(
        sd=sd, n=n, level=level, max_drop=max_drop, resamples=10_000,
        run_variance=run_variance, run_df=run_df,
    )  # fmt: skip
    assert got == pytest.approx(expected, rel=1e-9)
    without = detectable_drop(sd=sd, n=n, level=None, max_drop=max_drop, resamples=10_000,
                              run_variance=run_variance, run_df=run_df)  # fmt: skip
    assert without == pytest.approx(max_drop + z * se, rel=1e-12)


@pytest.mark.parametrize(("sd", "n", "level", "max_drop", "run_variance", "run_df"), CASES)
@pytest.mark.parametrize("multiple", [0.5, 1.0, 1.5, 3.0])
def test_p_fail_is_the_smaller_of_the_two_chances(
    sd: float,
    n: int,
    level: float,
    max_drop: float,
    run_variance: float,
    run_df: int | None,
    multiple: float,
) -> None:
    drop = multiple * max_drop
    se = math.sqrt(sd * sd / n + run_variance)
    c, spread = bar(n, level, sd, run_variance, run_df)
    past = NORMAL.cdf((drop - max_drop) / se)
    expected = min(past, NORMAL.cdf((drop / se - c) / spread))
    common = {"sd": sd, "n": n, "max_drop": max_drop, "resamples": 10_000}
    noise = {"run_variance": run_variance, "run_df": run_df}
    assert fail_probability(drop, level=level, **common, **noise) == pytest.approx(
        expected, rel=1e-9, abs=1e-15
    )
    assert fail_probability(drop, level=None, **common, **noise) == pytest.approx(past, rel=1e-12)


def test_one_query_detects_nothing_whatever_the_runs_say() -> None:
    c = critical_t(1, 0.05, resamples=10_000)
    assert c == math.inf
    common = {"sd": 0.1, "n": 1, "max_drop": 0.02, "resamples": 10_000}
    assert detectable_drop(level=0.05, run_variance=1e-4, run_df=3, **common) is None
    # Without a test only the threshold binds, and one query already has an estimate.
    assert detectable_drop(level=None, **common) == pytest.approx(
        0.02 + NORMAL.isf(0.2) * 0.1, rel=1e-12
    )


def test_zero_run_variance_leaves_its_degrees_of_freedom_out() -> None:
    # At level 0.25 Student's quantile with n - 1 df (0.703) is above the sign-flip bar
    # (0.655): run df given with no run variance must not pull the bar up to it.
    sd, n, level, max_drop = 0.25, 10, 0.25, 0.02
    assert STUDENT.isf(level, n - 1) > sign_flip_critical(n, NORMAL.isf(level))
    c, spread = bar(n, level, sd, 0.0, None)
    se = sd / math.sqrt(n)
    z = NORMAL.isf(0.2)
    common = {"sd": sd, "n": n, "level": level, "max_drop": max_drop, "resamples": 10_000}
    for run_df in (None, 3):
        got = detectable_drop(run_variance=0.0, run_df=run_df, **common)
        assert got == pytest.approx(max(max_drop + z * se, se * (c + z * spread)), rel=1e-9)
        drop = 0.1
        p = fail_probability(drop, run_variance=0.0, run_df=run_df, **common)
        expected = min(NORMAL.cdf((drop - max_drop) / se), NORMAL.cdf((drop / se - c) / spread))
        assert p == pytest.approx(expected, rel=1e-9)


RULES = [
    # rule, on_inconclusive, the level its deciding test is held to (x the gate's level)
    ("significant-drop", "fail", 2.0),
    ("evidence-of-excess", "pass", 1.0),
    ("evidence-of-excess", "fail", 2.0),
    ("non-inferiority", "pass", 1.0),
]


@pytest.mark.parametrize(("rule", "on_inconclusive", "lean"), RULES)
def test_each_rule_catches_the_drop_its_test_shows(
    rule: str, on_inconclusive: str, lean: float
) -> None:
    # Significant-drop: past the threshold and the test against 0 rejects (at 2 x level when
    # a lean fails too); the other two open rules fail when the test against max_drop does.
    sd, n, level, max_drop = 0.25, 400, 0.025, 0.02
    se = sd / math.sqrt(n)
    z = NORMAL.isf(0.2)
    c, spread = bar(n, level * lean, sd, 0.0, None)
    common = {"sd": sd, "n": n, "level": level, "max_drop": max_drop, "resamples": 10_000}
    how = {"rule": rule, "on_inconclusive": on_inconclusive}
    got = detectable_drop(**common, **how)
    assert got is not None
    if rule == "significant-drop":
        expected = max(max_drop + z * se, se * (c + z * spread))
    else:
        expected = max_drop + se * (c + z * spread)
    assert got == pytest.approx(expected, rel=1e-9)
    for drop in (0.0, 0.02, 0.03, 0.05):
        if rule == "significant-drop":
            chance = min(NORMAL.cdf((drop - max_drop) / se), NORMAL.cdf((drop / se - c) / spread))
        else:
            chance = NORMAL.cdf(((drop - max_drop) / se - c) / spread)
        assert fail_probability(drop, **common, **how) == pytest.approx(chance, rel=1e-9, abs=1e-15)
    # The detectable drop is the one caught with the power asked.
    assert fail_probability(got, **common, **how) == pytest.approx(0.8, rel=1e-9)


@pytest.mark.parametrize(("max_drop", "expected_positive"), [(0.02, True), (0.01, False)])
def test_non_inferiority_failing_closed_catches_drops_it_cannot_clear(
    max_drop: float, expected_positive: bool
) -> None:
    # Failing closed, a check fails unless the test shows the drop within max_drop: it fails
    # with 80% chance from max_drop - se (c - z spread) up, and at every drop when that is
    # below 0 (then 0 is stated, never a negative drop).
    sd, n, level = 0.25, 400, 0.025
    se = sd / math.sqrt(n)
    z = NORMAL.isf(0.2)
    c, spread = bar(n, level, sd, 0.0, None)
    common = {"sd": sd, "n": n, "level": level, "max_drop": max_drop, "resamples": 10_000}
    how = {"rule": "non-inferiority", "on_inconclusive": "fail"}
    got = detectable_drop(**common, **how)
    assert got == pytest.approx(max(0.0, max_drop - se * (c - z * spread)), rel=1e-9, abs=0.0)
    assert got is not None
    assert (got > 0) is expected_positive
    for drop in (0.0, 0.005, 0.02, 0.04):
        chance = 1.0 - NORMAL.cdf(((max_drop - drop) / se - c) / spread)
        assert fail_probability(drop, **common, **how) == pytest.approx(chance, rel=1e-9)
    if expected_positive:
        assert fail_probability(got, **common, **how) == pytest.approx(0.8, rel=1e-9)


def test_without_any_spread_the_check_fails_exactly_past_the_threshold() -> None:
    common = {"sd": 0.0, "n": 50, "level": 0.05, "max_drop": 0.02, "resamples": 10_000}
    assert fail_probability(0.02, **common) == 0.0
    assert fail_probability(0.0200001, **common) == 1.0
    assert fail_probability(0.5, **{**common, "n": 0}) == 0.0
    assert detectable_drop(**common) is None
    assert detectable_drop(**{**common, "sd": 0.1, "n": 0}) is None


def test_the_t_test_and_the_power_enter_the_detectable_drop() -> None:
    sd, n, level, max_drop = 0.2, 30, 0.01, 0.01
    c = cornish_fisher(NORMAL.isf(level), n - 1)
    spread = math.sqrt(1 + c * c / (2 * (n - 1)))
    se = sd / math.sqrt(n)
    z = NORMAL.isf(0.1)  # 90% power
    expected = max(max_drop + z * se, se * (c + z * spread))
    got = detectable_drop(
        sd=sd, n=n, level=level, max_drop=max_drop, resamples=10_000, t_test=True, power=0.9
    )
    assert got == pytest.approx(expected, rel=1e-9)


def test_queries_needed_stops_at_a_billion() -> None:
    common = {"level": 0.05, "max_drop": 1e-4, "resamples": 10_000}
    goal = TARGET * 1e-4
    # sd 2.5: a billion queries fall short of the goal, two billion would reach it.
    assert detectable_drop(sd=2.5, n=10**9, **common) > goal  # type: ignore[operator]
    assert detectable_drop(sd=2.5, n=2 * 10**9, **common) <= goal  # type: ignore[operator]
    assert queries_needed(sd=2.5, **common) is None
    needed = queries_needed(sd=1.8, **common)
    assert needed is not None
    assert 5 * 10**8 < needed <= 10**9
    # The fewest that reach the goal, by the one rule every statement uses (a float's slack).
    assert not short_of_target(detectable_drop(sd=1.8, n=needed, **common), 1e-4)  # type: ignore[arg-type]
    assert short_of_target(detectable_drop(sd=1.8, n=needed - 1, **common), 1e-4)  # type: ignore[arg-type]


def test_one_query_has_a_chance_to_fail_when_no_test_is_required() -> None:
    got = fail_probability(0.05, sd=0.1, n=1, level=None, max_drop=0.02, resamples=10_000)
    assert got == pytest.approx(NORMAL.cdf((0.05 - 0.02) / 0.1), rel=1e-12)
    assert fail_probability(0.05, sd=0.1, n=1, level=0.05, max_drop=0.02, resamples=10_000) == 0.0


@pytest.mark.parametrize("t_test", [False, True])
def test_one_query_can_reach_no_level(t_test: bool) -> None:
    # A single query has no spread to test with (the t-test's df would be 0).
    assert critical_t(1, 0.05, resamples=10_000, t_test=t_test) == math.inf
    assert critical_t(0, 0.05, resamples=10_000, t_test=t_test) == math.inf


@pytest.mark.parametrize(
    ("p", "shown"), [(0.797, 0.79), (0.7999, 0.79), (0.8, 0.8), (0.804, 0.8), (0.456, 0.46)]
)
def test_a_chance_short_of_the_power_is_never_stated_as_reaching_it(p: float, shown: float) -> None:
    assert stated_chance(p) == shown
