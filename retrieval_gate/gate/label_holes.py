"""Label-hole bounds: a check's verdict re-decided with its unjudged documents at both extremes."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from retrieval_gate.config.evaluators import evaluator_key
from retrieval_gate.core.ids import FloatArray, IntArray
from retrieval_gate.core.qrels import Qrels
from retrieval_gate.gate.compare import Comparison
from retrieval_gate.gate.diagnostics import GradedTopK
from retrieval_gate.gate.verdicts import Verdict
from retrieval_gate.metrics.ranking import RankedJudgments
from retrieval_gate.metrics.spec import MetricSpec

Decider = Callable[[Mapping[str, FloatArray], Mapping[str, FloatArray]], Sequence[Comparison]]
"""The gate's own rule: (baseline scores, current scores) -> every check, as `compare` gives."""

LINEAR = frozenset({"ndcg", "dcg", "recall", "precision"})
"""Measures that, for a fixed multiset of grades given to the unjudged documents, are a sum of
per-document gains over a denominator that the multiset alone fixes (the ideal DCG, R, k, 1):
their extremes are exact by the rearrangement inequality (`_linear`)."""
FIRST = frozenset({"rr", "hit_rate"})
"""Measures of the first relevant rank: exact over the pairs of first relevant ranks."""
BINARY = frozenset({"recall", "precision", "rr", "hit_rate", "ap"})
"""Measures that see a grade only as >= rel or not: two grades (0 and the top) say it all."""
EXHAUSTIVE = 4096
"""Most grade assignments of one query's unjudged documents enumerated for the measures
without an exact shortcut (ap); past it, the query's delta is bounded by [-1, 1]."""
MULTISETS = 50_000
"""Most multisets of grades enumerated per query for the LINEAR measures; past it, a sound
interval bound (`_linear_outer`)."""


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class _Side:
    """One query's top k on one side: the judged rows' ranks and grades, and the ranks of its
    unjudged documents with their index among the query's unjudged documents of both sides."""

    judged_rank: IntArray
    judged_grade: FloatArray
    unjudged_rank: IntArray
    unjudged_index: IntArray


@dataclass(frozen=True)
class _Query:
    before: _Side
    after: _Side
    unjudged: int
    """Distinct unjudged documents in the two top k."""
    judged: FloatArray
    """Every judged grade (>= 0) of the query in the qrels."""


@dataclass(frozen=True)
class _Extremes:
    """Per query: the lowest and highest delta and current value over every grade assignment,
    and whether each was found exactly."""

    delta: tuple[FloatArray, FloatArray]
    current: tuple[FloatArray, FloatArray]
    exact: np.ndarray


def bounded(check: Comparison) -> bool:
    """Whether the label-hole bounds look at `check`: failing, or gated and inconclusive."""
    return check.failed or (check.gated and check.verdict == "inconclusive")


