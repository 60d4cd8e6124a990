"""Label-hole bounds: a check's verdict re-decided with its unjudged documents at both extremes."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from retrieval_gate.config.evaluators import evaluator_key
from retrieval_gate.core.ids import FloatArray, IntArray
from retrieval_gate.core.qrels import Qrels
from retrieval_gate.gate.checks.compare import Comparison
from retrieval_gate.gate.checks.verdicts import Verdict
from retrieval_gate.gate.explain.diagnostics import GradedTopK
from retrieval_gate.gate.explain.label_hole_extremes import (
    OpenDocs,
    SideRows,
    first_extremes,
    linear_extremes,
)
from retrieval_gate.metrics.spec import MetricSpec

Decider = Callable[[Mapping[str, FloatArray], Mapping[str, FloatArray]], Sequence[Comparison]]
"""The gate's own rule: (baseline scores, current scores) -> every check, as `compare` gives."""

ENUMERATED = "ap"
"""The measure without a registered shape (`Measure.shape`) that the bounds still take, by
trying every grading (`_ap_values`, its own scoring). A gain_sum measure's extremes are exact
by the rearrangement inequality (`label_hole_extremes`), a first_relevant one's over the pairs
of first relevant ranks."""
EXHAUSTIVE = 4096
"""Most grade assignments of one query's unjudged documents enumerated for the measures
without an exact shortcut (ap); past it, the query's delta is bounded by [-1, 1]."""
_ENUMERATED_CELLS = 1 << 20
"""Ranks x assignments x queries scored in one call of the measure (`_extremes`)."""
MULTISETS = 50_000
"""Most multisets of grades enumerated per query for the gain_sum measures; past it, a sound
interval bound (`label_hole_extremes._outer`)."""


@dataclass(frozen=True, kw_only=True)
class LabelHole:
    """A failing or inconclusive check re-decided with its unjudged documents graded the least
    and the most favourable way for the current retriever (worst and best case)."""

    metric: str
    slice: str
    verdict: Verdict
    """The check's verdict as decided (unjudged documents non-relevant)."""
    unjudged: int
    """Distinct unjudged (query, doc) pairs in the top k of either side over its queries."""
    worst: Verdict | None
    """The verdict at the worst case (each query's delta at its lowest, its current value too:
    the two may come from different gradings, which only widens the range); None: not
    bounded."""
    best: Verdict | None
    """The verdict at the best case (each query's delta at its highest)."""
    worst_delta: float | None
    best_delta: float | None
    robust: bool
    """The verdict holds whatever grades the unjudged documents get."""
    exact: bool
    """False when an outer bound stood in for a query's exact extremes, or under the t-test
    (then `robust` may be False where an exact bound would say True, never the other way)."""
    reason: str = ""
    """Why the check is not bounded, or "" when it is."""


@dataclass(frozen=True, kw_only=True)
class _Extremes:
    """Per query: the lowest and highest delta and current value over every grade assignment,
    and whether each was found exactly."""

    delta: tuple[FloatArray, FloatArray]
    current: tuple[FloatArray, FloatArray]
    exact: np.ndarray


def bounded(check: Comparison) -> bool:
    """Whether the label-hole bounds look at `check`: failing, or gated and inconclusive."""
    return check.failed or (check.gated and check.verdict == "inconclusive")


@dataclass(frozen=True, kw_only=True)
class HoleExtremes:
    """What the bounds of a set of checks need from the two top k: each query's distinct
    unjudged docs, each bounded metric's per-query extremes, and why the others are not."""

    unjudged: IntArray
    extremes: dict[str, _Extremes]
    reasons: dict[str, str]


@dataclass(frozen=True, kw_only=True)
class HolePlan:
    """The metrics whose extremes the bounds of a set of checks need, why the others are not
    bounded, and the highest grade an unjudged document may get."""

    specs: dict[str, MetricSpec]
    reasons: dict[str, str]
    top: float


