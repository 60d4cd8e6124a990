"""Ranking a run the way trec_eval does and joining it with the qrels into one grade matrix."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from itertools import chain, repeat
from typing import Any

import numpy as np
import numpy.typing as npt

from retrieval_gate.core.ids import (
    FloatArray,
    IntArray,
    ObjectArray,
    pair_keys,
    positions,
    row_bits,
    run_starts,
    small_pages,
)
from retrieval_gate.core.qrels import Qrels
from retrieval_gate.core.run import Run
from retrieval_gate.readers.dicts import run_from_dict

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
    scores: FloatArray | None = None
    """The run's score of each cell of `grades` (NaN past the end of the results); held only
    when asked for (`rank_judgments(..., scores=True)`), else None: rank order stands in."""
    _cache: dict[tuple[str, float], FloatArray] = field(default_factory=dict, repr=False)

    def top(self, k: int | None) -> FloatArray:
        """Grades of the first k ranks (all ranks held when k is None)."""
        return self.grades if k is None else self.grades[:, :k]

    def num_rel(self, rel: float) -> FloatArray:
        """R: judged docs with grade >= rel, per query."""
        return self._count("rel", rel, lambda g: g >= rel)

    def num_nonrel(self, rel: float) -> FloatArray:
        """Judged docs with 0 <= grade < rel, per query."""
        return self._count("nonrel", rel, lambda g: (g >= 0) & (g < rel))

    def _count(
        self, kind: str, rel: float, counted: Callable[[FloatArray], np.ndarray]
    ) -> FloatArray:
        key = (kind, rel)
        if key not in self._cache:
            self._cache[key] = np.bincount(
                self.qrels_query, weights=counted(self.qrels_grade), minlength=len(self.query_ids)
            ).astype(np.float64)
        return self._cache[key]


@dataclass(frozen=True, eq=False)
class _Rows:
    """A run's rows for labelled queries, before ranking: no doc id strings are built."""

    query: IntArray
    score: FloatArray
    judged: IntArray
    """The rows whose doc the qrels grade (the others are unjudged)."""
    grade: FloatArray
    """Their grades."""
    docs: Callable[[IntArray], list[str] | npt.NDArray[np.bytes_]]
    """Doc ids of the given rows (str, or UTF-8 bytes), fetched only for rows whose scores
    tie."""
    ignored: tuple[str, ...]
    extra: int = 0
    """Query codes from len(query_ids) on: unlabelled queries kept in place (their rows are
    ranked, then dropped with their rows of the grade matrix), which costs less than copying
    every column without them."""


ResultsMapping = Mapping[str, Mapping[str, float]]


def rank_judgments(
    run: Run | ResultsMapping, qrels: Qrels, depth: int | None, *, scores: bool = False
) -> RankedJudgments:
    """Rank every labelled query's results and look up their grades, `depth` ranks deep; with
    `scores`, keep each ranked cell's score too (`RankedJudgments.scores`)."""
    with small_pages():
        return _rank_judgments(run, qrels, depth, scores)


def _rank_judgments(
    run: Run | ResultsMapping, qrels: Qrels, depth: int | None, keep_scores: bool
) -> RankedJudgments:
    labelled = qrels.query_ids
    num_queries = len(labelled)
    rows = _mapping_rows(run, qrels) if isinstance(run, Mapping) else _run_rows(run, qrels)
    query, at, score = rows.query, rows.judged, rows.score
    # A ranked run's rows stay grouped and ranked under any codes the labelled queries get.
    ranked = isinstance(run, Run) and run.ranked
    order, ties = (None, None) if ranked else ranking_order(query, rows.score, rows.docs)
    if order is not None:
        query, score = query[order], score[order]
        moved = np.empty_like(order)
        moved[order] = np.arange(len(order))
        at = moved[at]
    if ties is not None:  # the judged rows among the tied ones move with them
        # A table of every row's new place: a gather, where a search per judged row (in
        # no order) cost five times more.
        moved_to = np.arange(len(query))
        moved_to[ties[1]] = ties[0]
        at = moved_to[at]

    num_ret = np.bincount(query, minlength=num_queries + rows.extra)[:num_queries]
    width = int(num_ret.max()) if num_queries else 0  # unlabelled rows are never looked at
    if depth is not None:
        width = min(depth, width)
    # Rows come grouped by query now: a judged row's rank is its distance from its group's
    # first row. Only judged rows are written; every other retrieved cell is unjudged.
    first = np.zeros(num_queries + rows.extra, dtype=np.int64)
    starts = run_starts(query)
    first[query[starts]] = starts
    judged_query = query[at]
    rank = at - first[judged_query]
    grades = np.full((num_queries, width), UNJUDGED)
    short = np.flatnonzero(num_ret < width)
    if len(short):
        past = np.arange(width) >= num_ret[short, None]
        grades[short] = np.where(past, NOT_RETRIEVED, UNJUDGED)
    inside = rank < width
    grades[judged_query[inside], rank[inside]] = rows.grade[inside]
    scores = None
    if keep_scores:  # tied rows share a score, so the tie moves above leave it right
        scores = np.full((num_queries, width), np.nan)
        every_rank = np.arange(len(query)) - first[query]
        kept = (query < num_queries) & (every_rank < width)
        scores[query[kept], every_rank[kept]] = score[kept]

    missing = tuple(str(q) for q in labelled[num_ret == 0])
    return RankedJudgments(
        labelled,
        grades,
        num_ret,
        qrels.query,
        qrels.grade,
        _ideal_grades(qrels, num_queries, depth),
        missing,
        rows.ignored,
        scores,
    )


