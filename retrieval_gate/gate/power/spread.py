"""Where `power` takes the sd of per-query differences from, and what a drop's shape does to it."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from retrieval_gate.core.ids import FloatArray, IntArray
from retrieval_gate.stats.detectability import critical_t
from retrieval_gate.stats.significance import normal_cdf

Kind = Literal["run", "history", "repeats", "assumption"]
ASSUMED_CORRELATION = 0.5
"""The correlation of the two runs at which the baseline's sd is that of the differences."""
RANGE = (0.3, 0.9)
"""The correlations of two runs `power` assumes without data to read theirs from: each figure
is then stated as its range over them."""
CORRELATIONS = (0.3, 0.5, 0.7, 0.9)
"""The correlations whose figures are printed one by one: the range's ends and two between."""


def correlations_for(kind: Kind) -> tuple[float, ...]:
    """The correlations whose figures a check of a source of `kind` states: every one of them
    under the assumption (the range) and beside the repeats' noise floor; none beside
    differences measured on real changes."""
    return CORRELATIONS if kind in ("assumption", "repeats") else ()


SHARE = 0.1
"""The share of the queries that carries a concentrated drop."""
ASSUMPTION = (
    "before a change there are no paired differences, and no saved run, history or repeats to "
    f"read how two runs correlate from: the sd of the differences is taken as the baseline's sd "
    f"x sqrt(2 (1 - correlation)) for runs correlating {RANGE[0]:g} to {RANGE[1]:g}, and each "
    "figure is stated as its range over them; runs outside that range are not covered"
)


@dataclass(frozen=True, kw_only=True)
class RunCorrelation:
    """How the two sides of a source's pairs correlate query by query, on one check."""

    value: float
    """Pearson's correlation pooled over the pairs (their cross-products and squares summed,
    each pair about its own means)."""
    pairs: int
    """The pairs it rests on (those with 3 or more queries that vary on both sides)."""
    lowest: float
    highest: float
    """The range of the pairs' own correlations: how much merges differ in it."""


@dataclass(frozen=True, kw_only=True)
class DeltaSource:
    """Per-query differences between two real versions (or runs), one array per metric and
    pair, aligned with `query_ids`: where the sd of the next change's differences is read."""

    kind: Kind
    label: str
    """What the differences are, for the reader: a file, main's merges, the baseline's runs."""
    query_ids: tuple[str, ...]
    pairs: tuple[Mapping[str, FloatArray], ...]
    scale: float = 1.0
    """Multiplies the pooled sd: the repeats' run pairs stand for a mean of several runs."""
    sides: tuple[tuple[Mapping[str, FloatArray], Mapping[str, FloatArray]], ...] = ()
    """Each pair's two versions' scores (before, after), aligned with `query_ids`, whose
    difference `pairs` holds: what the correlation of the runs is read from."""

    def aligned(self, order: Sequence[str]) -> DeltaSource:
        """The same differences in the order of `order` (ids it lacks get NaN: left out)."""
        position = {query_id: i for i, query_id in enumerate(self.query_ids)}
        rows = np.array([position.get(query_id, -1) for query_id in order], dtype=np.int64)

        def moved(scores: Mapping[str, FloatArray]) -> dict[str, FloatArray]:
            return {
                metric: np.append(np.asarray(values, dtype=np.float64), np.nan)[rows]
                for metric, values in scores.items()
            }

        return DeltaSource(
            kind=self.kind,
            label=self.label,
            query_ids=tuple(order),
            pairs=tuple(moved(pair) for pair in self.pairs),
            scale=self.scale,
            sides=tuple((moved(before), moved(after)) for before, after in self.sides),
        )

    def correlation(self, metric: str, rows: IntArray) -> RunCorrelation | None:
        """How the pairs' two sides of `metric` correlate on `rows` (`RunCorrelation`); None
        without a pair of 3 or more queries that vary on both sides."""
        products = squares_before = squares_after = 0.0
        found = []
        for before, after in self.sides:
            if metric not in before or metric not in after:
                continue
            x, y = np.asarray(before[metric])[rows], np.asarray(after[metric])[rows]
            kept = np.isfinite(x) & np.isfinite(y)
            if np.count_nonzero(kept) < 3:
                continue
            x, y = x[kept], y[kept]
            # A constant side's centred values need not be exactly 0 in floating point
            # ([0.4] * 3 leaves 1e-33): only a side whose values differ varies.
            varies = np.ptp(x) > 0 and np.ptp(y) > 0
            x, y = x - x.mean(), y - y.mean()
            xx, yy, xy = float(x @ x), float(y @ y), float(x @ y)
            if varies and xx > 0 and yy > 0:
                products += xy
                squares_before += xx
                squares_after += yy
                found.append(xy / math.sqrt(xx * yy))
        if not found:
            return None
        value = products / math.sqrt(squares_before * squares_after)
        return RunCorrelation(value=value, pairs=len(found), lowest=min(found), highest=max(found))

    def sd(self, metric: str, rows: IntArray) -> float | None:
        """The pooled sd of the differences of `metric` on `rows` (each pair about its own
        mean: a pair's mean change is not spread); None with under 2 queries or no pair."""
        total = df = 0.0
        for pair in self.pairs:
            if metric not in pair:
                continue
            values = np.asarray(pair[metric])[rows]
            values = values[np.isfinite(values)]
            if values.size >= 2:
                total += float(values.var(ddof=1)) * (values.size - 1)
                df += values.size - 1
        return math.sqrt(total / df) * self.scale if df else None


