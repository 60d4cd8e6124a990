"""What a check can see: P(it fails) at a true drop, its detectable drop, the queries it needs."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from retrieval_gate.stats.normal_tail import normal_tails
from retrieval_gate.stats.run_shift import bars_exist, shifted_bars
from retrieval_gate.stats.saddlepoint import SADDLEPOINT_FROM
from retrieval_gate.stats.significance import normal_cdf, normal_quantile

LEAN = 2.0
"""Under significant-drop and evidence-of-excess, a check past its threshold without the
evidence to fail is "inconclusive" only when its adjusted p-value is within LEAN x alpha: the
data lean towards the drop. Without that lean its estimate is within the noise of a check that
could not have shown a drop of its threshold's size, and it passes (its row says what it can
detect). The family's chance of showing any inconclusive or failing check when nothing changed
stays within LEAN x alpha (0.10 at alpha 0.05), where an estimate past the threshold alone
showed one in most unchanged runs of a sliced gate."""

POWER = 0.8
"""The power at which a check's detectable drop is stated."""
TARGET = 1.5
""""Needs N queries" is the size at which a check detects 1.5 times its threshold: at exactly
its threshold no rule that reads the estimate can reach more than 50%."""
OPERATING = (0.0, 0.5, 1.0, TARGET, 2.0)
"""The true drops, as multiples of a check's max_drop, at which its P(fail) is stated (by
`power`, lint and every report): its operating characteristic, from its own false alarm
when nothing changed to the catch of twice the drop."""
_MAX_QUERIES = 10**9
_SLACK = 1e-9
"""Relative slack of the comparisons with TARGET x max_drop, past float rounding."""


def short_of_target(detectable: float | None, max_drop: float) -> bool:
    """Whether a check with this detectable drop (None: it can catch none) misses TARGET x
    `max_drop` with the power it was computed at: the one test behind every "too few queries"
    and "cannot catch 1.5x max_drop" statement, as `queries_needed` is for "needs N queries"."""
    return detectable is None or detectable > TARGET * max_drop * (1 + _SLACK)


def stated_points(drop: float, max_drop: float, scale: float = 100.0) -> str:
    """A detectable drop as the points it is stated in, to 0.1, on the side of TARGET x
    `max_drop` it is on: a drop that misses the goal is never printed as small as it
    ("detects 4.6 pt ..., needs 240 queries for 4.5 pt", not "detects 4.5 pt"), one that
    reaches it never printed past it. `scale` 1 states a column in its own units."""
    points = drop * scale
    goal = TARGET * max_drop * scale
    shown = f"{points:.1f}"
    if short_of_target(drop, max_drop) and float(shown) <= goal:
        shown = f"{math.floor(goal * 10 + 1e-9) / 10 + 0.1:.1f}"
    elif not short_of_target(drop, max_drop) and float(shown) > goal:
        shown = f"{math.floor(points * 10) / 10:.1f}"
    return shown


def stated_chance(p: float, power: float = POWER) -> float:
    """`p` rounded to the whole percent it is stated with, but under `power` when `p` is: a
    check short of the power is never printed as reaching it (0.797 is 79%, not 80%)."""
    shown = float(f"{p * 100:.0f}") / 100  # as f"{p:.0%}" rounds it
    if p < power <= shown:
        return (math.ceil(power * 100) - 1) / 100
    return shown