def label_holes(
    checks: Sequence[Comparison],
    before: GradedTopK,
    after: GradedTopK,
    qrels: Qrels,
    slices: Mapping[str, IntArray],
    scores: tuple[Mapping[str, FloatArray], Mapping[str, FloatArray]],
    decide: Decider,
    *,
    k: int,
    proven: bool = True,
) -> tuple[LabelHole, ...]:
    """The bounds of every failing or inconclusive check of `checks` (in their order).

    `scores` are (baseline, current) per query, aligned with `after`'s queries; `decide`
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
    # An evaluator's scores do not move with the judgments: its checks have no label holes,
    # and stay as measured when the others are decided at their extremes.
    wanted = [c for c in checks if bounded(c) and evaluator_key(c.metric) is None]
    if not wanted:
        return ()
    queries = _queries(before, after, qrels)
    top = max(float(qrels.grade.max()) if len(qrels) else 1.0, 1.0)
    extremes: dict[str, _Extremes] = {}
    reasons: dict[str, str] = {}
    # Every metric the gate tests, not only the failing ones': their p-values share alpha.
    family = {c.metric for c in checks if c.level is not None}
    for metric in sorted(family | {c.metric for c in wanted}):
        if evaluator_key(metric) is not None:
            continue
        spec, why = _boundable(metric, k)
        if spec is None:
            reasons[metric] = why
        else:
            extremes[metric] = _extremes(spec, queries, top)
    counts = np.asarray([q.unjudged for q in queries], dtype=np.int64)
    worst, best = _decided(scores, extremes, family - set(extremes), decide)
    found = []
    for check in wanted:
        rows = slices[check.slice]
        n = int(counts[rows].sum())
        verdict = check.verdict or "pass"  # bounded checks always have one
        if check.metric in reasons:
            why = reasons[check.metric]
            found.append(
                LabelHole(
                    check.metric, check.slice, verdict, n, None, None, None, None, n == 0, True, why
                )
            )
            continue
        low, high = worst[(check.metric, check.slice)], best[(check.metric, check.slice)]
        exact = bool(extremes[check.metric].exact[rows].all()) and proven
        same = low.verdict == high.verdict == check.verdict
        found.append(
            LabelHole(
                check.metric,
                check.slice,
                verdict,
                n,
                low.verdict,
                high.verdict,
                low.delta,
                high.delta,
                n == 0 or (same and proven),
                exact,
            )
        )
    return tuple(found)


def _boundable(metric: str, k: int) -> tuple[MetricSpec | None, str]:
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
    if spec.name not in LINEAR | FIRST | {"ap"}:
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


def _queries(before: GradedTopK, after: GradedTopK, qrels: Qrels) -> list[_Query]:
    count = len(after.run.query_ids)
    sides = [_split(top_k, count) for top_k in (before, after)]
    judged = _judged_grades(qrels, after.run.query_ids.tolist())
    found = []
    for q in range(count):
        (b_rank, b_grade, b_doc), (a_rank, a_grade, a_doc) = sides[0][q], sides[1][q]
        b_open, a_open = ~(b_grade >= 0), ~(a_grade >= 0)
        docs, index = np.unique(np.concatenate([b_doc[b_open], a_doc[a_open]]), return_inverse=True)
        split = int(b_open.sum())
        found.append(
            _Query(
                _Side(b_rank[~b_open], b_grade[~b_open], b_rank[b_open], index[:split]),
                _Side(a_rank[~a_open], a_grade[~a_open], a_rank[a_open], index[split:]),
                len(docs),
                judged[q],
            )
        )
    return found


def _split(top_k: GradedTopK, count: int) -> list[tuple[IntArray, FloatArray, IntArray]]:
    """Each query's (ranks from 1, grades, doc codes) in rank order."""
    run = top_k.run
    order = np.lexsort((-run.score, run.query))  # score = -rank (`listed_run`)
    query = run.query[order]
    rank = np.rint(-run.score[order]).astype(np.int64)
    grade, doc = top_k.grade[order], top_k.doc[order]
    bounds = np.searchsorted(query, np.arange(count + 1))
    return [
        (rank[s:e], grade[s:e], doc[s:e])
        for s, e in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)
    ]


def _judged_grades(qrels: Qrels, query_ids: Sequence[str]) -> list[FloatArray]:
    from retrieval_gate.core.ids import positions

    query = positions(qrels.query_ids, query_ids)[qrels.query]
    keep = (query >= 0) & (qrels.grade >= 0)
    query, grade = query[keep], qrels.grade[keep]
    order = np.argsort(query, kind="stable")
    query, grade = query[order], grade[order]
    bounds = np.searchsorted(query, np.arange(len(query_ids) + 1))
    return [grade[s:e] for s, e in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)]


# --------------------------------------------------------------------------------------------
# Per-query extremes
# --------------------------------------------------------------------------------------------


def _extremes(spec: MetricSpec, queries: Sequence[_Query], top: float) -> _Extremes:
    """Each query's lowest and highest delta (current - baseline) and current value."""
    grades = _grades(spec, top)
    n = len(queries)
    low, high, cur_low, cur_high = (np.zeros(n) for _ in range(4))
    exact = np.ones(n, dtype=bool)
    for q, query in enumerate(queries):
        if spec.name in LINEAR:
            found = _linear(spec, query, grades)
        elif spec.name in FIRST:
            found = _first(spec, query, top)
        else:
            found = _exhaustive(spec, query, grades)
        (low[q], high[q]), (cur_low[q], cur_high[q]), exact[q] = found
    return _Extremes((low, high), (cur_low, cur_high), exact)


def _grades(spec: MetricSpec, top: float) -> FloatArray:
    """The grades an unjudged document may get, as far as `spec` can tell them apart."""
    if spec.name in BINARY:
        return np.asarray([0.0, top])
    return np.unique(np.append(np.arange(0.0, math.floor(top) + 1.0), top))  # top: 2.5 too


Bounds = tuple[tuple[float, float], tuple[float, float], bool]
"""((lowest delta, highest delta), (lowest current value, highest), exact)."""


def _gain(spec: MetricSpec, grades: FloatArray) -> FloatArray:
    from retrieval_gate.metrics.measures import _gain as graded_gain

    if spec.name in ("ndcg", "dcg"):
        return np.asarray(graded_gain(np.asarray(grades, dtype=np.float64), spec), np.float64)
    return (np.asarray(grades) >= int(spec.param("rel"))).astype(np.float64)


