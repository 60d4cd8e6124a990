"""The label-free checks: each query's top k against the reference's, and an ANN index's top k
against an exact search's, as check columns compared by the gate's paired machinery."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from retrieval_gate.config.unlabelled import KEY, KEYS, PREFIX, UnlabelledConfig
from retrieval_gate.core.ids import FloatArray, IntArray
from retrieval_gate.errors import GateError
from retrieval_gate.gate.checks.compare import Comparison, ComparisonSettings, Threshold, compare
from retrieval_gate.metrics.rank_overlap import lost_at_k, overlap_at_k, rbo_ext, recall_against

Lists = Mapping[str, Sequence[str]]
"""One run's answers: query id -> doc ids as ranked (a query absent retrieved nothing)."""
Measure = Literal["overlap", "rbo", "lost", "ann_recall"]

MEASURES: Mapping[Measure, str] = {
    "overlap": "share of the reference's top k still in the top k",
    "rbo": "rank-biased overlap with the reference's top k",
    "lost": "share of queries that lost more than m of the reference's top k",
    "ann_recall": "share of the exact search's top k the index finds",
}


@dataclass(frozen=True, kw_only=True)
class LabelFreeCheck:
    """One label-free check: what it measures to depth k, and what it may lose."""

    name: str
    """As reports show it: `overlap@10`, `rbo@10`, `lost@10>3`, `ann_recall@10`."""
    measure: Measure
    k: int
    threshold: Threshold
    p: float = 0.9
    """RBO's persistence."""
    more_than: int = 0
    """`lost`: a query counts when it lost more than this many of the reference's top k."""


def checks_of(config: UnlabelledConfig) -> list[LabelFreeCheck]:
    """The label-free checks `config` names, in its order, each named as reports show it
    (`unlabelled:overlap@10`, `unlabelled:lost@10>3`)."""
    found = []
    for key, gate in config.checks.items():
        match = KEY.match(key)
        if match is None:  # the config's validator refused it already
            raise GateError(f"unlabelled check {key!r}: write {KEYS}")
        measure: Measure = match[1]  # type: ignore[assignment]
        k = int(match[2])
        if measure == "lost":
            threshold = Threshold(max_drop=gate.max_share, floor=gate.max, direction="lower")
            name = f"{PREFIX}{key}>{gate.more_than}"
        else:
            threshold = Threshold(max_drop=gate.max_drop, floor=gate.min)
            name = f"{PREFIX}{key}"
        found.append(
            LabelFreeCheck(
                name=name,
                measure=measure,
                k=k,
                threshold=threshold,
                p=gate.p,
                more_than=gate.more_than or 0,
            )
        )
    return found


@dataclass(frozen=True, kw_only=True)
class LabelFreeRun:
    """What the label-free checks read, for the reports' line saying no labels were used."""

    queries: int
    """Unlabelled queries checked (the sample)."""
    available: int
    """Queries the file holds."""
    source: str
    """The queries file, as the config names it."""
    reference: str
    """What the overlap checks compared with; "" without them."""
    exact: bool
    """Whether the configured retriever was run again with exact search."""


def pairs(reference_runs: int, current_runs: int) -> int:
    """How many run pairs each side of an overlap column averages: the reference's first run
    against its others (its own run-to-run agreement) and against as many current runs, so
    that with an unchanged nondeterministic retriever the two are alike in distribution and
    the paired sign flips are exact. With one reference run the reference side is its first
    run against itself (a deterministic retriever's agreement)."""
    if reference_runs < 1 or current_runs < 1:
        raise GateError("the label-free checks need a run of each side")
    return min(max(reference_runs - 1, 1), current_runs)


def overlap_columns(
    checks: Sequence[LabelFreeCheck],
    query_ids: Sequence[str],
    reference: Sequence[Lists],
    current: Sequence[Lists],
) -> tuple[dict[str, FloatArray], dict[str, FloatArray]]:
    """Per-query columns of the reference-vs-current checks (overlap, rbo, lost), the
    reference side first: each is the mean over `pairs` of the check's value between the
    reference's first run and another of its runs (reference side) or a current run
    (current side). `lost` is 1 for a query that lost more than `more_than`, else 0."""
    n = pairs(len(reference), len(current))
    anchor = reference[0]
    own = reference[1 : n + 1] if len(reference) > 1 else reference[:1]
    others = current[:n]
    before: dict[str, FloatArray] = {}
    after: dict[str, FloatArray] = {}
    for check in checks:
        if check.measure == "ann_recall":
            continue
        before[check.name] = _column(check, query_ids, anchor, own)
        after[check.name] = _column(check, query_ids, anchor, others)
    return before, after


def ann_columns(
    checks: Sequence[LabelFreeCheck],
    query_ids: Sequence[str],
    exact: Lists,
    approximate: Sequence[Lists],
) -> tuple[dict[str, FloatArray], dict[str, FloatArray]]:
    """Per-query columns of the `ann_recall` checks: the exact search's recall of itself (1)
    as the reference side, and the mean over the approximate runs of the share of the exact
    top k each finds as the current side."""
    before: dict[str, FloatArray] = {}
    after: dict[str, FloatArray] = {}
    for check in checks:
        if check.measure != "ann_recall":
            continue
        before[check.name] = _column(check, query_ids, exact, [exact])
        after[check.name] = _column(check, query_ids, exact, approximate)
    return before, after


def label_free_comparisons(
    checks: Sequence[LabelFreeCheck],
    columns: tuple[Mapping[str, FloatArray], Mapping[str, FloatArray]],
    slices: Mapping[str, IntArray],
    settings: ComparisonSettings,
    *,
    strict: bool = True,
) -> tuple[Comparison, ...]:
    """The label-free checks compared as any check is (`compare`): paired sign flips per
    query and per slice, thresholds, one family corrected across them (its own: these
    checks read other queries than the labelled ones)."""
    thresholds = {check.name: check.threshold for check in checks if check.name in columns[0]}
    if not thresholds:
        return ()
    return compare(columns[0], columns[1], slices, thresholds, {}, settings, strict=strict)


def _column(
    check: LabelFreeCheck, query_ids: Sequence[str], anchor: Lists, runs: Sequence[Lists]
) -> FloatArray:
    values = np.zeros(len(query_ids), dtype=np.float64)
    for run in runs:
        for i, query in enumerate(query_ids):
            values[i] += _value(check, anchor.get(query, ()), run.get(query, ()))
    values /= len(runs)
    values.flags.writeable = False
    return values


def _value(check: LabelFreeCheck, reference: Sequence[str], current: Sequence[str]) -> float:
    if check.measure == "overlap":
        return overlap_at_k(reference, current, check.k)
    if check.measure == "rbo":
        return rbo_ext(reference, current, check.p, check.k)
    if check.measure == "lost":
        return float(lost_at_k(reference, current, check.k) > check.more_than)
    return recall_against(reference, current, check.k)
