"""The calibration card: how a judge's grades agree with people's, pair by pair and by system."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from retrieval_gate.core.ids import FloatArray
from retrieval_gate.stats.agreement import cohen_kappa, krippendorff_alpha

GRADES = (0, 1, 2, 3)
MIN_RUNS = 4
"""Fewest runs a system-level Kendall tau is computed over: with 2 or 3 it is +-1 or a
third, and says nothing."""


@dataclass(frozen=True, kw_only=True)
class GradeBias:
    """The judge on the pairs people gave one grade: how many, and its mean grade minus it."""

    grade: int
    pairs: int
    bias: float | None
    """Mean judge grade - this grade; None without pairs."""


@dataclass(frozen=True, kw_only=True)
class SystemAgreement:
    """Kendall's tau-b between the rankings of runs scored with people's and the judge's
    labels; tau None below MIN_RUNS runs (`note` says why)."""

    runs: int
    tau: float | None
    note: str = ""


@dataclass(frozen=True, kw_only=True)
class CalibrationCard:
    """The judge against people on the pairs both graded."""

    pairs: int
    kappa: float | None
    """Quadratic-weighted Cohen's kappa over grades 0-3; None without pairs or when undefined."""
    alpha: float | None
    """Ordinal Krippendorff's alpha; None without pairs or when undefined."""
    confusion: tuple[tuple[int, ...], ...]
    """Rows: people's grade 0-3; columns: the judge's grade 0-3."""
    bias: tuple[GradeBias, ...]
    systems: SystemAgreement | None = None

    def trusted(self, min_pairs: int, min_kappa: float) -> bool:
        """Whether the judge may decide: enough pairs and a kappa at or above the floor."""
        return self.pairs >= min_pairs and self.kappa is not None and self.kappa >= min_kappa

    def distrust(self, min_pairs: int, min_kappa: float) -> str:
        """Why the judge may not decide, "" when it may."""
        if self.pairs < min_pairs:
            return (
                f"only {self.pairs} pairs graded by both people and the judge "
                f"(judge.trust.min_pairs: {min_pairs})"
            )
        if self.kappa is None:
            return "the judge's agreement with people is undefined (one grade throughout)"
        if self.kappa < min_kappa:
            return (
                f"the judge's quadratic kappa against people is {self.kappa:.2f} "
                f"(judge.trust.min_kappa: {min_kappa:g})"
            )
        return ""


def judge_kappa(human: Sequence[float] | FloatArray, judge: Sequence[float] | FloatArray) -> float:
    """Quadratic-weighted Cohen's kappa of people's and the judge's grades of the same pairs,
    on the rubric's whole 0-3 scale (and any other grade people used): the one definition
    `judge --against`, the judge's summary and the calibration card share, so a grade that
    neither side used weighs the same everywhere. NaN where kappa is undefined."""
    scale = sorted({*GRADES, *map(float, human), *map(float, judge)})
    return cohen_kappa(human, judge, weights="quadratic", categories=scale)


def calibration_card(
    human: Sequence[float] | FloatArray,
    judge: Sequence[float] | FloatArray,
    systems: SystemAgreement | None = None,
) -> CalibrationCard:
    """The card of paired grades: `human[i]` and `judge[i]` are one pair's grades (0-3)."""
    people = np.asarray(human, dtype=np.float64)
    model = np.asarray(judge, dtype=np.float64)
    if people.shape != model.shape or people.ndim != 1:
        raise ValueError("calibration needs one human and one judge grade per pair")
    for grades in (people, model):
        if grades.size and not np.isin(grades, GRADES).all():
            raise ValueError("calibration grades must be whole numbers from 0 to 3")
    size = len(GRADES)
    confusion = np.zeros((size, size), dtype=np.int64)
    np.add.at(confusion, (people.astype(np.int64), model.astype(np.int64)), 1)
    bias = []
    for grade in GRADES:
        rows = people == grade
        count = int(rows.sum())
        bias.append(
            GradeBias(
                grade=grade, pairs=count, bias=float(model[rows].mean()) - grade if count else None
            )
        )
    kappa = alpha = None
    if people.size:
        kappa = _defined(judge_kappa(people, model))
        alpha = _defined(krippendorff_alpha(np.vstack([people, model]), level="ordinal"))
    return CalibrationCard(
        pairs=int(people.size),
        kappa=kappa,
        alpha=alpha,
        confusion=tuple(tuple(int(v) for v in row) for row in confusion),
        bias=tuple(bias),
        systems=systems,
    )


def system_agreement(human: Sequence[float], judge: Sequence[float]) -> SystemAgreement:
    """Kendall's tau-b between runs' means under people's and the judge's labels."""
    runs = len(human)
    if len(judge) != runs:
        raise ValueError("system agreement needs one human and one judge score per run")
    if runs < MIN_RUNS:
        return SystemAgreement(
            runs=runs,
            tau=None,
            note=f"{runs} runs: a ranking of fewer than {MIN_RUNS} runs says nothing about the "
            "judge (base and head alone agree or disagree by chance)",
        )
    return SystemAgreement(runs=runs, tau=kendall_tau_b(human, judge))


def kendall_tau_b(x: Sequence[float] | FloatArray, y: Sequence[float] | FloatArray) -> float | None:
    """Kendall's tau-b (ties in either ranking corrected for); None when either is constant."""
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    first, second = np.triu_indices(a.size, k=1)
    da = np.sign(a[first] - a[second])
    db = np.sign(b[first] - b[second])
    score = float((da * db).sum())
    untied_a = float(np.count_nonzero(da))
    untied_b = float(np.count_nonzero(db))
    if not untied_a or not untied_b:
        return None
    return score / math.sqrt(untied_a * untied_b)


def _defined(value: float) -> float | None:
    return None if math.isnan(value) else float(value)
