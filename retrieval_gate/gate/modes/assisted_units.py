"""The prediction-powered checks' judge against people, in each check's own units."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from retrieval_gate.core.ids import FloatArray, IntArray
from retrieval_gate.gate.checks.compare import Comparison
from retrieval_gate.stats.judge_units import (
    UnitAgreement,
    bland_altman,
    effective_queries,
    sign_agreement,
)
from retrieval_gate.stats.ppi import ppi_mean

MIN_HUMAN = 10
"""Fewest human-judged queries a check needs to estimate the judge's error on them (and
to state the figures here over)."""


def units_of(
    made: Sequence[Comparison],
    weights: Sequence[float | None],
    scores: tuple[
        tuple[Mapping[str, FloatArray], Mapping[str, FloatArray]],
        tuple[Mapping[str, FloatArray], Mapping[str, FloatArray]],
    ],
    labelled: np.ndarray,
    slices: Mapping[str, IntArray],
) -> tuple[UnitAgreement, ...]:
    """Each gated check's judge against people on its human-judged queries (at least
    MIN_HUMAN of them): Bland-Altman limits of the current run's per-query values, the sign
    agreement of the deltas that reach max_drop, and what the estimate is worth in
    human-judged queries. A check with fewer human-judged queries says nothing here."""
    human, judged = scores
    found = []
    for check, lam in zip(made, weights, strict=True):
        rows = np.asarray(slices[check.slice], dtype=np.int64)
        ours, theirs = rows[labelled[rows]], rows[~labelled[rows]]
        if not check.gated or lam is None or ours.size < MIN_HUMAN:
            continue
        people = np.asarray(human[1][check.metric]) - np.asarray(human[0][check.metric])
        machine = np.asarray(judged[1][check.metric]) - np.asarray(judged[0][check.metric])
        bias, low, high = bland_altman(
            np.asarray(judged[1][check.metric])[ours], np.asarray(human[1][check.metric])[ours]
        )
        decisive, agree = sign_agreement(
            people[ours], machine[ours], check.max_drop if check.max_drop else 0.0
        )
        estimate = ppi_mean(people[ours], machine[ours], machine[theirs], lam=lam)
        found.append(
            UnitAgreement(
                metric=check.metric,
                slice=check.slice,
                queries=int(ours.size),
                bias=bias,
                low=low,
                high=high,
                decisive=decisive,
                agree=agree,
                effective=effective_queries(people[ours], estimate.se, int(rows.size)),
            )
        )
    return tuple(found)
