"""Label-hole extremes of the linear and first-relevant measures, every query at once."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import cache

import numpy as np

from retrieval_gate.core.ids import FloatArray, IntArray
from retrieval_gate.metrics.spec import MetricSpec

_COUNTED_GAINS = 16
"""Most distinct positive gains whose copies `_ideal_by_counts` counts (more: sorted)."""
CELLS = 1 << 22
"""Most floats of one block of queries x multisets x documents (32 MiB): the extremes of a
million queries are taken block by block, so their memory does not grow with the run."""


@dataclass(frozen=True, kw_only=True)
class SideRows:
    """One record's top k over the labelled queries, rows sorted by (query, rank): each
    unjudged row's `slot` (its doc among the query's unjudged docs of both sides, numbered
    across queries), -1 for a judged row."""

    query: IntArray
    rank: IntArray
    grade: FloatArray
    slot: IntArray
    bounds: IntArray
    """Query q's rows are [bounds[q], bounds[q + 1])."""


@dataclass(frozen=True, kw_only=True)
class OpenDocs:
    """Both top k and the qrels' judged grades, per query, as flat arrays."""

    before: SideRows
    after: SideRows
    unjudged: IntArray
    """Distinct unjudged docs of each query in the two top k (its slots)."""
    first_slot: IntArray
    """Query q's slots are [first_slot[q], first_slot[q] + unjudged[q])."""
    judged_grade: FloatArray
    """Every judged grade (>= 0) in the qrels, grouped by query."""
    judged_bounds: IntArray

    @property
    def count(self) -> int:
        return len(self.unjudged)


Extremes = tuple[FloatArray, FloatArray, FloatArray, FloatArray, np.ndarray]
"""Per query: lowest and highest delta, lowest and highest current value, exact or not."""


def gains_of(spec: MetricSpec, grades: FloatArray) -> FloatArray:
    """Each grade's gain in `spec` (graded for dcg/ndcg, 0 or 1 for the others)."""
    from retrieval_gate.metrics.measures import gain

    if spec.name in ("ndcg", "dcg"):
        return np.asarray(gain(np.asarray(grades, dtype=np.float64), spec), np.float64)
    return (np.asarray(grades) >= int(spec.param("rel"))).astype(np.float64)


def rank_weights(spec: MetricSpec, ranks: IntArray) -> FloatArray:
    """Each rank's weight in the metric's sum (0 past its cutoff)."""
    assert spec.k is not None
    inside = ranks <= spec.k
    if spec.name in ("ndcg", "dcg"):
        return np.where(inside, 1.0 / np.log2(ranks + 1.0), 0.0)
    return inside.astype(np.float64)


@cache
def multisets(docs: int, values: int) -> IntArray:
    """Every multiset of `docs` values out of `values`, as rows of value indices ascending."""
    rows = list(itertools.combinations_with_replacement(range(values), docs))
    return np.asarray(rows, dtype=np.int64).reshape(len(rows), docs)