def source_note(kind: Kind, label: str) -> str:
    """What the figures rest on, in a sentence, for the text and the JSON."""
    if kind == "run":
        return (
            f"the sd of the per-query differences between {label} and the baseline: the "
            "figures hold for a change that spreads like that one"
        )
    if kind == "history":
        return (
            f"the pooled sd of the per-query differences between {label}: the figures hold "
            "for a change that spreads like a typical merge"
        )
    if kind == "repeats":
        return (
            f"the sd of the per-query differences between {label}, runs of the unchanged "
            "retriever: the noise floor. A real change spreads more, so these detectable drops "
            "are lower bounds and these P(fail) upper bounds; the figures at other correlations "
            "below rest on the baseline's sd instead"
        )
    return ASSUMPTION


def correlated_sd(sd: float, correlation: float) -> float:
    """The sd of the differences of two runs with per-query sd `sd` each that correlate at
    `correlation`: sd sqrt(2 (1 - rho)), `sd` itself at 0.5."""
    return sd * math.sqrt(2.0 * (1.0 - correlation))


def concentrated_sd(sd: float, drop: float, share: float = SHARE) -> float:
    """The sd of the differences when a mean drop of `drop` is carried by `share` of the
    queries (each of them drops drop / share, the rest nothing) on top of differences with sd
    `sd`: the mixture adds drop^2 (1 - share) / share to their variance."""
    return math.sqrt(sd * sd + drop * drop * (1.0 - share) / share)


def concentrated_chance(
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
    share: float = SHARE,
) -> float:
    """P(a check fails) when `share` of its n queries carry a true mean drop of `drop` (the
    keywords are `fail_probability`'s). The measured mean drop varies as with an even drop,
    sd / sqrt(n), but the test divides it by the sd of the differences, which the mixture
    widens (`concentrated_sd`): the estimate reaches max_drop as often, the test rejects less.
    Normal approximations; the test's critical value is `critical_t`'s, and the sd of the
    statistic's denominator that of normal differences."""
    del run_df  # the critical value here does not widen with the repeats' degrees of freedom
    if n < 1:
        return 0.0
    measured = math.sqrt(sd * sd / n + run_variance)
    if measured <= 0:
        return 1.0 if drop > max_drop else 0.0
    past = normal_cdf((drop - max_drop) / measured)
    if level is None:
        return past
    c = critical_t(n, level, resamples=resamples, t_test=t_test)
    if math.isinf(c):
        return 0.0
    scale = math.sqrt(concentrated_sd(sd, drop, share) ** 2 / n + run_variance)
    # Rejects when mean > c * s / sqrt(n): the mean varies by `measured`, s by s / sqrt(2(n-1)).
    spread = math.sqrt(measured**2 + (c * scale) ** 2 / (2.0 * (n - 1)))
    return min(past, normal_cdf((drop - c * scale) / spread))


def concentrated_drop(common: Mapping[str, Any], n: int, power: float) -> float | None:
    """The true mean drop carried by SHARE of n queries that a check catches with `power`
    (`common`: `concentrated_chance`'s other keywords); None when none is: the queries cannot
    lose more than all of their score (a mean drop of SHARE), and a drop on few queries widens
    the differences almost as fast as it moves their mean."""

    def caught(drop: float) -> bool:
        return concentrated_chance(drop, n=n, **common) >= power

    if not caught(SHARE):
        return None
    low, high = 0.0, SHARE
    for _ in range(60):  # P(fail) grows with the drop: bisection to float precision
        middle = (low + high) / 2.0
        low, high = (low, middle) if caught(middle) else (middle, high)
    return high