def _weights(spec: MetricSpec, ranks: IntArray) -> FloatArray:
    """Each rank's weight in the metric's sum (0 past its cutoff)."""
    assert spec.k is not None
    inside = ranks <= spec.k
    if spec.name in ("ndcg", "dcg"):
        return np.where(inside, 1.0 / np.log2(ranks + 1.0), 0.0)
    return inside.astype(np.float64)


def _denominators(spec: MetricSpec, judged: FloatArray, added: FloatArray) -> FloatArray:
    """The metric's denominator for each row of gains given to the unjudged docs (`added`,
    rows x docs) beside the query's judged gains: the ideal DCG, R, k or 1."""
    assert spec.k is not None
    rows = added.shape[0]
    if spec.name == "precision":
        return np.full(rows, float(spec.k))
    if spec.name == "dcg":
        return np.ones(rows)
    if spec.name == "recall":
        return np.asarray(float((judged > 0).sum()) + (added > 0).sum(axis=1), np.float64)
    known = np.sort(judged[judged > 0])[::-1][: spec.k]
    every = np.concatenate([np.broadcast_to(known, (rows, len(known))), added], axis=1)
    every = -np.sort(-np.where(every > 0, every, 0.0), axis=1)[:, : spec.k]
    return every @ (1.0 / np.log2(np.arange(2, every.shape[1] + 2, dtype=np.float64)))


@cache
def _multisets(docs: int, values: int) -> IntArray:
    """Every multiset of `docs` values out of `values`, as rows of value indices ascending."""
    rows = list(itertools.combinations_with_replacement(range(values), docs))
    return np.asarray(rows, dtype=np.int64).reshape(len(rows), docs)


def _linear(spec: MetricSpec, query: _Query, grades: FloatArray) -> Bounds:
    """Exact extremes of a LINEAR measure. With the multiset of grades fixed, the denominator
    is fixed and the numerator is sum(gain_d * c_d) (c_d: the doc's weight in the current top
    k minus its weight in the baseline's, or its current weight alone for the current value):
    by the rearrangement inequality the lowest sum gives the highest gains to the lowest c_d,
    the highest sum to the highest. Every multiset is tried."""
    u = query.unjudged
    gains = _gain(spec, grades)
    judged_gain = _gain(spec, query.judged)
    a, b = query.after, query.before
    const_a = float(_gain(spec, a.judged_grade) @ _weights(spec, a.judged_rank))
    const_b = float(_gain(spec, b.judged_grade) @ _weights(spec, b.judged_rank))
    w_a = _per_doc(a, _weights(spec, a.unjudged_rank), u)
    w_b = _per_doc(b, _weights(spec, b.unjudged_rank), u)
    distinct = np.unique(gains)[::-1]  # grades of equal gain are one choice
    if math.comb(u + len(distinct) - 1, u) > MULTISETS:
        return _linear_outer(spec, judged_gain, distinct, w_a, w_b, const_a, const_b)
    added = distinct[_multisets(u, len(distinct))]  # rows of gains, descending
    denominator = _denominators(spec, judged_gain, added)
    delta = _ratio_range(added, w_a - w_b, const_a - const_b, denominator)
    current = _ratio_range(added, w_a, const_a, denominator)
    return delta, current, True


def _per_doc(side: _Side, weights: FloatArray, docs: int) -> FloatArray:
    """Each unjudged doc's weight in `side` (0 where it is not there)."""
    found = np.zeros(docs)
    found[side.unjudged_index] = weights
    return found


def _ratio_range(
    added: FloatArray, coefficient: FloatArray, const: float, denominator: FloatArray
) -> tuple[float, float]:
    ascending = np.sort(coefficient)
    low = const + added @ ascending  # the highest gains on the lowest coefficients
    high = const + added @ ascending[::-1]
    safe = np.where(denominator > 0, denominator, 1.0)
    low = np.where(denominator > 0, low / safe, 0.0)
    high = np.where(denominator > 0, high / safe, 0.0)
    return float(low.min()), float(high.max())


