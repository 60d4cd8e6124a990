"""What a check can see: P(it fails) at a true drop, its detectable drop, the queries it needs."""

from __future__ import annotations

import math

from retrieval_gate.stats.significance import normal_cdf, normal_quantile, t_quantile

POWER = 0.8
"""The power at which a check's detectable drop is stated."""
TARGET = 1.5
""""Needs N queries" is the size at which a check detects 1.5 times its threshold: at exactly
its threshold no rule that reads the estimate can reach more than 50%."""
_MAX_QUERIES = 10**9


def critical_t(n: int, level: float, *, resamples: int, t_test: bool = False) -> float:
    """The t statistic of the mean drop past which the one-sided test at `level` rejects.

    The sign-flip test compares S / sqrt(sum d^2) with the normal quantile z, which is the t
    statistic past z sqrt((n - 1) / (n - z^2)). When the Monte Carlo resolution
    1 / (resamples + 1) is above `level`, only Hoeffding's bound can reject: z becomes
    sqrt(2 ln(1 / level)). Infinite when n queries cannot reach `level` at all.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be within (0, 1), got {level}")
    if n < 2:
        return math.inf
    # Below 1e-12, 1 - level loses digits (and rounds to 1 below 1e-17): the lower quantile,
    # by symmetry, keeps them.
    z = normal_quantile(1.0 - level) if level > 1e-12 else -normal_quantile(level)
    if t_test:
        # Cornish-Fisher expansion of Student's t quantile (no scipy on the check path).
        nu = n - 1
        return (
            z
            + (z**3 + z) / (4 * nu)
            + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * nu**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * nu**3)
        )
    if n < 63 and (1 << n) <= resamples:
        if 2.0**-n > level:
            return math.inf
    elif (resamples + 1) * level < 1:
        z = math.sqrt(2.0 * math.log(1.0 / level))
    if n <= z * z:
        return math.inf
    return z * math.sqrt((n - 1) / (n - z * z))


def fail_probability(
    drop: float,
    *,
    sd: float,
    n: int,
    level: float | None,
    max_drop: float,
    resamples: int,
    t_test: bool = False,
    run_variance: float = 0.0,
    run_df: int | None = None,
) -> float:
    """P(a check fails) when the true mean drop is `drop` (points on the metric's scale): the
    estimate must be past `max_drop` and the one-sided test reject at `level` (None: the gate
    does not require significance). Normal approximations with `sd` the per-query sd of the
    paired differences; the test's side uses the noncentral t's normal approximation.
    `run_variance` is the variance run-wide noise adds to the mean delta, estimated with
    `run_df` degrees of freedom (repeated runs)."""
    if n < 1:
        return 0.0
    if sd <= 0 and run_variance <= 0:
        return 1.0 if drop > max_drop else 0.0
    se = math.sqrt(sd * sd / n + run_variance)
    past = normal_cdf((drop - max_drop) / se)
    if level is None:
        return past
    bar = _test_bar(n, level, resamples=resamples, t_test=t_test, noise=(sd, run_variance, run_df))
    if bar is None:
        return 0.0
    c, spread = bar
    return min(past, normal_cdf((drop / se - c) / spread))


def detectable_drop(
    *,
    sd: float,
    n: int,
    level: float | None,
    max_drop: float,
    resamples: int,
    t_test: bool = False,
    power: float = POWER,
    run_variance: float = 0.0,
    run_df: int | None = None,
) -> float | None:
    """The true drop a check catches with `power` (the inverse of `fail_probability`); None
    when it can catch none (too few queries for its level) or when `sd` is 0 (differences
    without variation say nothing about the spread of the next change)."""
    if n < 1 or not sd > 0:
        return None
    se = math.sqrt(sd * sd / n + run_variance)
    z = normal_quantile(power)
    past = max_drop + z * se
    if level is None:
        return past
    bar = _test_bar(n, level, resamples=resamples, t_test=t_test, noise=(sd, run_variance, run_df))
    if bar is None:
        return None
    c, spread = bar
    return max(past, se * (c + z * spread))


def _test_bar(
    n: int,
    level: float,
    *,
    resamples: int,
    t_test: bool,
    noise: tuple[float, float, int | None] = (0.0, 0.0, None),
) -> tuple[float, float] | None:
    """The t statistic the test must pass, and the sd of the t statistic around its
    noncentrality (the noncentral t's normal approximation); None when it cannot pass.

    With run-wide noise (`noise`: per-query sd, the variance it adds to the mean, and its
    degrees of freedom) the statistic's variance is estimated with Welch-Satterthwaite's
    degrees of freedom, and its critical value is Student's."""
    c = critical_t(n, level, resamples=resamples, t_test=t_test)
    if math.isinf(c):
        return None
    sd, run_variance, run_df = noise
    if run_variance > 0 and run_df:
        within = sd * sd / n
        df = (within + run_variance) ** 2 / (
            (within**2 / (n - 1) if n > 1 else 0.0) + run_variance**2 / run_df
        )
        c = max(c, t_quantile(1.0 - level, df))
        return c, math.sqrt(1.0 + c * c / (2.0 * df))
    return c, math.sqrt(1.0 + c * c / (2.0 * (n - 1)))


def queries_needed(
    *,
    sd: float,
    level: float | None,
    max_drop: float,
    resamples: int,
    t_test: bool = False,
    power: float = POWER,
    run_variance: float = 0.0,
    run_df: int | None = None,
) -> int | None:
    """The fewest queries with which a check detects TARGET x `max_drop` with `power`; None
    without a positive max_drop or without variation."""
    if not max_drop > 0 or not sd > 0:
        return None
    goal = TARGET * max_drop

    def enough(n: int) -> bool:
        found = detectable_drop(
            sd=sd, n=n, level=level, max_drop=max_drop, resamples=resamples, t_test=t_test,
            power=power, run_variance=run_variance, run_df=run_df,
        )  # fmt: skip
        return found is not None and found <= goal * (1 + 1e-12)

    if not enough(_MAX_QUERIES):
        return None
    low, high = 1, _MAX_QUERIES
    while low < high:
        middle = (low + high) // 2
        if enough(middle):
            high = middle
        else:
            low = middle + 1
    return low
