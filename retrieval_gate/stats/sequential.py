"""Group-sequential evidence of a drop: t statistics at planned looks, with their bounds."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from retrieval_gate.core.ids import FloatArray
from retrieval_gate.stats.significance import t_quantile

LOOKS = ((0.35, 0.15), (0.5, 0.45), (0.65, 0.2), (0.8, 0.2))
"""The planned looks: (share of the labelled set run, share of a check's level spent there).
Most is spent at half, where a drop of twice max_drop first has a chance to show; the later
looks catch smaller drops (bench_sequential; a pilot of 80 trials a generator chose these over
a look at half alone, equal thirds at 0.3/0.5/0.7, and every tenth from 0.2 to 0.8)."""
MIN_SIDE = 30
"""Queries a look needs on each side, run and not yet run: the t bounds take both means as
near normal (and a slice of fewer than 60 queries waits for the full set)."""


def drop_t(deltas: FloatArray, null_drop: float, *, population: int | None = None) -> float:
    """The t statistic of the mean drop (minus the mean of `deltas`, current minus baseline)
    past `null_drop`: large when the drop is past it.

    `population`: the deltas are the first ones drawn, without replacement and in uniformly
    random order, from a set of that many, and the drop is the set's: the standard error
    shrinks by the finite-population correction sqrt(1 - n / population), since the set's
    mean is partly known. None: the deltas are a sample of an unbounded population.
    Deltas that do not vary give +-inf (0 exactly at the null)."""
    x = np.asarray(deltas, dtype=np.float64)
    n = x.size
    if population is not None and n > population:
        raise ValueError(f"{n} deltas cannot be drawn from a set of {population}")
    gap = -float(np.mean(x)) - null_drop
    spread = float(np.std(x, ddof=1))
    shrink = 1.0 if population is None else 1.0 - n / population
    error = spread * math.sqrt(shrink / n)
    if error <= 0.0:
        return 0.0 if gap == 0.0 else math.copysign(math.inf, gap)
    return gap / error


@lru_cache(maxsize=4096)
def bound(level: float, queries: int) -> float:
    """The t a statistic of `queries` deltas must reach to reject at `level` (one-sided): the
    Student quantile with queries - 1 degrees of freedom, heavier-tailed than the normal's."""
    return t_quantile(1.0 - level, queries - 1)