def _run_rows(run: Run, qrels: Qrels) -> _Rows:
    """Rows of the labelled queries with their grades, joined on integer keys: the qrels'
    (query, doc) keys are looked up in the run's sorted keys (`Run.keys`), which the
    duplicate check already built, and each hit is confirmed on the doc id's bytes."""
    to_labelled = positions(run.query_ids, qrels.position)
    doc_bytes = run.doc_bytes
    judged = np.zeros(0, dtype=np.int64)
    grade = np.zeros(0)
    if len(run) and len(qrels):
        judged, judged_qrels = _find_judged(run, qrels)
        grade = qrels.grade[judged_qrels]
    unlabelled = np.flatnonzero(to_labelled < 0)
    ignored = tuple(str(q) for q in run.query_ids[unlabelled])
    extra = 0
    if len(unlabelled):
        dropped = int(np.bincount(run.query, minlength=len(to_labelled))[unlabelled].sum())
        if dropped * 4 < len(run):  # a few rows: rank them under codes of their own
            extra = len(unlabelled)
            to_labelled[unlabelled] = len(qrels.query_ids) + np.arange(extra)
    same_codes = np.array_equal(to_labelled, np.arange(len(to_labelled)))
    query = run.query if same_codes else to_labelled[run.query]  # (only read below)
    score = run.score
    kept: IntArray | None = None
    if not (query >= 0).all():
        kept = np.flatnonzero(query >= 0)
        query, score = query[kept], score[kept]
        judged = np.searchsorted(kept, judged)  # judged rows are labelled: all kept

    def docs(rows: IntArray) -> npt.NDArray[np.bytes_]:
        return doc_bytes.fixed(rows if kept is None else kept[rows])

    return _Rows(query, score, judged, grade, docs, ignored, extra)


def _find_judged(run: Run, qrels: Qrels) -> tuple[IntArray, IntArray]:
    """(run row, qrels row) of every judged (query, doc) the run retrieved."""
    query = positions(qrels.query_ids, run.query_ids)[qrels.query]
    judged = np.flatnonzero(query >= 0)
    doc_bytes = qrels.doc_bytes
    wanted = pair_keys(query[judged], doc_bytes.hashes()[judged])
    ordered = run.keys
    bits = np.uint64(row_bits(len(ordered)))
    low = (np.uint64(1) << bits) - np.uint64(1)
    wanted >>= bits
    # Sorted needles walk the sorted keys in one direction: far fewer cache misses.
    by_key = np.argsort(wanted)
    wanted, judged = wanted[by_key], judged[by_key]
    at = np.searchsorted(ordered, wanted << bits)
    found_run: list[IntArray] = []
    found_qrels: list[IntArray] = []
    # Each candidate is checked exactly; a key shared by other docs moves on to the next one.
    while len(at):
        inside = at < len(ordered)
        at, wanted, judged = at[inside], wanted[inside], judged[inside]
        same = (ordered[at] >> bits) == wanted
        at, wanted, judged = at[same], wanted[same], judged[same]
        rows = (ordered[at] & low).astype(np.int64)
        match = (run.query[rows] == query[judged]) & run.doc_bytes.equal(rows, doc_bytes, judged)
        found_run.append(rows[match])
        found_qrels.append(judged[match])
        miss = ~match
        at, wanted, judged = at[miss] + 1, wanted[miss], judged[miss]
    if not found_run:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(found_run), np.concatenate(found_qrels)


