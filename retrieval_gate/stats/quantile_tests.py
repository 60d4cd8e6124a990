"""A paired test of a quantile's change: the two sides of each query swapped at random."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from retrieval_gate.core.ids import FloatArray, IntArray

# Swap draws are made this many cells (draws x queries) at a time: memory stays bounded (a few
# tens of MB of float64) whatever the number of queries and resamples. It also sets the sizes
# of the random draws: changing it changes every seeded p-value.
_CHUNK_CELLS = 500_000
# Quantile differences equal in exact arithmetic count as ties at this relative tolerance.
_TIE_TOLERANCE = 1e-12


@dataclass(frozen=True, kw_only=True)
class QuantileChange:
    """A paired test of `quantile(current) - quantile(reference)` over the measured pairs."""

    reference: float
    """The reference side's quantile (nan without pairs)."""
    current: float
    delta: float
    """current - reference, in the values' unit."""
    p_increase: float
    """P(a difference this high or higher | the sides are exchangeable within each query):
    the evidence of an increase."""
    p_decrease: float
    """P(a difference this low or lower | the same)."""
    n: int
    """Pairs measured on both sides (a pair with a nan on either side is left out)."""


def quantile_change(
    reference: FloatArray,
    current: FloatArray,
    q: float,
    *,
    resamples: int,
    rng: np.random.Generator,
    blocks: IntArray | None = None,
) -> QuantileChange:
    """The change of the `q` quantile (numpy's linear interpolation) from `reference` to
    `current`, paired by position, with both one-sided Monte Carlo p-values of a swap test.

    Why this test: under "nothing changed", the two measurements of one query (taken close
    together in time, interleaved) are exchangeable, so swapping them at random gives the
    exact null distribution of any statistic, the quantile difference included; the Monte
    Carlo p-value (1 + draws at least as extreme) / (1 + resamples) is valid at any sample
    size. A paired bootstrap of a tail quantile is only approximately calibrated, and poorly
    at 95% and above with a hundred queries. The exchangeability is what interleaving buys:
    sides measured one after the other under changing machine load are not exchangeable, and
    the test then sees the load, not the change (benchmarks/simulations/bench_latency.py
    measures both).
    Pairs with a nan on either side (not measured: cached, warm-up, failed) are left out.

    `blocks` (one integer per pair) names the turns the sides were measured in: queries run
    in one turn, which side went first decided by a coin, swap together, since a change of
    machine load between the two sides' turns moves every query of the turn alike (swapping
    them one by one would take those shared moves for independent evidence). None: every
    pair is its own turn.
    """
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must be within [0, 1], got {q}")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    ref = np.asarray(reference, dtype=np.float64)
    cur = np.asarray(current, dtype=np.float64)
    if ref.shape != cur.shape or ref.ndim != 1:
        raise ValueError(f"expected two vectors of one length, got {ref.shape} and {cur.shape}")
    both = ~(np.isnan(ref) | np.isnan(cur))
    ref, cur = ref[both], cur[both]
    n = int(ref.size)
    if blocks is None:
        turn = np.arange(n)
    else:
        given = np.asarray(blocks)
        if given.shape != both.shape:
            raise ValueError(f"expected one block per pair, got shape {given.shape}")
        turn = np.unique(given[both], return_inverse=True)[1].reshape(-1)
    if n == 0:
        return QuantileChange(
            reference=math.nan,
            current=math.nan,
            delta=math.nan,
            p_increase=1.0,
            p_decrease=1.0,
            n=0,
        )
    turns = int(turn.max()) + 1
    base, now = float(np.quantile(ref, q)), float(np.quantile(cur, q))
    observed = now - base
    scale = max(float(np.abs(ref).max()), float(np.abs(cur).max()), 1e-300)
    tolerance = _TIE_TOLERANCE * scale
    higher = lower = 0
    step = max(1, _CHUNK_CELLS // n)
    for start in range(0, resamples, step):
        size = min(step, resamples - start)
        swap = (rng.random((size, turns)) < 0.5)[:, turn]
        first = np.where(swap, cur, ref)
        second = np.where(swap, ref, cur)
        drawn = np.quantile(second, q, axis=1) - np.quantile(first, q, axis=1)
        higher += int(np.count_nonzero(drawn >= observed - tolerance))
        lower += int(np.count_nonzero(drawn <= observed + tolerance))
    return QuantileChange(
        reference=base,
        current=now,
        delta=observed,
        p_increase=(1 + higher) / (1 + resamples),
        p_decrease=(1 + lower) / (1 + resamples),
        n=n,
    )
