"""The drift's evidence: self-normalized e-values of per-query drops, and the e-detector bar."""

from __future__ import annotations

import math

import numpy as np

from retrieval_gate.core.ids import FloatArray


def log_e_values(drops: FloatArray, log_bar: float) -> FloatArray:
    """log E of each row of `drops` against H0 "each query's drop is symmetric about 0" (no
    change), the null of the gate's sign-flip test, with the bet that reaches `log_bar` at
    the smallest sum. A row holds one comparison's drops, reference minus current, one per
    query; NaN and infinities are left out.

    E = prod_i exp(b x_i - b^2 x_i^2 / 2) with b = sqrt(2 log_bar / sum x_i^2). Given the
    sizes |x_i|, under H0 each factor's expectation is cosh(b x_i) exp(-b^2 x_i^2 / 2) <= 1
    (cosh y <= exp(y^2 / 2)), and b depends on the sizes alone: with the queries' signs
    independent, E[E] <= 1 whatever the size or spread of the drops, an exact e-value (de la
    Pena's self-normalized bound). log E = a z - a^2 / 2 with a = sqrt(2 log_bar) and
    z = sum x_i / sqrt(sum x_i^2): E reaches the bar exactly when z >= a, and
    P(z >= a) <= exp(-a^2 / 2) (Markov) for any number of queries.
    """
    rows = np.atleast_2d(np.asarray(drops, dtype=np.float64))
    x = np.where(np.isfinite(rows), rows, 0.0)  # a factor of exactly 1: left out
    total, squares = x.sum(axis=1), (x * x).sum(axis=1)
    z = np.divide(total, np.sqrt(squares), out=np.zeros_like(total), where=squares > 0)
    a = math.sqrt(2.0 * log_bar)
    # No differences at all: no bet, E = 1.
    return np.asarray(np.where(squares > 0, a * z - log_bar, 0.0), dtype=np.float64)


def reaches(n: int, log_bar: float) -> bool:
    """Whether n queries can reach the bar at all: z is at most sqrt(n), every query
    dropping alike, so n >= 2 log_bar."""
    return math.sqrt(n) >= math.sqrt(2.0 * log_bar)


def log_bar(horizon: int, level: float) -> float:
    """log of the e-detector's bar for a check given `level` of alpha: horizon / level.

    A CUSUM e-detector (Shin, Ramdas and Rinaldo) trips when its statistic reaches c. When
    the statistic is the largest, over start points, of products of e-values that are valid
    given the past, M_t - t is dominated by a supermartingale, so P(a false trip within t
    looks) <= t / c (Ville) and the average run length without a change is >= c. With
    c = horizon / level: at most `level` within the horizon.
    """
    return math.log(horizon / level)