def linear_extremes(spec: MetricSpec, docs: OpenDocs, grades: FloatArray, limit: int) -> Extremes:
    """Exact extremes of a gain_sum measure for every query. With the multiset of grades given
    to a query's unjudged docs fixed, the denominator is fixed and the numerator is
    sum(gain_d * c_d) (c_d: the doc's weight in the current top k minus its weight in the
    baseline's, or its current weight alone for the current value): by the rearrangement
    inequality the lowest sum gives the highest gains to the lowest c_d, the highest sum to
    the highest. Every multiset is tried, for the queries with as many unjudged docs at once,
    unless there are more than `limit` of them: then a sound outer interval, not exact."""
    distinct = np.unique(gains_of(spec, grades))[::-1]  # grades of equal gain are one choice
    n = docs.count
    slots = int(docs.unjudged.sum())
    constants: list[FloatArray] = []
    per_slot: list[FloatArray] = []
    for side in (docs.before, docs.after):
        judged = side.slot < 0
        weight = rank_weights(spec, side.rank)
        gain = gains_of(spec, side.grade[judged])
        total = np.bincount(side.query[judged], weights=gain * weight[judged], minlength=n)
        constants.append(total.astype(np.float64, copy=False))
        found = np.zeros(slots)
        found[side.slot[~judged]] = weight[~judged]
        per_slot.append(found)
    known, relevant = _known_gains(spec, docs)
    out = [np.zeros(n) for _ in range(4)]
    exact = np.ones(n, dtype=bool)
    by_count = np.argsort(docs.unjudged, kind="stable")
    counts = docs.unjudged[by_count]
    edges = np.flatnonzero(np.diff(counts)) + 1
    for group in np.split(by_count, edges):
        if not len(group):
            continue
        u = int(docs.unjudged[group[0]])
        many = math.comb(u + len(distinct) - 1, u) > limit
        added: FloatArray = (
            np.stack([np.full(u, distinct.min()), np.full(u, distinct.max())])
            if many
            else distinct[multisets(u, len(distinct))]  # rows of gains, descending
        )
        width = max(u + known.shape[1], 1) * len(added)
        for start in range(0, len(group), max(CELLS // width, 1)):
            rows = group[start : start + max(CELLS // width, 1)]
            columns = docs.first_slot[rows, None] + np.arange(u)
            after, before = per_slot[1][columns], per_slot[0][columns]
            const_a, const_b = constants[1][rows], constants[0][rows]
            denominator = _denominators(spec, known[rows], relevant[rows], added)
            pairs = ((after - before, const_a - const_b), (after, const_a))
            for i, (coefficient, const) in enumerate(pairs):
                if many:
                    low, high = _outer(spec, coefficient, const, distinct, denominator)
                else:
                    low, high = _ratio_range(added, coefficient, const, denominator)
                out[2 * i][rows], out[2 * i + 1][rows] = low, high
            exact[rows] = not many
    return out[0], out[1], out[2], out[3], exact


def _known_gains(spec: MetricSpec, docs: OpenDocs) -> tuple[FloatArray, FloatArray]:
    """Each query's positive judged gains, highest first, at most k (zeros after), and how
    many judged gains are positive."""
    assert spec.k is not None
    n = docs.count
    gain = gains_of(spec, docs.judged_grade)
    query = np.repeat(np.arange(n), np.diff(docs.judged_bounds))
    relevant = np.bincount(query, weights=gain > 0, minlength=n).astype(np.float64)
    if spec.name != "ndcg":
        return np.zeros((n, 0)), relevant
    keep = gain > 0
    query, gain = query[keep], gain[keep]
    order = np.lexsort((-gain, query))
    query, gain = query[order], gain[order]
    starts = np.searchsorted(query, np.arange(n))
    place = np.arange(len(query)) - starts[query]
    inside = place < spec.k
    width = int(place[inside].max()) + 1 if inside.any() else 0
    known = np.zeros((n, width))
    known[query[inside], place[inside]] = gain[inside]
    return known, relevant


def _denominators(
    spec: MetricSpec, known: FloatArray, relevant: FloatArray, added: FloatArray
) -> FloatArray:
    """The metric's denominator (queries x rows of `added`) for each row of gains given to the
    unjudged docs beside each query's judged gains: the ideal DCG, R, k or 1."""
    assert spec.k is not None
    shape = (len(known), len(added))
    if spec.name == "precision":
        return np.full(shape, float(spec.k))
    if spec.name == "dcg":
        return np.ones(shape)
    if spec.name == "recall":
        counted: FloatArray = relevant[:, None] + (added > 0).sum(axis=1)[None, :]
        return counted
    values = np.unique(np.concatenate([known[known > 0], added[added > 0]]))[::-1]
    if len(values) <= _COUNTED_GAINS:
        return _ideal_by_counts(spec.k, known, added, values)
    every = np.concatenate(
        [
            np.broadcast_to(known[:, None, :], (*shape, known.shape[1])),
            np.broadcast_to(added[None, :, :], (*shape, added.shape[1])),
        ],
        axis=2,
    )
    every = -np.sort(-np.where(every > 0, every, 0.0), axis=2)[:, :, : spec.k]
    discount = 1.0 / np.log2(np.arange(2, every.shape[2] + 2, dtype=np.float64))
    return _sum_in_order(every, discount)


def _ideal_by_counts(
    k: int, known: FloatArray, added: FloatArray, values: FloatArray
) -> FloatArray:
    """The ideal DCG@k of each query's judged gains with each row of `added`, from how many
    of each positive gain (`values`, descending) there are: the ideal ranking puts each
    gain's copies side by side, so its share is gain x the discounts of their ranks. No sort
    of every (query, row)'s gains: at 20,000 light-shape queries this was 1.4 s of 5.9."""
    known_counts = (known[:, :, None] == values).sum(axis=1)
    added_counts = (added[:, :, None] == values).sum(axis=1)
    ends = np.cumsum(known_counts[:, None, :] + added_counts[None, :, :], axis=2)
    np.minimum(ends, k, out=ends)
    starts = np.zeros_like(ends)
    starts[:, :, 1:] = ends[:, :, :-1]
    discounted = np.zeros(k + 1)  # the first m ranks' discounts, summed
    np.cumsum(1.0 / np.log2(np.arange(2, k + 2, dtype=np.float64)), out=discounted[1:])
    return _sum_in_order(discounted[ends] - discounted[starts], values)


def _sum_in_order(terms: FloatArray, weights: FloatArray) -> FloatArray:
    """sum_j terms[..., j] * weights[j], added one j after another: a term that is 0 (a gain
    no query of the block has, a rank past every list) leaves the sum as it was, so a query's
    value does not depend on the others read with it."""
    found = np.zeros(terms.shape[:-1])
    for j, weight in enumerate(weights.tolist()):
        found += terms[..., j] * weight
    return found


def _ratio_range(
    added: FloatArray, coefficient: FloatArray, const: FloatArray, denominator: FloatArray
) -> tuple[FloatArray, FloatArray]:
    ascending = np.sort(coefficient, axis=1)
    # The highest gains on the lowest coefficients; summed per cell, not by a matrix product,
    # whose rounding may depend on how many queries share the call (`top_k_facts`' blocks).
    low = const[:, None] + (ascending[:, None, :] * added[None, :, :]).sum(axis=2)
    high = const[:, None] + (ascending[:, None, ::-1] * added[None, :, :]).sum(axis=2)
    positive = denominator > 0
    safe = np.where(positive, denominator, 1.0)
    low = np.where(positive, low / safe, 0.0)
    high = np.where(positive, high / safe, 0.0)
    return low.min(axis=1), high.max(axis=1)


def _outer(
    spec: MetricSpec,
    coefficient: FloatArray,
    const: FloatArray,
    gains: FloatArray,
    denominator: FloatArray,
) -> tuple[FloatArray, FloatArray]:
    """A sound interval when there are too many multisets: the numerator's range doc by doc
    over the denominator's range (the smallest positive and the largest denominator, with
    every unjudged doc at the least and at the most gain)."""
    smallest, largest = denominator[:, 0], denominator[:, 1]
    positive = gains[gains > 0]
    # Positive once some doc gains: R >= 1, ideal DCG >= the least gain.
    least = float(positive.min()) if spec.name == "ndcg" and len(positive) else 1.0
    smallest = np.where(smallest <= 0, least, smallest)
    ends = (gains.min() * coefficient, gains.max() * coefficient)
    low = const + np.minimum(*ends).sum(axis=1)
    high = const + np.maximum(*ends).sum(axis=1)
    lo = np.where(low < 0, low / smallest, low / largest)
    hi = np.where(high > 0, high / smallest, high / largest)
    if spec.name != "dcg":
        lo, hi = np.maximum(lo, -1.0), np.minimum(hi, 1.0)
    return lo, hi


def first_extremes(spec: MetricSpec, docs: OpenDocs, top: float) -> Extremes:
    """Exact extremes of rr and hit_rate, functions of each side's first relevant rank.

    A side's first relevant rank is its first judged relevant rank within k (its cap), or the
    rank of one of the unjudged docs above the cap made relevant, those above it not. Pairs of
    such choices are compatible unless one doc must be both relevant and not. The highest
    delta either keeps both caps or makes a current doc x the current's first: the baseline's
    first is then at best x's own rank there, when x sits above the baseline's cap (x is
    relevant), else the baseline's cap (every doc above it may stay non-relevant). The lowest
    delta is the same with the sides swapped."""
    assert spec.k is not None
    rel = int(spec.param("rel"))
    can = top >= rel  # an unjudged document can be made relevant at all
    n = docs.count
    slots = int(docs.unjudged.sum())
    caps, opens = [], []
    for side in (docs.before, docs.after):
        cap = np.full(n, np.inf)
        relevant = (side.slot < 0) & (side.grade >= rel) & (side.rank <= spec.k)
        queries, first = np.unique(side.query[relevant], return_index=True)
        cap[queries] = side.rank[relevant][first]  # rows are in rank order
        above = (side.slot >= 0) & (side.rank <= spec.k) & (side.rank < cap[side.query]) & can
        opens.append((side.query[above], side.rank[above], side.slot[above]))
        caps.append(cap)
    value = [_first_value(spec.name, cap) for cap in caps]
    delta = value[1] - value[0]
    low, high = delta.copy(), delta.copy()
    current_high = value[1].copy()
    for mine, other, sign, out in ((1, 0, 1.0, high), (0, 1, -1.0, low)):
        query, rank, slot = opens[mine]
        there = np.full(slots, np.inf)
        there[opens[other][2]] = opens[other][1]
        other_value = np.where(
            np.isfinite(there[slot]), _first_value(spec.name, there[slot]), value[other][query]
        )
        mine_value = _first_value(spec.name, rank.astype(np.float64))
        moved = mine_value - other_value if mine == 1 else other_value - mine_value
        if sign > 0:
            np.maximum.at(out, query, moved)
            np.maximum.at(current_high, query, mine_value)
        else:
            np.minimum.at(out, query, moved)
    return low, high, value[1], current_high, np.ones(n, dtype=bool)


def _first_value(name: str, first: FloatArray) -> FloatArray:
    """rr or hit_rate of first relevant ranks (inf: none)."""
    if name == "rr":
        return np.where(np.isfinite(first), 1.0 / first, 0.0)
    return np.isfinite(first).astype(np.float64)