def hole_extremes(
    checks: Sequence[Comparison],
    before: GradedTopK,
    after: GradedTopK,
    qrels: Qrels,
    *,
    k: int,
) -> HoleExtremes | None:
    """Each query's extremes under every grading of its unjudged documents, for the metrics
    `label_holes` re-decides `checks` with; None when no check is failing or inconclusive.
    Nothing it returns holds a row of the top k: the caller may let them go before the
    checks are decided again. (`hole_plan`, `block_extremes` and `joined_extremes` in one
    block of queries.)"""
    plan = hole_plan(checks, qrels, k=k)
    if plan is None:
        return None
    return joined_extremes(plan, [block_extremes(plan, before, after, qrels)])


def hole_plan(checks: Sequence[Comparison], qrels: Qrels, *, k: int) -> HolePlan | None:
    """What the bounds of `checks` need; None when no check is failing or inconclusive."""
    wanted = _bounded_checks(checks)
    if not wanted:
        return None
    top = max(float(qrels.grade.max()) if len(qrels) else 1.0, 1.0)
    specs: dict[str, MetricSpec] = {}
    reasons: dict[str, str] = {}
    # Every metric the gate tests, not only the failing ones': their p-values share alpha.
    for metric in sorted(_family(checks) | {c.metric for c in wanted}):
        if evaluator_key(metric) is not None:
            continue
        spec, why = boundable(metric, k)
        if spec is None:
            reasons[metric] = why
        else:
            specs[metric] = spec
    return HolePlan(specs=specs, reasons=reasons, top=top)


def block_extremes(
    plan: HolePlan, before: GradedTopK, after: GradedTopK, qrels: Qrels
) -> tuple[IntArray, dict[str, _Extremes]]:
    """Each query's distinct unjudged docs and each planned metric's extremes, for the
    queries of both top k (`graded_blocks`: a block of them) judged by `qrels`."""
    query_ids = after.run.query_ids
    docs = _queries(before, after, _judged_grades(qrels, query_ids.tolist()), len(query_ids))
    return docs.unjudged, {
        metric: _extremes(spec, docs, plan.top) for metric, spec in plan.specs.items()
    }


def joined_extremes(
    plan: HolePlan, blocks: Sequence[tuple[IntArray, dict[str, _Extremes]]]
) -> HoleExtremes:
    """`block_extremes` of blocks of queries (in query order) as one."""
    joined = {
        metric: _Extremes(
            delta=(
                _joined(b[1][metric].delta[0] for b in blocks),
                _joined(b[1][metric].delta[1] for b in blocks),
            ),
            current=(
                _joined(b[1][metric].current[0] for b in blocks),
                _joined(b[1][metric].current[1] for b in blocks),
            ),
            exact=_joined(b[1][metric].exact for b in blocks),
        )
        for metric in plan.specs
    }
    return HoleExtremes(
        unjudged=_joined(b[0] for b in blocks), extremes=joined, reasons=plan.reasons
    )


def label_holes(
    checks: Sequence[Comparison],
    found: HoleExtremes | None,
    slices: Mapping[str, IntArray],
    scores: tuple[Mapping[str, FloatArray], Mapping[str, FloatArray]],
    decide: Decider,
    *,
    proven: bool = True,
) -> tuple[LabelHole, ...]:
    """The bounds of every failing or inconclusive check of `checks` (in their order), from
    `found = hole_extremes(checks, ...)`.

    `scores` are (baseline, current) per query, aligned with the top k's queries; `decide`
    re-decides every check from such scores. At the worst case each query's delta is its lowest
    over every grade (0..the highest grade in the qrels, at least 1) of the unjudged documents
    of both top k (a document in both has one grade), with the current value at its lowest; at
    the best case both at their highest. The threshold (absolute or relative: with baseline =
    current - delta it holds -(1 - r) delta > r current), the floor and the randomization
    test's evidence all move one way with each query's delta and current value, so a verdict
    equal at both extremes holds for every assignment in between. (For the randomization test
    that holds draw by draw, the sign flips being shared: past its Monte Carlo resolution,
    where Hoeffding's bound stands in, only for levels below 1 / (resamples + 1).) `proven`
    off (the t-test, whose statistic does not move one way with each delta) claims no check
    robust unless it has no unjudged document."""
    if found is None:
        return ()
    wanted = _bounded_checks(checks)
    extremes, reasons = found.extremes, found.reasons
    # An evaluator's scores do not move with the judgments: they stay as measured.
    unbounded = {m for m in _family(checks) - set(extremes) if evaluator_key(m) is None}
    worst, best = _decided(scores, extremes, unbounded, decide)
    holes = []
    for check in wanted:
        rows = slices[check.slice]
        n = int(found.unjudged[rows].sum())
        verdict = check.verdict or "pass"  # bounded checks always have one
        if check.metric in reasons:
            why = reasons[check.metric]
            holes.append(
                LabelHole(
                    metric=check.metric,
                    slice=check.slice,
                    verdict=verdict,
                    unjudged=n,
                    worst=None,
                    best=None,
                    worst_delta=None,
                    best_delta=None,
                    robust=n == 0,
                    exact=True,
                    reason=why,
                )
            )
            continue
        low, high = worst[(check.metric, check.slice)], best[(check.metric, check.slice)]
        exact = bool(extremes[check.metric].exact[rows].all()) and proven
        same = low.verdict == high.verdict == check.verdict
        holes.append(
            LabelHole(
                metric=check.metric,
                slice=check.slice,
                verdict=verdict,
                unjudged=n,
                worst=low.verdict,
                best=high.verdict,
                worst_delta=low.delta,
                best_delta=high.delta,
                robust=n == 0 or (same and proven),
                exact=exact,
            )
        )
    return tuple(holes)