def _linear_outer(
    spec: MetricSpec,
    judged: FloatArray,
    gains: FloatArray,
    w_a: FloatArray,
    w_b: FloatArray,
    const_a: float,
    const_b: float,
) -> Bounds:
    """A sound interval when there are too many multisets: the numerator's range doc by doc
    over the denominator's range (the smallest positive and the largest denominator)."""
    u = len(w_a)
    ends = np.stack([np.full(u, gains.min()), np.full(u, gains.max())])
    smallest = float(_denominators(spec, judged, ends[:1])[0])
    largest = float(_denominators(spec, judged, ends[1:])[0])
    if smallest <= 0:  # positive once some doc gains: R >= 1, ideal DCG >= the least gain
        positive = gains[gains > 0]
        smallest = float(positive.min()) if spec.name == "ndcg" and len(positive) else 1.0
    ranges = []
    for coefficient, const in ((w_a - w_b, const_a - const_b), (w_a, const_a)):
        low = const + float(np.minimum(gains.min() * coefficient, gains.max() * coefficient).sum())
        high = const + float(np.maximum(gains.min() * coefficient, gains.max() * coefficient).sum())
        lo = low / smallest if low < 0 else low / largest
        hi = high / smallest if high > 0 else high / largest
        if spec.name != "dcg":
            lo, hi = max(lo, -1.0), min(hi, 1.0)
        ranges.append((lo, hi))
    return ranges[0], ranges[1], False


def _first(spec: MetricSpec, query: _Query, top: float) -> Bounds:
    """Exact extremes of rr and hit_rate, functions of each side's first relevant rank: every
    pair of first relevant ranks is tried, kept when no document must be both relevant (the
    first) and non-relevant (ranked above a first)."""
    assert spec.k is not None
    rel = int(spec.param("rel"))
    can = top >= rel  # an unjudged document can be made relevant at all
    options = [_firsts(side, spec.k, rel, can) for side in (query.after, query.before)]
    deltas, currents = [], []
    for a_first, a_yes, a_no in options[0]:
        value = _first_value(spec.name, a_first)
        currents.append(value)
        for b_first, b_yes, b_no in options[1]:
            if (a_yes & b_no) or (b_yes & a_no):
                continue
            deltas.append(value - _first_value(spec.name, b_first))
    return (min(deltas), max(deltas)), (min(currents), max(currents)), True


def _firsts(
    side: _Side, k: int, rel: int, can: bool
) -> list[tuple[int | None, frozenset[int], frozenset[int]]]:
    """(first relevant rank or None, docs that must be relevant, docs that must not be)."""
    judged = side.judged_rank[(side.judged_grade >= rel) & (side.judged_rank <= k)]
    cap = int(judged.min()) if len(judged) else None
    order = np.argsort(side.unjudged_rank)
    ranks = side.unjudged_rank[order].tolist()
    index = side.unjudged_index[order].tolist()
    found: list[tuple[int | None, frozenset[int], frozenset[int]]] = []
    above: list[int] = []
    for rank, doc in zip(ranks, index, strict=True):
        if rank > k or (cap is not None and rank > cap):
            break
        if can:
            found.append((rank, frozenset({doc}), frozenset(above)))
        above.append(doc)
    found.append((cap, frozenset(), frozenset(above)))
    return found


def _first_value(name: str, first: int | None) -> float:
    if first is None:
        return 0.0
    return 1.0 / first if name == "rr" else 1.0


def _exhaustive(spec: MetricSpec, query: _Query, grades: FloatArray) -> Bounds:
    """Every grade assignment scored by the measure itself; past EXHAUSTIVE, [-1, 1]."""
    u = query.unjudged
    if len(grades) ** u > EXHAUSTIVE:
        return (-1.0, 1.0), (0.0, 1.0), False
    rows = list(itertools.product(grades.tolist(), repeat=u))
    assigned = np.asarray(rows, dtype=np.float64).reshape(len(rows), u)
    values = [_scored(spec, query, side, assigned) for side in (query.after, query.before)]
    delta = values[0] - values[1]
    return (
        (float(delta.min()), float(delta.max())),
        (
            float(values[0].min()),
            float(values[0].max()),
        ),
        True,
    )


def _scored(spec: MetricSpec, query: _Query, side: _Side, assigned: FloatArray) -> FloatArray:
    """The measure of one side's top k under each row of `assigned` grades."""
    assert spec.k is not None
    rows = assigned.shape[0]
    width = spec.k
    matrix = np.full((rows, width), -np.inf)
    judged = side.judged_rank <= width
    matrix[:, side.judged_rank[judged] - 1] = side.judged_grade[judged]
    open_ = side.unjudged_rank <= width
    matrix[:, side.unjudged_rank[open_] - 1] = assigned[:, side.unjudged_index[open_]]
    # Ranks a short list leaves empty stay -inf: past the end of the results.
    grades = np.concatenate([np.broadcast_to(query.judged, (rows, len(query.judged))), assigned], 1)
    qrels_query = np.repeat(np.arange(rows), grades.shape[1])
    ranked = RankedJudgments(
        np.arange(rows).astype(object),
        matrix,
        (matrix > -np.inf).sum(axis=1),
        qrels_query,
        grades.reshape(-1),
        np.zeros((rows, 0)),
        (),
        (),
    )
    return np.asarray(spec.measure.compute(spec, ranked), dtype=np.float64)
