"""Prediction-powered means (PPI++): few human labels, many judge labels, an honest interval."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from retrieval_gate.core.ids import FloatArray
from retrieval_gate.stats.significance import CI_LEVEL, t_quantile, t_tail


@dataclass(frozen=True, kw_only=True)
class PpiEstimate:
    """A prediction-powered mean: the estimate, its standard error and what made it."""

    estimate: float
    se: float
    lam: float
    """The weight of the judge's labels: 0 is the human-only mean, 1 classic PPI."""
    n: int
    """Units people labelled (the judge labelled them too)."""
    unlabelled: int
    """Units only the judge labelled."""
    df: float
    """Degrees of freedom of the t reference (Welch-Satterthwaite over both parts)."""

    @property
    def p_drop(self) -> float:
        """One-sided p-value of "the mean is not below 0"."""
        return self._tail(-1.0)

    @property
    def p_rise(self) -> float:
        """One-sided p-value of "the mean is not above 0"."""
        return self._tail(1.0)

    def interval(self, level: float = CI_LEVEL) -> tuple[float, float] | None:
        """The two-sided `level` interval (the one the one-sided tests invert); None below 2
        labelled units."""
        if self.n < 2:
            return None
        half = t_quantile(1.0 - (1.0 - level) / 2.0, self.df) * self.se
        return self.estimate - half, self.estimate + half

    def _tail(self, sign: float) -> float:
        if self.n < 2:
            return 1.0
        if self.se == 0.0:
            return 0.0 if sign * self.estimate > 0 else 1.0
        return t_tail(sign * self.estimate / self.se, self.df)


def ppi_mean(
    labelled: FloatArray,
    predicted: FloatArray,
    unlabelled: FloatArray,
    *,
    lam: float | None = None,
) -> PpiEstimate:
    """The PPI++ estimate of a population mean (Angelopoulos, Duchi, Zrnic 2023, "PPI++:
    Efficient Prediction-Powered Inference").

    `labelled[i]` is unit i's value under people's labels and `predicted[i]` under the judge's
    (the same n units); `unlabelled` holds the judge-only values of N other units, drawn from
    the same population. The estimate is

        theta = mean(labelled - lam * predicted) + lam * mean(unlabelled)

    unbiased for every fixed lam, with Var = var(Y - lam f) / n + lam^2 var(f_U) / N (the two
    samples are independent). `lam` None tunes it for the smallest variance,
    lam = cov(Y, f) / ((1 + n / N) var(f)), clipped to [0, 1]: 0 is the human-only mean (a
    useless judge costs nothing, asymptotically), 1 the plain PPI rectifier.

    The reference distribution is Student's t with Welch-Satterthwaite degrees of freedom
    over the two variance terms, not the normal: with 100-200 labelled units the labelled
    term dominates and its variance is estimated from n units, so t is the honest tail (with
    lam = 0 it is exactly the paired t-test on the labelled units);
    benchmarks/simulations/bench_ppi.py measures the coverage.
    """
    y = np.asarray(labelled, dtype=np.float64)
    f = np.asarray(predicted, dtype=np.float64)
    u = np.asarray(unlabelled, dtype=np.float64)
    if y.ndim != 1 or f.shape != y.shape or u.ndim != 1:
        raise ValueError("ppi_mean needs labelled and predicted of one length, and a 1-d sample")
    n, big_n = int(y.size), int(u.size)
    if n == 0:
        raise ValueError("ppi_mean needs at least one labelled unit")
    if lam is None:
        lam = tuned_lambda(y, f, u)
    elif not 0.0 <= lam <= 1.0:
        raise ValueError(f"lam must be within [0, 1], got {lam}")
    if not big_n:
        lam = 0.0
    rectified = y - lam * f
    estimate = float(rectified.mean()) + (lam * float(u.mean()) if lam else 0.0)
    labelled_part = float(rectified.var(ddof=1)) / n if n >= 2 else 0.0
    judge_part = lam * lam * float(u.var(ddof=1)) / big_n if lam and big_n >= 2 else 0.0
    variance = labelled_part + judge_part
    if n < 2:
        df = 1.0
    elif judge_part == 0.0:
        df = float(n - 1)
    else:
        spread = labelled_part**2 / (n - 1) + judge_part**2 / (big_n - 1)
        df = variance**2 / spread if spread > 0 else float(n - 1)
    return PpiEstimate(
        estimate=estimate, se=math.sqrt(variance), lam=float(lam), n=n, unlabelled=big_n, df=df
    )


def tuned_lambda(labelled: FloatArray, predicted: FloatArray, unlabelled: FloatArray) -> float:
    """PPI++'s variance-minimising weight of the judge, cov(Y, f) / ((1 + n / N) var(f)),
    clipped to [0, 1]; 0 without judge-only units or without variation in f."""
    n, big_n = labelled.size, unlabelled.size
    if n < 2 or big_n < 2:
        return 0.0
    every = np.concatenate([predicted, unlabelled])
    spread = float(every.var(ddof=1))
    if spread <= 0.0:
        return 0.0
    covariance = float(np.cov(labelled, predicted, ddof=1)[0, 1])
    return min(1.0, max(0.0, covariance / ((1.0 + n / big_n) * spread)))
