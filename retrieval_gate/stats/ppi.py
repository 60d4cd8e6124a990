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


def weighted_ppi_mean(
    labelled: FloatArray,
    predicted: FloatArray,
    inclusion: FloatArray,
    unlabelled: FloatArray,
    *,
    lam: float | None = None,
) -> PpiEstimate:
    """The active-inference estimate of a population mean (Zrnic and Candes 2024, "Active
    Statistical Inference"): people labelled unit i with a known probability `inclusion[i]`.

    Every unit of the population (the n labelled and the N judge-only ones) gives

        z_i = lam * f_i + (Y_i - lam * f_i) * xi_i / pi_i

    (xi_i = 1 when people labelled it), whose mean is unbiased for every fixed lam whatever
    the judge's bias, because E[xi_i / pi_i] = 1. Its variance is estimated by var(z) / (n + N)
    with the reference t on n - 1 degrees of freedom (the labelled terms dominate and are
    estimated from n units). `lam` None tunes it: z = a + lam * b with a = Y xi / pi and
    b = f (1 - xi / pi), so var(z) is least at lam = -cov(a, b) / var(b), clipped to [0, 1].
    With every pi_i = n / (n + N) this is PPI on the whole population (`ppi_mean` with the
    judge's mean over every unit), and with lam = 0 the Horvitz-Thompson mean.
    """
    y = np.asarray(labelled, dtype=np.float64)
    f = np.asarray(predicted, dtype=np.float64)
    pi = np.asarray(inclusion, dtype=np.float64)
    u = np.asarray(unlabelled, dtype=np.float64)
    if y.ndim != 1 or f.shape != y.shape or pi.shape != y.shape or u.ndim != 1:
        raise ValueError(
            "weighted_ppi_mean needs labelled, predicted and inclusion of one length, and a "
            "1-d sample"
        )
    n = int(y.size)
    if n == 0:
        raise ValueError("weighted_ppi_mean needs at least one labelled unit")
    if not np.all((pi > 0.0) & (pi <= 1.0)):
        raise ValueError("inclusion probabilities must be within (0, 1]")
    a = np.concatenate([y / pi, np.zeros(u.size)])
    b = np.concatenate([f * (1.0 - 1.0 / pi), u])
    if lam is None:
        lam = _weighted_lambda(a, b) if n >= 2 else 0.0
    elif not 0.0 <= lam <= 1.0:
        raise ValueError(f"lam must be within [0, 1], got {lam}")
    z = a + lam * b
    size = int(z.size)
    variance = float(z.var(ddof=1)) / size if size >= 2 else 0.0
    return PpiEstimate(
        estimate=float(z.mean()),
        se=math.sqrt(variance),
        lam=float(lam),
        n=n,
        unlabelled=int(u.size),
        df=float(max(n - 1, 1)),
    )


def _weighted_lambda(a: FloatArray, b: FloatArray) -> float:
    spread = float(b.var(ddof=1))
    if spread <= 0.0:
        return 0.0
    covariance = float(np.cov(a, b, ddof=1)[0, 1])
    return min(1.0, max(0.0, -covariance / spread))


def active_probabilities(
    doubt: FloatArray, expected: float, floor: float
) -> tuple[FloatArray, float, FloatArray]:
    """Inclusion probabilities rising with `doubt` (one value >= 0 per candidate), `expected`
    of them drawn on average, none below `floor` times the uniform rate.

    Each candidate's weight is floor + (1 - floor) * doubt / mean(doubt) (1 for every one when
    no doubt is above 0), so the weights average 1; its probability is min(1, rate * weight),
    the rate chosen so that the probabilities sum to `expected` (capped at the candidates).
    Returns (probabilities, rate, weights)."""
    d = np.asarray(doubt, dtype=np.float64)
    if d.ndim != 1 or not d.size or not np.all(np.isfinite(d)) or np.any(d < 0):
        raise ValueError("doubt must be one finite value >= 0 per candidate")
    if not 0.0 < floor <= 1.0:
        raise ValueError(f"floor must be within (0, 1], got {floor}")
    mean = float(d.mean())
    weight = floor + (1.0 - floor) * d / mean if mean > 0 else np.ones(d.size)
    target = min(float(expected), float(d.size))
    if target <= 0:
        raise ValueError("expected must be above 0")
    # The probabilities' sum rises with the rate; those capped at 1 make it piecewise linear,
    # so bisect (60 halvings: the rate to double precision).
    low, high = 0.0, 1.0 / float(weight.min())
    for _ in range(60):
        middle = (low + high) / 2.0
        if float(np.minimum(1.0, middle * weight).sum()) < target:
            low = middle
        else:
            high = middle
    return np.minimum(1.0, high * weight), high, weight