def critical_t(n: int, level: float, *, resamples: int, t_test: bool = False) -> float:
    """The t statistic of the mean drop past which the one-sided test at `level` rejects.

    The sign-flip test compares S / sqrt(sum d^2) with the normal quantile z, which is the t
    statistic past z sqrt((n - 1) / (n - z^2)). When the Monte Carlo resolution
    1 / (resamples + 1) is above `level`, only Hoeffding's bound can reject: z becomes
    sqrt(2 ln(1 / level)), unless n reaches the saddlepoint's size, which has no resolution.
    Infinite when n queries cannot reach `level` at all.
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
    elif (resamples + 1) * level < 1 and n < SADDLEPOINT_FROM:
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
    rule: str = "significant-drop",
    on_inconclusive: str = "pass",
) -> float:
    """P(a check fails) when the true mean drop is `drop` (points on the metric's scale), under
    the gate's `rule` (`gate.verdicts.RULES`): significant-drop fails when the estimate is
    past `max_drop` and the one-sided test against no change rejects at `level`;
    evidence-of-excess when the test against a drop of `max_drop` rejects; non-inferiority
    fails when its test that the drop is within `max_drop` does not reject, if
    `on_inconclusive` is "fail" (else only on evidence of excess). Under the other two rules
    `on_inconclusive: fail` also fails a check whose test leans (rejects at LEAN x level).
    `level` None: the gate does not require significance, and the estimate alone decides.

    Normal approximations with `sd` the per-query sd of the paired differences; the test's
    side uses the noncentral t's normal approximation. `run_variance` is the variance
    run-wide noise adds to the mean delta, estimated with `run_df` degrees of freedom
    (repeated runs)."""
    if n < 1:
        return 0.0
    if sd <= 0 and run_variance <= 0:
        return 1.0 if drop > max_drop else 0.0
    se = math.sqrt(sd * sd / n + run_variance)
    past = normal_cdf((drop - max_drop) / se)
    if level is None:
        return past
    closed = fails_closed(rule, on_inconclusive)
    if run_variance > 0 and run_df and n >= 2:
        level = _rule_level(level, rule, on_inconclusive)
        if not bars_exist(n, level, t_test=t_test):
            return 1.0 if closed else 0.0
        bars = shifted_bars(sd, n, run_variance, run_df, level, t_test)
        return _shifted_chance(
            drop, se=se, n=n, bars=bars, max_drop=max_drop, rule=rule, closed=closed
        )
    bar = _rule_bar(n, level, rule, on_inconclusive, resamples, t_test)
    if bar is None:
        return 1.0 if closed else 0.0
    c, spread = bar
    if rule == "significant-drop":
        return min(past, normal_cdf((drop / se - c) / spread))
    if closed:
        return 1.0 - normal_cdf(((max_drop - drop) / se - c) / spread)
    return normal_cdf(((drop - max_drop) / se - c) / spread)


def operating_characteristic(
    rule: Mapping[str, Any], n: int, power: float, widest: float | None = None
) -> tuple[float | None, tuple[float, ...] | None]:
    """A check's detectable drop with `power` and its P(fail) at OPERATING x max_drop, under
    `rule` (`fail_probability`'s keywords but the drop and n); no P(fail) without spread.

    Both are stated at the level that makes them the least the check does: a test that fails
    the check by rejecting gets at least its own level (when it alone moves; weighted Holm
    gives it more as others reject first), so at that level; a check failing closed fails when
    its test does not reject, so at `widest`, the most the correction can give it (every
    other check shown within its margin first)."""
    level = rule["level"]
    if (
        widest is not None
        and level is not None
        and fails_closed(rule["rule"], rule["on_inconclusive"])
    ):
        rule = {**rule, "level": max(level, widest)}
    detectable = detectable_drop(n=n, power=power, **rule)
    if not (rule["sd"] > 0 or rule.get("run_variance", 0.0) > 0):
        return detectable, None
    max_drop = rule["max_drop"]
    return detectable, tuple(fail_probability(m * max_drop, n=n, **rule) for m in OPERATING)


def fails_closed(rule: str, on_inconclusive: str) -> bool:
    """Whether a check fails unless shown within its threshold (non-inferiority failing
    closed): every drop is then caught, and passing is what takes queries."""
    return rule == "non-inferiority" and on_inconclusive == "fail"


def _rule_bar(
    n: int, level: float, rule: str, on_inconclusive: str, resamples: int, t_test: bool
) -> tuple[float, float] | None:
    """`_test_bar` at the level the rule's deciding test is held to (`_rule_level`)."""
    level = _rule_level(level, rule, on_inconclusive)
    return _test_bar(n, level, resamples=resamples, t_test=t_test)


def _rule_level(level: float, rule: str, on_inconclusive: str) -> float:
    """The level the rule's deciding test is held to: LEAN x `level` when a lean fails too
    (on_inconclusive: fail under the other two rules)."""
    if on_inconclusive == "fail" and rule != "non-inferiority":
        return min(level * LEAN, 0.999)
    return level


def _shifted_chance(
    drop: float,
    *,
    se: float,
    n: int,
    bars: tuple[tuple[float, ...], tuple[float, ...]],
    max_drop: float,
    rule: str,
    closed: bool,
) -> float:
    """P(fail) at a true mean drop `drop` under run-wide noise: the measured mean varies by
    `se` (per-query and run-wide noise), and the test's bar (`run_shift.shifted_bars`) by
    what the repeats estimate of the run-wide part; averaged over those estimates. Each bar
    also moves with the per-query sd the differences show, by bar / sqrt(2 (n - 1)) at most
    (the bar is proportional to it at most), added as with no run-wide noise."""
    bar, weights = (np.asarray(v) for v in bars)
    spread = np.sqrt(se * se + bar * bar / (2.0 * (n - 1)))
    if rule == "significant-drop":
        past = normal_cdf((drop - max_drop) / se)
        return float(np.minimum(past, 1.0 - normal_tails((drop - bar) / spread)) @ weights)
    if closed:
        return float(normal_tails((max_drop - drop - bar) / spread) @ weights)
    return float((1.0 - normal_tails((drop - max_drop - bar) / spread)) @ weights)


def _shifted_detectable(
    power: float,
    *,
    se: float,
    n: int,
    bars: tuple[tuple[float, ...], tuple[float, ...]],
    max_drop: float,
    rule: str,
    closed: bool,
) -> float:
    """The true drop at which `_shifted_chance` reaches `power` (failing closed: 0 when even
    no drop fails that often), by bisection: it rises with the drop."""

    def chance(drop: float) -> float:
        return _shifted_chance(
            drop, se=se, n=n, bars=bars, max_drop=max_drop, rule=rule, closed=closed
        )

    if closed and chance(0.0) >= power:
        return 0.0
    low = 0.0
    high = max_drop + max(bars[0]) + 40.0 * math.sqrt(se * se + max(bars[0]) ** 2 / (2.0 * (n - 1)))
    for _ in range(200):
        middle = (low + high) / 2.0
        if chance(middle) >= power:
            high = middle
        else:
            low = middle
        if high - low <= 1e-13 * high:
            break
    return high


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
    rule: str = "significant-drop",
    on_inconclusive: str = "pass",
) -> float | None:
    """The true drop a check catches with `power` (the inverse of `fail_probability`); None
    when it can catch none (too few queries for its level) or when `sd` is 0 (differences
    without variation say nothing about the spread of the next change). A non-inferiority
    check that fails closed and cannot show any drop within max_drop catches every drop: 0."""
    if n < 1 or not sd > 0:
        return None
    se = math.sqrt(sd * sd / n + run_variance)
    z = normal_quantile(power)
    past = max_drop + z * se
    if level is None:
        return past
    closed = fails_closed(rule, on_inconclusive)
    if run_variance > 0 and run_df and n >= 2:
        level = _rule_level(level, rule, on_inconclusive)
        if not bars_exist(n, level, t_test=t_test):
            return 0.0 if closed else None
        bars = shifted_bars(sd, n, run_variance, run_df, level, t_test)
        return _shifted_detectable(
            power, se=se, n=n, bars=bars, max_drop=max_drop, rule=rule, closed=closed
        )
    bar = _rule_bar(n, level, rule, on_inconclusive, resamples, t_test)
    if bar is None:
        return 0.0 if closed else None
    c, spread = bar
    if rule == "significant-drop":
        return max(past, se * (c + z * spread))
    if closed:
        return max(0.0, max_drop - se * (c - z * spread))
    return max_drop + se * (c + z * spread)


def _test_bar(n: int, level: float, *, resamples: int, t_test: bool) -> tuple[float, float] | None:
    """The t statistic the test must pass, and the sd of the t statistic around its
    noncentrality (the noncentral t's normal approximation); None when it cannot pass.
    Without run-wide noise: with it, `run_shift.shifted_bars`."""
    c = critical_t(n, level, resamples=resamples, t_test=t_test)
    if math.isinf(c):
        return None
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
    rule: str = "significant-drop",
    on_inconclusive: str = "pass",
) -> int | None:
    """The fewest queries with which a check detects TARGET x `max_drop` with `power` (failing
    closed under non-inferiority: with which it passes an unchanged retriever with `power`);
    None without a positive max_drop or without variation."""
    if not max_drop > 0 or not sd > 0:
        return None

    def enough(n: int) -> bool:
        if fails_closed(rule, on_inconclusive):
            # Failing closed, every drop is caught; what takes queries is passing an
            # unchanged retriever with `power`.
            chance = fail_probability(
                0.0, sd=sd, n=n, level=level, max_drop=max_drop, resamples=resamples,
                t_test=t_test, run_variance=run_variance, run_df=run_df, rule=rule,
                on_inconclusive=on_inconclusive,
            )  # fmt: skip
            return chance <= 1.0 - power
        found = detectable_drop(
            sd=sd, n=n, level=level, max_drop=max_drop, resamples=resamples, t_test=t_test,
            power=power, run_variance=run_variance, run_df=run_df, rule=rule,
            on_inconclusive=on_inconclusive,
        )  # fmt: skip
        return not short_of_target(found, max_drop)

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
