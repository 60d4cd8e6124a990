"""The judge measured in the gate's units: per-query metric agreement, delta signs, worth."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from retrieval_gate.core.ids import FloatArray

LIMITS_Z = 1.96
"""Bland and Altman's 95% limits of agreement: the mean difference +- 1.96 sd."""


@dataclass(frozen=True, kw_only=True)
class UnitAgreement:
    """One check's judge against people on its human-judged queries, in the metric's units."""

    metric: str
    slice: str
    queries: int
    """Human-judged queries of the check: every figure below is over them."""
    bias: float
    """Mean per-query difference, judge-scored minus people-scored (the current run)."""
    low: float
    high: float
    """Bland-Altman 95% limits of agreement: bias -+ 1.96 sd of the differences."""
    decisive: int
    """Queries whose people-scored delta (current - baseline) reaches the check's max_drop."""
    agree: int
    """Of those, the queries whose judge-scored delta has the same sign."""
    effective: float | None
    """Human-judged queries people alone would need for the estimate's standard error:
    var(people's deltas) / se^2, at most the check's queries; None without spread."""


def bland_altman(judge: FloatArray, people: FloatArray) -> tuple[float, float, float]:
    """(bias, lower limit, upper limit) of the per-unit differences judge - people: their
    mean and mean -+ 1.96 sd (ddof 1; 0 below two units)."""
    differences = np.asarray(judge, dtype=np.float64) - np.asarray(people, dtype=np.float64)
    if not differences.size:
        raise ValueError("Bland-Altman limits need at least one unit")
    bias = float(differences.mean())
    spread = float(differences.std(ddof=1)) if differences.size >= 2 else 0.0
    return bias, bias - LIMITS_Z * spread, bias + LIMITS_Z * spread


def sign_agreement(people: FloatArray, judge: FloatArray, threshold: float) -> tuple[int, int]:
    """(units whose people-scored delta reaches `threshold` in size, of them those whose
    judge-scored delta has the same sign): whether the judge sees the changes the gate acts
    on the way people do."""
    people = np.asarray(people, dtype=np.float64)
    judge = np.asarray(judge, dtype=np.float64)
    decisive = np.abs(people) >= threshold
    same = np.sign(judge[decisive]) == np.sign(people[decisive])
    return int(decisive.sum()), int(same.sum())


def effective_queries(people: FloatArray, se: float, total: int) -> float | None:
    """How many human-labelled units the estimate is worth: the n at which people's mean
    alone (variance var(people) / n) would have the estimate's standard error `se`, capped
    at `total` (the units the estimate read: it cannot be worth more); None when people's
    deltas do not vary or the estimate has no spread."""
    values = np.asarray(people, dtype=np.float64)
    if values.size < 2 or se <= 0 or not math.isfinite(se):
        return None
    spread = float(values.var(ddof=1))
    if spread <= 0:
        return None
    return min(spread / (se * se), float(total))
