"""Ranking a run the way trec_eval does and joining it with the qrels into one grade matrix."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import repeat

import numpy as np

from retrieval_gate.ids import FloatArray, IntArray, ObjectArray
from retrieval_gate.qrels import Qrels
from retrieval_gate.run import Run

NOT_RETRIEVED = -np.inf
"""Grade-matrix cell past the end of a query's results."""

UNJUDGED = np.nan
"""Grade-matrix cell of a retrieved doc absent from the qrels (non-relevant, not judged)."""


@dataclass(frozen=True, eq=False)
class RankedJudgments:
    """Grades of the retrieved docs by rank, one row per labelled query (sorted ids).

    `grades[q, i]` is the qrels grade of the doc at rank i + 1 for query q, NaN when the doc
    is not in the qrels, -inf past the end of the results. Every comparison with NaN or -inf
    is false, so `grades >= rel` is the relevance mask and `grades >= 0` the judged mask.
    """

    query_ids: ObjectArray
    grades: FloatArray
    num_ret: IntArray
    qrels_query: IntArray
    qrels_grade: FloatArray
    ideal: FloatArray
    missing_queries: tuple[str, ...]
    ignored_queries: tuple[str, ...]
    _cache: dict[tuple[str, float], FloatArray] = field(default_factory=dict, repr=False)

    def top(self, k: int | None) -> FloatArray:
        """Grades of the first k ranks (all ranks held when k is None)."""
        return self.grades if k is None else self.grades[:, :k]

    def num_rel(self, rel: float) -> FloatArray:
        """R: judged docs with grade >= rel, per query."""
        return self._count("rel", rel, self.qrels_grade >= rel)

    def num_nonrel(self, rel: float) -> FloatArray:
        """Judged docs with 0 <= grade < rel, per query."""
        return self._count("nonrel", rel, (self.qrels_grade >= 0) & (self.qrels_grade < rel))

    def _count(self, kind: str, rel: float, mask: np.ndarray) -> FloatArray:
        key = (kind, rel)
        if key not in self._cache:
            self._cache[key] = np.bincount(
                self.qrels_query, weights=mask, minlength=len(self.query_ids)
            ).astype(np.float64)
        return self._cache[key]


def rank_judgments(run: Run, qrels: Qrels, depth: int | None) -> RankedJudgments:
    """Rank every labelled query's results and look up their grades, `depth` ranks deep."""
    labelled = qrels.query_ids
    num_queries = len(labelled)
    position = {q: i for i, q in enumerate(labelled.tolist())}
    run_to_labelled = np.fromiter(
        map(position.get, run.query_ids.tolist(), repeat(-1)),
        dtype=np.int64,
        count=len(run.query_ids),
    )
    ignored = tuple(str(q) for q in run.query_ids[run_to_labelled < 0])

    query = run_to_labelled[run.query]
    score, doc = run.score, run.doc
    keep = query >= 0
    if not keep.all():
        query, score, doc = query[keep], score[keep], doc[keep]
    order = ranking_order(query, score, doc, run.doc_ids)
    if order is not None:
        query, score, doc = query[order], score[order], doc[order]

    num_ret = np.bincount(query, minlength=num_queries).astype(np.int64)
    rank = _rank_within_query(query)
    grade = _lookup_grades(query, doc, run.doc_ids, qrels)

    longest = int(num_ret.max()) if num_queries else 0
    width = longest if depth is None else min(depth, longest)
    grades = np.full((num_queries, width), NOT_RETRIEVED)
    if width < longest:
        inside = rank < width
        grades[query[inside], rank[inside]] = grade[inside]
    else:
        grades[query, rank] = grade

    missing = tuple(str(q) for q in labelled[num_ret == 0])
    return RankedJudgments(
        labelled,
        grades,
        num_ret,
        qrels.query,
        qrels.grade,
        _ideal_grades(qrels, num_queries, depth),
        missing,
        ignored,
    )


