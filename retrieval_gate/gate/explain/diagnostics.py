"""Per-query diagnostics of a comparison: queries that moved, hits lost, judged@k."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from retrieval_gate.core.ids import (
    ByteIds,
    FloatArray,
    IntArray,
    byte_codes,
    object_array,
    positions,
)
from retrieval_gate.core.qrels import Qrels
from retrieval_gate.core.run import Run
from retrieval_gate.datasets import Dataset
from retrieval_gate.gate.baseline.record import Baseline
from retrieval_gate.metrics.top_k import listed_runs

BoolArray = npt.NDArray[np.bool_]

QUERY_CHANGES = 10
"""Most-regressed queries listed in a result."""


@dataclass(frozen=True, kw_only=True)
class DocMove:
    """Where a relevant document sat in the baseline's and the current top k (None: absent)."""

    doc_id: str
    grade: float
    before: int | None
    after: int | None


@dataclass(frozen=True, kw_only=True)
class QueryChange:
    """One query's value of a metric before and after, and its relevant documents' moves."""

    query_id: str
    text: str
    metric: str
    before: float
    after: float
    moves: tuple[DocMove, ...]

    @property
    def delta(self) -> float:
        """after - before."""
        return self.after - self.before


@dataclass(frozen=True, kw_only=True)
class Unjudged:
    """Documents in the current top k that no judgment covers: they count as non-relevant.

    Judged means what the judged@k metric counts: the query's qrels grade the document >= 0
    (a grade < 0 marks a document that was pooled but not judged)."""

    retrieved: int
    """Documents in every query's current top k."""
    unjudged: int
    """Of them, documents not judged for the query."""
    new: int
    """Unjudged documents that were not in the query's baseline top k."""
    queries: tuple[str, ...]
    """Queries with at least one new unjudged document, sorted."""
    baseline_unjudged: int
    """Unjudged documents in the baseline's top k, for comparison."""
    judged_before: float
    """Mean judged@k (k = the config's k) of the baseline's top k over the labelled queries."""
    judged_after: float
    """Mean judged@k of the current top k over the labelled queries."""


@dataclass(frozen=True, kw_only=True)
class GradedTopK:
    """A record's stored top k over the labelled queries as a run ranked as listed
    (`top_k.listed_run`: rows grouped by query code, in rank order), with each row's grade
    in the qrels (NaN: not in the query's qrels) and its doc as a code shared with the record
    it is compared with: every diagnostic below is a vectorised pass over these rows."""

    run: Run
    grade: FloatArray
    doc: IntArray
    """Each row's doc id as a code, equal for equal ids in both records (`graded_top_ks`)."""
    vocabulary: int
    """How many doc codes there are (the distinct ids of both records and the qrels)."""

    @property
    def unjudged(self) -> BoolArray:
        """Rows the judged@k metric counts as unjudged: no grade, or a grade < 0."""
        return ~(self.grade >= 0)  # NaN compares false

    def per_query(self, rows: BoolArray) -> IntArray:
        """How many of each query's rows `rows` selects."""
        return np.bincount(self.run.query[rows], minlength=len(self.run.query_ids))

    def pairs(self, rows: BoolArray) -> IntArray:
        """One integer per (query, doc) of `rows`, equal across the two records compared."""
        return self.run.query[rows] * self.vocabulary + self.doc[rows]


def graded_top_ks(
    before: Mapping[str, Sequence[str]],
    after: Mapping[str, Sequence[str]],
    query_ids: Sequence[str],
    qrels: Qrels,
) -> tuple[GradedTopK, GradedTopK]:
    """Two records' top k over the sorted labelled `query_ids`, graded by `qrels`, their doc
    ids coded alike: `graded_blocks` in one block."""
    old, new, _ = next(graded_blocks(before, after, query_ids, qrels, max(len(query_ids), 1)))
    return old, new


def graded_blocks(
    before: Mapping[str, Sequence[str]],
    after: Mapping[str, Sequence[str]],
    query_ids: Sequence[str],
    qrels: Qrels,
    size: int,
) -> Iterator[tuple[GradedTopK, GradedTopK, Qrels]]:
    """`graded_top_ks` of the sorted `query_ids`, `size` of them at a time, with the qrels of
    each block's queries: each block over its own queries (codes from 0), its doc ids coded
    once for both records and its qrels, each row's grade found by its (query, doc) code among
    the judgments'. Only a block's rows are held, and its sorts stay small."""
    ids = object_array(query_ids)
    # The qrels' rows of the labelled queries, grouped by query code: a block's are a slice.
    query = positions(qrels.query_ids, ids)[qrels.query]
    judged = np.flatnonzero(query >= 0)
    judged = judged[np.argsort(query[judged], kind="stable")]
    cuts = np.searchsorted(query[judged], np.arange(0, max(len(ids), 1) + size, size))
    sides = zip(*(listed_runs(top_k, query_ids, size) for top_k in (before, after)), strict=True)
    for block, (old, new) in enumerate(sides):
        rows = judged[cuts[block] : cuts[block + 1]]
        start = block * size
        judgments = Qrels(
            old.query_ids, query[rows] - start, qrels.doc_bytes.take(rows), qrels.grade[rows]
        )
        yield *_graded(old, new, judgments), judgments


