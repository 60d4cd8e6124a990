"""The run-to-run noise of a check, from each side's repeated runs."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from retrieval_gate.core.ids import FloatArray, IntArray
from retrieval_gate.gate.checks.verdicts import EPS

Runs = Sequence[Mapping[str, FloatArray]]
"""One side's repeated runs: each a metric -> per-query scores mapping."""


@dataclass(frozen=True, kw_only=True)
class RunNoise:
    """What repeated runs say about one check: the run-to-run sd of its mean, the variance of
    its mean delta that run-wide noise adds, and the degrees of freedom of that estimate."""

    spread: float
    variance: float
    df: int

    @classmethod
    def of(cls, spread: float, df: int, *, reference_runs: int, current_runs: int) -> RunNoise:
        """The noise of a mean delta of `reference_runs` and `current_runs` averaged runs:
        B (1/R_ref + 1/R_cur); with one side repeated, the other's share is taken as equal."""
        variance = spread**2 * (1.0 / reference_runs + 1.0 / current_runs)
        return cls(spread=spread, variance=variance, df=df)


def run_noise(runs: tuple[Runs, Runs], metric: str, rows: IntArray) -> RunNoise | None:
    """The run-to-run noise of one check from each side's repeated runs (None when neither
    side has two runs, or its runs agree exactly): `run_spread` over both sides, carried by
    the mean delta of their averaged runs (`RunNoise.of`)."""
    found = run_spread(runs, metric, rows)
    if found is None:
        return None
    return RunNoise.of(*found, reference_runs=len(runs[0]), current_runs=len(runs[1]))


def run_spread(sides: Sequence[Runs], metric: str, rows: IntArray) -> tuple[float, int] | None:
    """The sd of one check's mean between runs of one side, pooled over the `sides` with two
    or more runs, and its degrees of freedom (runs - 1 per side); None without repeats or
    when the runs agree exactly.

    B = spread^2 also holds per-query noise that the sign flips already see: counted twice,
    on the safe side. A query some runs leave undefined (NaN) takes, in those runs, its mean
    over the runs that define it, as the side's scores do (`mean_of_runs`)."""
    if not rows.size:  # no mean to take: numpy would warn of an empty slice
        return None
    squares = 0.0
    df = 0
    for side in sides:
        if len(side) < 2:
            continue
        values = np.asarray([run[metric][rows] for run in side], dtype=np.float64)
        missing = np.isnan(values)
        if missing.any():
            counts = np.maximum((~missing).sum(axis=0), 1)
            filled = np.where(missing, 0.0, values).sum(axis=0) / counts
            values = np.where(missing, filled, values)
        means = np.asarray([float(run.mean()) for run in values])
        squares += float(np.square(means - means.mean()).sum())
        df += len(side) - 1
    if not df:
        return None
    spread = math.sqrt(squares / df)
    return (spread, df) if spread > EPS else None
