"""The figures stated under run-to-run noise, against scipy: the noncentral t where the
run-wide shift is all the noise, and the t-test's bar averaged by adaptive quadrature."""

from __future__ import annotations

import functools
import math
import warnings

import pytest
from scipy import integrate, optimize, stats

from retrieval_gate.stats.detectability import detectable_drop, fail_probability

NORMAL = stats.norm
STUDENT = stats.t


@pytest.mark.parametrize("t_test", [False, True])
@pytest.mark.parametrize(("run_df", "level"), [(4, 0.05), (2, 0.05), (1, 0.1), (9, 0.01)])
def test_with_only_run_noise_p_fail_is_the_noncentral_t_s(
    t_test: bool, run_df: int, level: float
) -> None:
    # Per-query noise negligible: the test is Student's t on the runs' means, X / sqrt(B_hat)
    # past t(level, df), with X ~ N(drop, B) and B_hat ~ B chi2_df / df independent of it:
    # P(fail) is the noncentral t's tail at noncentrality drop / sqrt(B). A figure that took
    # B_hat as known (the old Welch-Satterthwaite bar) misses it by up to 0.2 at df 2.
    run_variance = 1e-4
    common = {
        "sd": 1e-7, "n": 10**6, "level": level, "max_drop": 1e-12, "resamples": 10_000,
        "t_test": t_test, "run_variance": run_variance, "run_df": run_df,
    }  # fmt: skip
    bar = STUDENT.isf(level, run_df)
    for multiple in (0.0, 1.0, 2.0, 3.0, 5.0):
        drop = multiple * math.sqrt(run_variance)
        expected = stats.nct.sf(bar, run_df, multiple)
        assert fail_probability(drop, **common) == pytest.approx(expected, rel=2e-4, abs=1e-7)
    got = detectable_drop(power=0.8, **common)
    assert got is not None
    expected = optimize.brentq(lambda m: stats.nct.sf(bar, run_df, m) - 0.8, 0.0, 100.0)
    assert got / math.sqrt(run_variance) == pytest.approx(expected, rel=2e-4)


def averaged_t_test_chance(
    drop: float, *, sd: float, n: int, level: float, max_drop: float, run_variance: float,
    run_df: int, rule: str,
) -> float:  # fmt: skip
    """P(fail) of the t-test over B_hat ~ B chi2_df / df by adaptive quadrature: at each
    B_hat the bar is Student's quantile at Welch-Satterthwaite's df (rounded down) times the
    estimated se, and the mean varies by the true se plus the bar's share of the sd's own
    spread, bar / sqrt(2 (n - 1))."""
    within = sd * sd / n
    se = math.sqrt(within + run_variance)
    # The same functions as scipy's frozen distributions, without their per-call overhead
    # (quad evaluates thousands of points here): t's quantile once per whole df, the
    # normal's cdf by math.erfc and chi2's density by its formula.
    quantile = functools.lru_cache(maxsize=None)(lambda whole: float(STUDENT.isf(level, whole)))

    def normal_cdf(z: float) -> float:
        return 0.5 * math.erfc(-z / math.sqrt(2.0))

    half = run_df / 2.0
    log_norm = -half * math.log(2.0) - math.lgamma(half)

    def at(u: float) -> float:
        if u <= 0.0:
            return 0.0
        estimated = run_variance * u
        df = (within + estimated) ** 2 / (within**2 / (n - 1) + estimated**2 / run_df)
        bar = quantile(max(1, math.floor(df))) * math.sqrt(within + estimated)
        spread = math.sqrt(se * se + bar * bar / (2 * (n - 1)))
        if rule == "significant-drop":
            chance = min(normal_cdf((drop - max_drop) / se), normal_cdf((drop - bar) / spread))
        else:
            chance = normal_cdf((drop - max_drop - bar) / spread)
        x = u * run_df
        density = math.exp(log_norm + (half - 1.0) * math.log(x) - x / 2.0)
        return chance * density * run_df

    with warnings.catch_warnings():
        # The rounded-down df jumps at each whole number: quad warns at those steps, which
        # are too small to matter at the comparison's tolerance.
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        found, _ = integrate.quad(at, 0.0, math.inf, epsabs=1e-12, epsrel=1e-9, limit=2000)
    return float(found)