def _graded(first: Run, second: Run, qrels: Qrels) -> tuple[GradedTopK, GradedTopK]:
    """Both runs graded by `qrels` (over the same queries, codes alike)."""
    every = ByteIds.concatenate([first.doc_bytes, second.doc_bytes, qrels.doc_bytes])
    codes = byte_codes(every)
    del every  # the ids' bytes, as long again as the rows: the codes stand for them now
    vocabulary = int(codes.max()) + 1 if len(codes) else 1
    ends = np.cumsum([len(first), len(second)])
    keys = qrels.query * vocabulary + codes[ends[1] :]
    by_key = np.argsort(keys)
    keys, grades = keys[by_key], qrels.grade[by_key]
    graded = []
    for run, doc in zip((first, second), np.split(codes[: ends[1]], ends[:1]), strict=True):
        grade = np.full(len(run), math.nan)
        if len(keys):
            wanted = run.query * vocabulary + doc
            at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
            found = keys[at] == wanted
            grade[found] = grades[at[found]]
        graded.append(GradedTopK(run=run, grade=grade, doc=doc, vocabulary=vocabulary))
    return graded[0], graded[1]


def judged_at_k(top_k: GradedTopK, k: int) -> tuple[FloatArray, FloatArray]:
    """judged@k of each query's stored top k (aligned with its labelled queries) as the
    judged@k metric and trec_eval define it, 1 - unjudged docs / k (ranks a short list leaves
    empty are not unjudged), and the share of unjudged docs, unjudged docs / k."""
    unjudged_at_k = top_k.per_query(top_k.unjudged) / float(k)
    return 1.0 - unjudged_at_k, unjudged_at_k


def unjudged_summary(
    before: GradedTopK, after: GradedTopK, judged_before: FloatArray, judged_after: FloatArray
) -> Unjudged:
    old, new = before.unjudged, after.unjudged
    known = np.sort(before.pairs(old))
    pairs = after.pairs(new)
    at = np.minimum(np.searchsorted(known, pairs), max(len(known) - 1, 0))
    fresh = known[at] != pairs if len(known) else np.ones(len(pairs), dtype=bool)
    fresh_by_query = np.bincount(after.run.query[new][fresh], minlength=len(after.run.query_ids))
    queries = np.flatnonzero(fresh_by_query)
    return Unjudged(
        retrieved=len(after.run),
        unjudged=int(new.sum()),
        new=int(fresh.sum()),
        queries=tuple(after.run.query_ids[queries].tolist()),
        baseline_unjudged=int(old.sum()),
        judged_before=_mean(judged_before),
        judged_after=_mean(judged_after),
    )


def joined_unjudged(
    parts: Sequence[Unjudged], judged_before: FloatArray, judged_after: FloatArray
) -> Unjudged:
    """The summary of blocks of queries (in query order) as one, its means over every query."""
    return Unjudged(
        retrieved=sum(part.retrieved for part in parts),
        unjudged=sum(part.unjudged for part in parts),
        new=sum(part.new for part in parts),
        queries=tuple(query for part in parts for query in part.queries),
        baseline_unjudged=sum(part.baseline_unjudged for part in parts),
        judged_before=_mean(judged_before),
        judged_after=_mean(judged_after),
    )


def _mean(values: FloatArray) -> float:
    return float(values.mean()) if len(values) else 0.0


def _relevant(dataset: Dataset, query_id: str) -> dict[str, float]:
    judged = dataset.qrels.judgments_of(query_id)
    return {doc: grade for doc, grade in judged.items() if grade >= 1}


def query_changes(
    baseline: Baseline, current: Baseline, dataset: Dataset, metric: str
) -> tuple[QueryChange, ...]:
    before, after = baseline.scores[metric], current.scores[metric]
    delta = after - before
    delta = np.where(np.isnan(delta), np.inf, delta)  # undefined on a side: not compared
    order = np.argsort(delta, kind="stable")
    changes = []
    for i in order[:QUERY_CHANGES].tolist():
        if delta[i] >= 0:
            break
        query_id = current.query_ids[i]
        old = _positions(baseline.top_k.get(query_id, ()))
        new = _positions(current.top_k.get(query_id, ()))
        moves = tuple(
            DocMove(doc_id=doc, grade=grade, before=old.get(doc), after=new.get(doc))
            for doc, grade in sorted(_relevant(dataset, query_id).items(), key=lambda d: -d[1])
            if old.get(doc) != new.get(doc)
        )
        changes.append(
            QueryChange(
                query_id=query_id,
                text=dataset.query(query_id).text,
                metric=metric,
                before=float(before[i]),
                after=float(after[i]),
                moves=moves,
            )
        )
    return tuple(changes)


def _positions(docs: Sequence[str]) -> dict[str, int]:
    return {doc: rank for rank, doc in enumerate(docs, 1)}


def hit_changes(before: GradedTopK, after: GradedTopK) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Queries whose top k went from holding a relevant doc to none (lost), and back (gained)."""
    had = before.per_query(before.grade >= 1) > 0
    has = after.per_query(after.grade >= 1) > 0
    names = after.run.query_ids
    lost = tuple(names[np.flatnonzero(had & ~has)].tolist())
    gained = tuple(names[np.flatnonzero(has & ~had)].tolist())
    return lost, gained