def _bounded_checks(checks: Sequence[Comparison]) -> list[Comparison]:
    """The checks the bounds look at. An evaluator's scores do not move with the judgments:
    its checks have no label holes, and stay as measured when the others are decided at
    their extremes."""
    return [c for c in checks if bounded(c) and evaluator_key(c.metric) is None]


def _family(checks: Sequence[Comparison]) -> set[str]:
    """The metrics the gate tests (their p-values share alpha)."""
    return {c.metric for c in checks if c.level is not None}


def boundable(metric: str, k: int) -> tuple[MetricSpec | None, str]:
    from retrieval_gate.config.check_keys import kind_of
    from retrieval_gate.metrics import parse_metric
    from retrieval_gate.metrics.diversity import DIVERSITY

    kind = kind_of(metric)
    if kind == "candidates":
        return None, "reads the first stage's candidates, not the stored top k: not bounded"
    if kind != "ranking":
        return None, "not a ranking metric: no labels to miss"
    spec = parse_metric(metric)
    if spec.name in DIVERSITY:
        return None, "judges documents per subtopic: not bounded"
    if spec.measure.shape is None and spec.name != ENUMERATED:
        return None, f"no label-hole bound for {spec.name}"
    if spec.k is None or spec.k > k or spec.measure.full_list:
        return None, f"looks past the stored top {k}: not bounded"
    return spec, ""


def _decided(
    scores: tuple[Mapping[str, FloatArray], Mapping[str, FloatArray]],
    extremes: Mapping[str, _Extremes],
    unbounded: set[str],
    decide: Decider,
) -> tuple[dict[tuple[str, str], Comparison], dict[tuple[str, str], Comparison]]:
    """Every check decided at the worst and at the best case. An `unbounded` metric of the
    tested family moves to its own extreme for the others' sake (the correction shares alpha):
    a drop of 1 on every query (the smallest p-value) at the worst, no change (the largest) at
    the best. The other metrics (report only) keep their scores."""
    sides = []
    for low in (True, False):
        base: dict[str, FloatArray] = {}
        cur: dict[str, FloatArray] = {}
        for metric, before in scores[0].items():
            after = scores[1][metric]
            if metric in extremes:
                at = extremes[metric]
                pick = 0 if low else 1
                cur[metric] = at.current[pick]
                base[metric] = at.current[pick] - at.delta[pick]
            elif metric not in unbounded:
                base[metric], cur[metric] = before, after
            elif low:
                base[metric], cur[metric] = np.ones_like(before), np.zeros_like(after)
            else:
                base[metric], cur[metric] = before, np.asarray(before, dtype=np.float64).copy()
        sides.append({(c.metric, c.slice): c for c in decide(base, cur)})
    return sides[0], sides[1]