@pytest.mark.parametrize("n", [200, 8])
@pytest.mark.parametrize("rule", ["significant-drop", "evidence-of-excess"])
def test_the_t_test_s_chance_is_its_bar_averaged_over_what_the_runs_estimate(
    rule: str, n: int
) -> None:
    # At 8 queries the bar's share of the sd's spread is a third of the mean's variance.
    shape = {"sd": 0.2, "n": n, "level": 0.05, "max_drop": 0.02, "run_variance": 1.5e-4}
    for run_df in (2, 4):
        for drop in (0.0, 0.02, 0.03, 0.04, 0.06):
            got = fail_probability(
                drop, resamples=10_000, t_test=True, run_df=run_df, rule=rule, **shape
            )
            expected = averaged_t_test_chance(drop, run_df=run_df, rule=rule, **shape)
            # The rounded-down df steps at every whole number between the runs' df and n - 1: the
            # trapezoid over B_hat's nodes smooths those steps, to 1% of P(fail) (0.4% seen).
            assert got == pytest.approx(expected, rel=1e-2, abs=1e-9)


def test_the_stated_drop_is_caught_with_the_power_and_more_noise_needs_more() -> None:
    common = {"sd": 0.2, "n": 200, "level": 0.05, "max_drop": 0.02, "resamples": 10_000}
    found = []
    for run_df in (2, 4, 8):
        noise = {"run_variance": 1.5e-4, "run_df": run_df}
        drop = detectable_drop(**common, **noise)
        assert drop is not None
        assert fail_probability(drop, **common, **noise) == pytest.approx(0.8, rel=1e-9)
        found.append(drop)
    # Fewer runs: B_hat is less certain and the t bar higher, so a larger drop is needed.
    assert found[0] > found[1] > found[2]


@pytest.mark.parametrize(("n", "run_variance"), [(200, 1e-4), (200, 1e-3), (100_000, 1e-3)])
def test_the_stated_drop_is_caught_with_the_power_where_the_bars_span_orders(
    n: int, run_variance: float
) -> None:
    # Two runs (df 1) at level 1e-3: Student's quantile is 318, so the bar over B_hat's
    # nodes runs from about the queries' own to hundreds of times the run noise's sd, and
    # the drop that fails 80% of the time lies far past the smallest (at 100,000 queries
    # also far past what the bars' own spread adds to it).
    common = {
        "sd": 0.2, "n": n, "level": 1e-3, "max_drop": 0.02, "resamples": 10_000,
        "run_variance": run_variance, "run_df": 1,
    }  # fmt: skip
    drop = detectable_drop(**common)
    assert drop is not None
    assert drop > 100 * math.sqrt(run_variance)
    assert fail_probability(drop, **common) == pytest.approx(0.8, rel=1e-9)


@pytest.mark.parametrize(
    ("rule", "on_inconclusive", "caught", "failing"),
    [("significant-drop", "pass", None, 0.0), ("non-inferiority", "fail", 0.0, 1.0)],
)
def test_too_few_queries_for_the_level_under_run_noise_are_as_without_it(
    rule: str, on_inconclusive: str, caught: float | None, failing: float
) -> None:
    # The sign flips' spread grows with the drop as drop / sqrt(n): their tail stays above
    # P(Z >= sqrt(n)), 1.1e-3 at 9 queries, so no drop reaches level 1e-3 (z^2 = 9.55), with
    # run-wide noise or without; the bars once doubled to infinity and gave NaN.
    common = {
        "sd": 0.2, "level": 1e-3, "max_drop": 0.02, "resamples": 10_000, "rule": rule,
        "on_inconclusive": on_inconclusive,
    }  # fmt: skip
    noise = {"run_variance": 1e-3, "run_df": 1}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert detectable_drop(n=9, **common) == caught
        assert detectable_drop(n=9, **common, **noise) == caught
        assert fail_probability(0.5, n=9, **common, **noise) == failing
        if caught is None:  # one query more and some drop is caught, with the power
            drop = detectable_drop(n=10, **common, **noise)
            assert drop is not None
            assert fail_probability(drop, n=10, **common, **noise) == pytest.approx(0.8)