def ranking_order(
    query: IntArray, score: FloatArray, doc: IntArray, doc_ids: ObjectArray
) -> IntArray | None:
    """Row order grouping queries with score descending, ties by doc id descending.

    None when the rows already are in that order (run files usually are), which saves the
    sort; only rows with tied scores ever have their doc ids compared.
    """
    if len(query) < 2:
        return None
    same = query[1:] == query[:-1]
    groups = np.count_nonzero(np.bincount(query))
    grouped = np.count_nonzero(~same) + 1 == groups
    order: IntArray | None = None
    if not (grouped and bool(np.all((score[1:] <= score[:-1]) | ~same))):
        distinct, inverse = np.unique(score, return_inverse=True)
        descending = len(distinct) - 1 - inverse.reshape(-1)
        order = np.argsort(query * len(distinct) + descending, kind="stable")
        query, score, doc = query[order], score[order], doc[order]
        same = query[1:] == query[:-1]
    tied = same & (score[1:] == score[:-1])
    if not tied.any():
        return order
    tie_fix = _tie_break(tied, doc_ids[doc])
    if tie_fix is None:
        return order
    rows, permuted = tie_fix
    fixed: IntArray = np.arange(len(query)) if order is None else order.copy()
    fixed[rows] = fixed[rows][permuted]
    return fixed


def _tie_break(tied: np.ndarray, names: ObjectArray) -> tuple[IntArray, IntArray] | None:
    """Within each run of tied rows, the permutation putting doc ids in descending order."""
    member = np.zeros(len(tied) + 1, dtype=bool)
    member[1:] |= tied
    member[:-1] |= tied
    rows = np.flatnonzero(member)
    starts = ~np.concatenate(([False], tied))[rows]
    group = np.cumsum(starts) - 1
    distinct, inverse = np.unique(names[rows], return_inverse=True)
    descending = len(distinct) - 1 - inverse.reshape(-1)
    key = group * len(distinct) + descending
    permuted = np.argsort(key, kind="stable")
    if np.array_equal(permuted, np.arange(len(rows))):
        return None
    return rows, permuted


def _rank_within_query(query: IntArray) -> IntArray:
    """0-based rank of each row inside its (contiguous) query group."""
    n = len(query)
    starts = np.flatnonzero(np.concatenate(([True], query[1:] != query[:-1]))) if n else query
    lengths = np.diff(np.append(starts, n))
    return np.arange(n, dtype=np.int64) - np.repeat(starts, lengths)


def _lookup_grades(
    query: IntArray, doc: IntArray, doc_ids: ObjectArray, qrels: Qrels
) -> FloatArray:
    """Qrels grade of each (labelled query, doc) row; NaN where the doc is not judged."""
    grade = np.full(len(query), UNJUDGED)
    if len(qrels) == 0 or len(query) == 0:
        return grade
    qrels_position = {d: i for i, d in enumerate(qrels.doc_ids.tolist())}
    to_qrels = np.fromiter(
        map(qrels_position.get, doc_ids.tolist(), repeat(-1)), dtype=np.int64, count=len(doc_ids)
    )
    qrels_doc = to_qrels[doc]
    judged = np.flatnonzero(qrels_doc >= 0)
    width = len(qrels.doc_ids)
    qrels_key = qrels.query * width + qrels.doc
    key_order = np.argsort(qrels_key)
    sorted_key = qrels_key[key_order]
    wanted = query[judged] * width + qrels_doc[judged]
    at = np.minimum(np.searchsorted(sorted_key, wanted), len(sorted_key) - 1)
    hit = sorted_key[at] == wanted
    grade[judged[hit]] = qrels.grade[key_order[at[hit]]]
    return grade


def _ideal_grades(qrels: Qrels, num_queries: int, depth: int | None) -> FloatArray:
    """Each query's positive grades sorted descending, zero-padded: the ideal ranking."""
    positive = qrels.grade > 0
    query, grade = qrels.query[positive], qrels.grade[positive]
    order = np.lexsort((-grade, query))
    query, grade = query[order], grade[order]
    counts = np.bincount(query, minlength=num_queries)
    width = int(counts.max()) if len(query) else 0
    if depth is not None:
        width = min(width, depth)
    rank = np.arange(len(query)) - np.repeat(np.cumsum(counts) - counts, counts)
    inside = rank < width
    ideal = np.zeros((num_queries, width))
    ideal[query[inside], rank[inside]] = grade[inside]
    return ideal
