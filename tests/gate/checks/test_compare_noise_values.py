"""compare() with repeated runs, as values: the run-noise variance, the noisy tests' p-values
and degrees of freedom, the widened interval and the detectable drop, each against the formula
written out here and scipy.

The run-noise tests elsewhere check directions ("wider", "larger p"), which a wrong formula
satisfies too.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from retrieval_gate.gate.checks.compare import ComparisonSettings, Threshold, compare
from retrieval_gate.gate.checks.run_noise import RunNoise, run_spread
from retrieval_gate.stats.detectability import detectable_drop

NORMAL = stats.norm
STUDENT = stats.t
N = 17
"""Queries: 30% of them (5) can still fail the overall check at alpha 0.05 (2^-5 = 0.031)."""
MAX_DROP = 0.02


def runs(seed: int, count: int, shift: float) -> list[dict[str, np.ndarray]]:
    """`count` runs of one retriever over N queries: per-query values plus a run-wide shift."""
    rng = np.random.default_rng(seed)
    base = rng.random(N)
    return [
        {"m": np.clip(base + shift + rng.normal(0, 0.05, N) + rng.normal(0, 0.03), 0, 1)}
        for _ in range(count)
    ]


def mean_of(side: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    return {"m": np.mean([run["m"] for run in side], axis=0)}


def pooled(*sides: list[dict[str, np.ndarray]]) -> tuple[float, int]:
    """The run-to-run variance of the mean, pooled over the sides with two or more runs: the
    sum over sides of (runs - 1) times the sample variance of their means, over the summed
    degrees of freedom."""
    squares, df = 0.0, 0
    for side in sides:
        if len(side) < 2:
            continue
        means = [float(np.mean(run["m"])) for run in side]
        squares += (len(means) - 1) * float(np.var(means, ddof=1))
        df += len(means) - 1
    return squares / df, df


def check(
    reference: list[dict[str, np.ndarray]],
    current: list[dict[str, np.ndarray]],
    test: str,
):
    (found,) = compare(
        mean_of(reference),
        mean_of(current),
        {"all": np.arange(N)},
        {"m": Threshold(max_drop=MAX_DROP)},
        {},
        ComparisonSettings(test=test, resamples=1 << N),  # type: ignore[arg-type]
        runs=(reference, current),
    )
    return found


def test_the_run_noise_is_the_pooled_between_run_variance_over_each_side_s_runs() -> None:
    reference, current = runs(1, 3, 0.0), runs(1, 2, -0.01)
    variance, df = pooled(reference, current)
    assert df == 3
    spread, found_df = run_spread((reference, current), "m", np.arange(N))  # type: ignore[misc]
    assert (spread, found_df) == (pytest.approx(math.sqrt(variance), rel=1e-12), 3)
    noise = RunNoise.of(spread, found_df, reference_runs=3, current_runs=2)
    # The mean delta of averaged runs: B / R_ref + B / R_cur.
    assert noise.variance == pytest.approx(variance * (1 / 3 + 1 / 2), rel=1e-12)
    assert noise.spread == spread
    assert noise.df == 3
    # One side repeated: its runs alone estimate B, and the other side is assumed alike.
    spread, found_df = run_spread((reference[:1], current), "m", np.arange(N))  # type: ignore[misc]
    alone, alone_df = pooled(current)
    assert (spread, found_df) == (pytest.approx(math.sqrt(alone), rel=1e-12), alone_df)
    assert run_spread((reference[:1], current[:1]), "m", np.arange(N)) is None
    # A slice's means are over its own rows.
    rows = np.arange(0, N, 2)
    spread, _ = run_spread((reference, current), "m", rows)  # type: ignore[misc]
    halves = [[{"m": run["m"][rows]} for run in side] for side in (reference, current)]
    assert spread == pytest.approx(math.sqrt(pooled(*halves)[0]), rel=1e-12)


def test_the_noisy_t_test_uses_welch_satterthwaite_degrees_of_freedom() -> None:
    reference, current = runs(2, 3, 0.0), runs(2, 2, -0.03)
    found = check(reference, current, "t")
    b, run_df = pooled(reference, current)
    run_variance = b * (1 / 3 + 1 / 2)
    diff = mean_of(current)["m"] - mean_of(reference)["m"]
    within = float(np.var(diff, ddof=1)) / N
    variance = within + run_variance
    df = variance**2 / (within**2 / (N - 1) + run_variance**2 / run_df)
    t = float(diff.mean()) / math.sqrt(variance)
    assert 3 < df < N - 1  # neither side's df alone
    assert found.p_value == pytest.approx(STUDENT.cdf(t, math.floor(df)), rel=1e-9, abs=0)
    assert found.run_sd == pytest.approx(math.sqrt(b), rel=1e-12)
    # The paired t interval, widened by the run-wide shift's own 95% half-width in quadrature.
    half = STUDENT.isf(0.025, N - 1) * math.sqrt(float(np.var(diff, ddof=1)) / N)
    extra = STUDENT.isf(0.025, run_df) * math.sqrt(run_variance)
    wide = math.sqrt(half**2 + extra**2)
    assert found.ci_low == pytest.approx(diff.mean() - wide, rel=1e-9)
    assert found.ci_high == pytest.approx(diff.mean() + wide, rel=1e-9)
    assert found.queries_needed is None  # more queries do not remove run-wide noise


def test_the_noisy_sign_flip_averages_student_s_t_over_every_sign_vector() -> None:
    reference, current = runs(3, 3, 0.0), runs(3, 3, -0.02)
    found = check(reference, current, "randomization")
    b, run_df = pooled(reference, current)
    run_variance = b * (1 / 3 + 1 / 3)
    diff = mean_of(current)["m"] - mean_of(reference)["m"]
    assert np.count_nonzero(diff) == N  # 2^17 resamples: every sign vector
    # p = P(sum* + sd_sum T <= S), T Student's with the runs' df, sd_sum the shift of the sum.
    sd_sum = N * math.sqrt(run_variance)
    total = float(diff.sum())
    sums = np.array([np.dot(signs, diff) for signs in itertools.product((1, -1), repeat=N)])
    expected = float(np.mean(STUDENT.cdf((total - sums) / sd_sum, run_df)))
    assert found.p_value == pytest.approx(expected, rel=1e-9, abs=0)
    assert not found.p_bound
    # The sign-flip interval (its normal form) widened the same way as the t-test's.
    z = NORMAL.isf(0.025)
    squares = float(np.square(diff - diff.mean()).sum())
    half = z * math.sqrt(squares / (N * (N - z * z)))
    extra = STUDENT.isf(0.025, run_df) * math.sqrt(run_variance)
    wide = math.sqrt(half**2 + extra**2)
    assert found.ci_low == pytest.approx(diff.mean() - wide, rel=1e-9)
    assert found.ci_high == pytest.approx(diff.mean() + wide, rel=1e-9)


def test_the_detectable_drop_with_run_noise_is_the_figure_for_the_runs_noise() -> None:
    # What the figure is, given the noise, is pinned in tests/stats/test_detectability_noise.py
    # and test_run_shift.py; here compare() must hand it the pooled B x (1/3 + 1/2) on the
    # runs' degrees of freedom and the sd of the averaged runs' differences.
    reference, current = runs(4, 3, 0.0), runs(4, 2, 0.0)
    found = check(reference, current, "randomization")
    b, run_df = pooled(reference, current)
    diff = mean_of(current)["m"] - mean_of(reference)["m"]
    expected = detectable_drop(
        sd=float(np.std(diff, ddof=1)), n=N, level=0.05, max_drop=MAX_DROP, resamples=1 << N,
        run_variance=b * (1 / 3 + 1 / 2), run_df=run_df,
    )  # fmt: skip
    assert found.level == 0.05
    assert found.detectable_drop == pytest.approx(expected, rel=1e-12)
    # Above the old Welch-Satterthwaite figure, which took B as known.
    within = float(np.var(diff, ddof=1)) / N
    run_variance = b * (1 / 3 + 1 / 2)
    se = math.sqrt(within + run_variance)
    df = (within + run_variance) ** 2 / (within**2 / (N - 1) + run_variance**2 / run_df)
    c = STUDENT.isf(0.05, math.floor(df))
    welch = se * (c + NORMAL.isf(0.2) * math.sqrt(1 + c * c / (2 * df)))
    assert found.detectable_drop is not None
    assert found.detectable_drop > welch


def noisy_t_reference(diff: np.ndarray, run_variance: float, run_df: int) -> tuple[float, float]:
    """(p_drop, Welch-Satterthwaite df) of the paired t-test with run-wide noise."""
    n = diff.size
    within = float(np.var(diff, ddof=1)) / n
    variance = within + run_variance
    df = variance**2 / (within**2 / (n - 1) + run_variance**2 / run_df)
    t = float(diff.mean()) / math.sqrt(variance)
    return float(STUDENT.cdf(t, math.floor(df))), df


def test_with_little_run_noise_the_degrees_of_freedom_are_the_queries() -> None:
    # Runs that differ by 1e-4 while queries differ by 0.1: df just above n - 1, so the
    # test is Student's with n - 1 = 11 degrees of freedom, as the plain paired t-test.
    rng = np.random.default_rng(7)
    base = rng.random(N)
    change = rng.normal(-0.02, 0.1, N)
    reference = [{"m": base + 1e-4 * i} for i in range(3)]
    current = [{"m": base + change + 1e-4 * i} for i in range(2)]
    found = check(reference, current, "t")
    b, run_df = pooled(reference, current)
    diff = mean_of(current)["m"] - mean_of(reference)["m"]
    p, df = noisy_t_reference(diff, b * (1 / 3 + 1 / 2), run_df)
    assert N - 1 < df < N
    assert found.p_value == pytest.approx(p, rel=1e-9, abs=0)


@pytest.mark.parametrize(("seed", "whole_df"), [(5, 3), (9, 1)])
def test_the_noisy_t_test_of_two_queries_still_counts_their_variance(
    seed: int, whole_df: int
) -> None:
    # Seed 9: the two queries' own variance outweighs the runs' (by 15 times), so their one
    # degree of freedom pulls Welch-Satterthwaite's df down to 1.
    reference, current = runs(seed, 3, 0.0), runs(seed, 2, -0.05)
    rows = np.array([2, 7])
    found = compare(
        mean_of(reference),
        mean_of(current),
        {"all": np.arange(N), "pair": rows},
        {"m": Threshold(max_drop=MAX_DROP)},
        {},
        ComparisonSettings(test="t"),
        runs=(reference, current),
    )
    pair = next(c for c in found if c.slice == "pair")
    halves = [[{"m": run["m"][rows]} for run in side] for side in (reference, current)]
    b, run_df = pooled(*halves)
    diff = (mean_of(current)["m"] - mean_of(reference)["m"])[rows]
    p, df = noisy_t_reference(diff, b * (1 / 3 + 1 / 2), run_df)
    assert math.floor(df) == whole_df
    assert pair.p_value == pytest.approx(p, rel=1e-9, abs=0)


@pytest.mark.parametrize(("reference_runs", "current_runs", "df"), [(1, 2, 1), (2, 3, 3)])
def test_the_noisy_t_test_of_one_query_is_the_run_noise_s_alone(
    reference_runs: int, current_runs: int, df: int
) -> None:
    # No per-query variance to estimate: t = delta / sqrt(run variance), Student's with the
    # runs' degrees of freedom (1 and 3 here).
    reference, current = runs(6, reference_runs, 0.0), runs(6, current_runs, -0.05)
    found = compare(
        mean_of(reference),
        mean_of(current),
        {"all": np.arange(N), "one": np.array([4])},
        {"m": Threshold(max_drop=MAX_DROP)},
        {},
        ComparisonSettings(test="t"),
        runs=(reference, current),
    )
    one = next(c for c in found if c.slice == "one")
    b, run_df = pooled(*[[{"m": run["m"][[4]]} for run in side] for side in (reference, current)])
    assert run_df == df
    delta = float(mean_of(current)["m"][4] - mean_of(reference)["m"][4])
    variance = b * (1 / reference_runs + 1 / current_runs)
    expected = STUDENT.cdf(delta / math.sqrt(variance), run_df)
    assert one.p_value == pytest.approx(expected, rel=1e-9, abs=0)


def test_a_query_one_run_left_undefined_takes_its_mean_over_the_runs_that_define_it() -> None:
    # auc of query 1 is undefined in the first run: there it counts as 0.4, the second's.
    first = {"auc": np.array([0.5, np.nan, 0.7, 0.8])}
    second = {"auc": np.array([0.6, 0.4, 0.7, 0.8])}
    spread, df = run_spread(((first, second), ()), "auc", np.arange(4))  # type: ignore[misc]
    # Run means 0.6 and 0.625: their sd is 0.025 / sqrt(2), on 1 degree of freedom.
    assert (spread, df) == (pytest.approx(0.025 / math.sqrt(2.0), rel=1e-12), 1)


def test_a_check_of_no_queries_has_no_run_noise_and_takes_no_mean_of_nothing() -> None:
    # Warnings are errors here: a mean of an empty slice would fail the test.
    reference, current = runs(1, 3, 0.0), runs(2, 2, 0.0)
    empty = np.zeros(0, dtype=np.int64)
    assert run_spread((reference, current), "m", empty) is None
    found = compare(
        mean_of(reference),
        mean_of(current),
        {"all": np.arange(N), "none": empty},
        {"m": Threshold(max_drop=MAX_DROP)},
        {},
        ComparisonSettings(),
        runs=(reference, current),
    )
    (none,) = [c for c in found if c.slice == "none"]
    assert (none.n, none.reason, none.run_sd) == (0, "no queries", None)


def test_a_query_no_run_defines_moves_no_run_s_mean() -> None:
    # Query 1 is undefined in both runs: it adds the same 0 to each run's mean, so the spread
    # is that of the runs with any one value there.
    first = {"auc": np.array([0.5, np.nan, 0.7, 0.8])}
    second = {"auc": np.array([0.6, np.nan, 0.7, 0.8])}
    spread, df = run_spread(((first, second), ()), "auc", np.arange(4))  # type: ignore[misc]
    # Run means 2.0 / 4 and 2.1 / 4: their sd is 0.025 / sqrt(2), on 1 degree of freedom.
    assert (spread, df) == (pytest.approx(0.025 / math.sqrt(2.0), rel=1e-12), 1)


def test_runs_whose_means_spread_by_eps_or_less_agree() -> None:
    # Two runs of one query, 0 and x: their sd is x / sqrt(2), exactly EPS = 1e-12 here; the
    # next float up is past it. Float sums' last bits are not noise.
    at = 1.4142135623730952e-12
    assert math.sqrt(np.square(np.array([0.0, at]) - at / 2).sum()) == 1e-12
    one = np.arange(1)
    assert run_spread((({"m": np.zeros(1)}, {"m": np.array([at])}),), "m", one) is None
    past = np.nextafter(at, 1.0)
    spread, df = run_spread((({"m": np.zeros(1)}, {"m": np.array([past])}),), "m", one) or (0, 0)
    assert spread > 1e-12
    assert df == 1