def _mapping_rows(run: ResultsMapping, qrels: Qrels) -> _Rows:
    """Rows straight from `{query: {doc: score}}`: each score and grade is read once, in C
    loops, and doc ids are touched only through the small per-query judgment dicts."""
    position = qrels.position
    judged = qrels.by_query
    kept = [(position[q], results) for q, results in run.items() if q in position]
    counts = np.fromiter(map(len, (results for _, results in kept)), np.int64, len(kept))
    total = int(counts.sum())
    try:
        score = np.fromiter(
            chain.from_iterable(results.values() for _, results in kept), np.float64, total
        )
        valid = bool(np.isfinite(score).all())
    except (TypeError, ValueError):
        valid = False
    if not valid:  # the exact reader names the offending entry
        return _run_rows(run_from_dict(run), qrels)
    grade = np.fromiter(
        chain.from_iterable(map(judged[q].get, results, repeat(UNJUDGED)) for q, results in kept),
        np.float64,
        total,
    )
    graded = np.flatnonzero(~np.isnan(grade))
    query = np.repeat(np.fromiter((q for q, _ in kept), np.int64, len(kept)), counts)
    starts = np.cumsum(counts) - counts

    def docs(rows: IntArray) -> list[str]:
        slots = np.searchsorted(starts, rows, side="right") - 1
        cut = np.flatnonzero(np.diff(slots)) + 1
        out: list[str] = []
        for slot_rows in np.split(rows, cut):
            slot = int(np.searchsorted(starts, slot_rows[0], side="right") - 1)
            keys = list(kept[slot][1])
            out.extend(map(keys.__getitem__, (slot_rows - starts[slot]).tolist()))
        return out

    ignored = tuple(q for q in run if q not in position)
    return _Rows(query, score, graded, grade[graded], docs, ignored)


def ranking_order(
    query: IntArray,
    score: FloatArray,
    docs: Callable[[IntArray], list[str] | npt.NDArray[np.bytes_]],
) -> tuple[IntArray | None, tuple[IntArray, IntArray] | None]:
    """The row order grouping queries with score descending (None: already so, as run files
    usually are), and the moves `(positions, sources)` that then put tied scores in doc id
    descending order (None: no tie out of order). Only tied rows' doc ids are fetched.
    """
    if len(query) < 2:
        return None, None
    same = query[1:] == query[:-1]
    groups = np.count_nonzero(np.bincount(query))
    grouped = len(same) - np.count_nonzero(same) + 1 == groups
    order: IntArray | None = None
    if not grouped or bool(np.any(same & ~(score[1:] <= score[:-1]))):
        distinct, inverse = np.unique(score, return_inverse=True)
        descending = len(distinct) - 1 - inverse.reshape(-1)
        order = np.argsort(query * len(distinct) + descending, kind="stable")
        query, score = query[order], score[order]
        same = query[1:] == query[:-1]
    tied = same & (score[1:] == score[:-1])
    if not tied.any():
        return order, None
    member = np.zeros(len(tied) + 1, dtype=bool)
    member[1:] |= tied
    member[:-1] |= tied
    rows = np.flatnonzero(member)
    # Fixed-width unicode or UTF-8 bytes arrays sort in C, both in code point order (as
    # Python's str and trec_eval's strcmp on UTF-8 bytes).
    fetched = docs(rows if order is None else order[rows])
    names = fetched if isinstance(fetched, np.ndarray) else np.array(fetched, dtype=str)
    group = np.cumsum((rows == 0) | ~tied[np.maximum(rows - 1, 0)]) - 1
    permuted = _names_descending(names, group)
    moved = np.flatnonzero(permuted != np.arange(len(rows)))
    if len(moved) == 0:
        return order, None
    return order, (rows[moved], rows[permuted[moved]])


def _names_descending(names: npt.NDArray[Any], group: IntArray) -> IntArray:
    """The order that sorts each group of tied rows (`group`: ascending, contiguous) by name
    descending. Most groups are pairs (two docs on one score): a comparison sets their
    order, and only the larger groups are sorted. Groups already in order (a run written in
    rank order, a top k cut from a ranked run) are confirmed by one pass."""
    inside = group[1:] == group[:-1]
    if not bool(np.any(inside & ~(names[1:] < names[:-1]))):
        return np.arange(len(names))
    sizes = np.bincount(group)
    firsts = np.cumsum(sizes) - sizes
    permuted = np.arange(len(names))
    pair = firsts[sizes == 2]
    swapped = pair[names[pair] < names[pair + 1]]
    permuted[swapped] += 1
    permuted[swapped + 1] -= 1
    larger = np.flatnonzero(sizes[group] > 2)
    if len(larger):
        distinct, inverse = np.unique(names[larger], return_inverse=True)
        descending = len(distinct) - 1 - inverse.reshape(-1)
        order = np.argsort(group[larger] * len(distinct) + descending, kind="stable")
        permuted[larger] = larger[order]
    return permuted


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