# --------------------------------------------------------------------------------------------
# Each query's top k on both sides
# --------------------------------------------------------------------------------------------


def _joined(arrays: Iterable[npt.NDArray[Any]]) -> npt.NDArray[Any]:
    return np.concatenate(list(arrays))


def _queries(
    before: GradedTopK, after: GradedTopK, judged: tuple[FloatArray, IntArray], count: int
) -> OpenDocs:
    """The `count` queries of both top k as flat rows, each unjudged doc numbered once per
    query (a doc in both lists has one grade), and their judged grades (`_judged_grades`)."""
    sides = [_rows(top_k, count) for top_k in (before, after)]
    vocabulary = after.vocabulary  # both records' doc codes are one coding
    open_ = [np.flatnonzero(~(side[2] >= 0)) for side in sides]
    pairs = np.concatenate(
        [side[0][o] * vocabulary + side[4][o] for side, o in zip(sides, open_, strict=True)]
    )
    keys, slot = np.unique(pairs, return_inverse=True)  # sorted by query first
    unjudged = np.bincount(keys // vocabulary, minlength=count)
    first = np.zeros(count, dtype=np.int64)
    np.cumsum(unjudged[:-1], out=first[1:])
    split = len(open_[0])
    rows = []
    for (query, rank, grade, bounds, _), o, part in zip(
        sides, open_, (slot[:split], slot[split:]), strict=True
    ):
        slots = np.full(len(query), -1, dtype=np.int64)
        slots[o] = part
        rows.append(SideRows(query=query, rank=rank, grade=grade, slot=slots, bounds=bounds))
    grade, judged_bounds = judged
    return OpenDocs(
        before=rows[0],
        after=rows[1],
        unjudged=unjudged,
        first_slot=first,
        judged_grade=grade,
        judged_bounds=judged_bounds,
    )


def _rows(
    top_k: GradedTopK, count: int
) -> tuple[IntArray, IntArray, FloatArray, IntArray, IntArray]:
    """(query, rank from 1, grade, each of the `count` queries' bounds, doc code), rows in
    (query, rank) order."""
    run = top_k.run  # grouped by query and ranked within each, as `listed_run` lays it out
    rank = np.rint(-run.score).astype(np.int64)  # score = -rank
    bounds = np.searchsorted(run.query, np.arange(count + 1))
    return run.query, rank, top_k.grade, bounds, top_k.doc


def _judged_grades(qrels: Qrels, query_ids: Sequence[str]) -> tuple[FloatArray, IntArray]:
    """Every judged grade (>= 0) of the queries, grouped by query, and each query's bounds."""
    from retrieval_gate.core.ids import positions

    query = positions(qrels.query_ids, query_ids)[qrels.query]
    keep = (query >= 0) & (qrels.grade >= 0)
    query, grade = query[keep], qrels.grade[keep]
    order = np.argsort(query, kind="stable")
    query, grade = query[order], grade[order]
    return grade, np.searchsorted(query, np.arange(len(query_ids) + 1))


# --------------------------------------------------------------------------------------------
# Per-query extremes
# --------------------------------------------------------------------------------------------


def _extremes(spec: MetricSpec, docs: OpenDocs, top: float) -> _Extremes:
    """Each query's lowest and highest delta (current - baseline) and current value."""
    grades = _grades(spec, top)
    if spec.measure.shape == "gain_sum":
        low, high, cur_low, cur_high, exact = linear_extremes(spec, docs, grades, MULTISETS)
        return _Extremes(delta=(low, high), current=(cur_low, cur_high), exact=exact)
    if spec.measure.shape == "first_relevant":
        low, high, cur_low, cur_high, exact = first_extremes(spec, docs, top)
        return _Extremes(delta=(low, high), current=(cur_low, cur_high), exact=exact)
    n = docs.count
    low, high, cur_low, cur_high = (np.zeros(n) for _ in range(4))
    exact = np.ones(n, dtype=bool)
    most = 0  # the most unjudged docs whose every assignment is enumerated
    while len(grades) > 1 and len(grades) ** (most + 1) <= EXHAUSTIVE:
        most += 1
    # Past EXHAUSTIVE assignments a query's delta is bounded by [-1, 1].
    many = docs.unjudged > (most if len(grades) > 1 else np.iinfo(np.int64).max)
    low[many], high[many], cur_high[many], exact[many] = -1.0, 1.0, 1.0, False
    # Queries with as many unjudged docs share one table of assignments: scored together, a
    # chunk of them at a time.
    enumerated = np.flatnonzero(~many)
    for u in np.unique(docs.unjudged[enumerated]).tolist():
        same = enumerated[docs.unjudged[enumerated] == u]
        assigned = np.asarray(list(itertools.product(grades.tolist(), repeat=u)), np.float64)
        assigned = assigned.reshape(len(assigned), u)
        assert spec.k is not None
        step = max(1, _ENUMERATED_CELLS // (len(assigned) * spec.k))
        for start in range(0, len(same), step):
            chunk = same[start : start + step]
            after, before = (_ap_values(spec, docs, chunk, side, assigned) for side in (1, 0))
            delta = after - before
            low[chunk], high[chunk] = delta.min(axis=1), delta.max(axis=1)
            cur_low[chunk], cur_high[chunk] = after.min(axis=1), after.max(axis=1)
    return _Extremes(delta=(low, high), current=(cur_low, cur_high), exact=exact)


def _grades(spec: MetricSpec, top: float) -> FloatArray:
    """The grades an unjudged document may get, as far as `spec` can tell them apart."""
    if spec.measure.binary:
        return np.asarray([0.0, top])
    return np.unique(np.append(np.arange(0.0, math.floor(top) + 1.0), top))  # top: 2.5 too


def _ap_values(
    spec: MetricSpec, docs: OpenDocs, queries: IntArray, side: int, assigned: FloatArray
) -> FloatArray:
    """ap@k of one side's top k (0 before, 1 after) of each of `queries` under each row of
    `assigned` grades (every one has as many unjudged docs): queries x assignments.

    The metric engine's `ap` (trec_eval's map_cut) to the bit, without a qrels row per grade
    of every assignment: the precisions are added rank by rank, in the order the engine adds
    them, and R counts the judged and the assigned grades >= rel."""
    assert spec.name == ENUMERATED
    assert spec.k is not None
    rel = int(spec.param("rel"))
    rows, width = assigned.shape[0], spec.k
    top_k = docs.after if side else docs.before
    # Every row of the queries' top k, with the query's place among `queries`.
    starts, ends = top_k.bounds[queries], top_k.bounds[queries + 1]
    counts = ends - starts
    at = np.repeat(starts - (np.cumsum(counts) - counts), counts) + np.arange(counts.sum())
    place = np.repeat(np.arange(len(queries)), counts)
    rank, grade, slot = top_k.rank[at], top_k.grade[at], top_k.slot[at]
    shown = rank <= width
    # Rank by rank, each rank's cells side by side (the loop below reads one rank at a time);
    # ranks a short list leaves empty stay False: past the end of the results, never relevant.
    cells = np.zeros((width, len(queries), rows), dtype=bool)
    judged = shown & (slot < 0)
    cells[rank[judged] - 1, place[judged], :] = (grade[judged] >= rel)[:, None]
    open_ = shown & (slot >= 0)
    local = slot[open_] - docs.first_slot[queries[place[open_]]]
    cells[rank[open_] - 1, place[open_], :] = (assigned[:, local] >= rel).T
    relevant = cells.reshape(width, len(queries) * rows)
    judged_rel = np.concatenate([[0], np.cumsum(docs.judged_grade >= rel)])
    people = judged_rel[docs.judged_bounds[queries + 1]] - judged_rel[docs.judged_bounds[queries]]
    num_rel = (people[:, None] + np.count_nonzero(assigned >= rel, axis=1)).reshape(-1)
    found = np.zeros(relevant.shape[1])
    total = np.zeros(relevant.shape[1])
    for column in range(width):
        found += relevant[column]
        total += np.where(relevant[column], found / (column + 1.0), 0.0)
    values = np.zeros(relevant.shape[1])
    np.divide(total, num_rel, out=values, where=num_rel != 0)
    return values.reshape(len(queries), rows)
