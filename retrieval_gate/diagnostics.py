"""Per-query diagnostics of a comparison: queries that moved, hits lost, judged@k, label gaps."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from retrieval_gate.baseline import Baseline
from retrieval_gate.compare import Comparison
from retrieval_gate.datasets import Dataset
from retrieval_gate.ids import FloatArray, IntArray, object_array
from retrieval_gate.qrels import Qrels
from retrieval_gate.run import Run
from retrieval_gate.top_k import listed_run

BoolArray = npt.NDArray[np.bool_]

QUERY_CHANGES = 10
"""Most-regressed queries listed in a result."""
JUDGED_DROP = 0.01
"""The fall of mean judged@k on a failing check's queries (1 point), with a rise of the share of
unjudged documents in their top k by as much, from which the reports call the failure a possible
labelling gap. Unjudged documents count as non-relevant, so a retriever that ranks documents
nobody judged loses points whether or not they are relevant. judged@k is trec_eval's (1 - the
unjudged share), so a retriever returning fewer documents does not lower it and, from
`judged_at_k`, the two conditions agree; `labelling_gaps` keeps both for records whose judged
and unjudged shares were measured apart. A smaller change (less than one document in ten
queries at k = 10) is not worth the note. The check fails either way; the note only says
where to look before blaming the retriever."""


@dataclass(frozen=True)
class DocMove:
    """Where a relevant document sat in the baseline's and the current top k (None: absent)."""

    doc_id: str
    grade: float
    before: int | None
    after: int | None


@dataclass(frozen=True)
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


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class LabellingGap:
    """A failing check whose queries' mean judged@k fell by JUDGED_DROP or more as unjudged
    documents entered their top k: part of the drop may be documents nobody judged rather than
    a worse retriever."""

    metric: str
    slice: str
    judged_before: float
    """Mean judged@k of the baseline's top k over the slice's queries."""
    judged_after: float
    """Mean judged@k of the current top k over the slice's queries."""


@dataclass(frozen=True)
class GradedTopK:
    """A record's stored top k over the labelled queries as a run ranked as listed
    (`top_k.listed_run`), with each row's grade in the qrels (NaN: not in the query's qrels):
    every diagnostic below is a vectorised pass over these rows."""

    run: Run
    grade: FloatArray

    @property
    def unjudged(self) -> BoolArray:
        """Rows the judged@k metric counts as unjudged: no grade, or a grade < 0."""
        return ~(self.grade >= 0)  # NaN compares false

    def per_query(self, rows: BoolArray) -> IntArray:
        """How many of each query's rows `rows` selects."""
        return np.bincount(self.run.query[rows], minlength=len(self.run.query_ids))


def graded_top_k(
    top_k: Mapping[str, Sequence[str]], query_ids: Sequence[str], qrels: Qrels
) -> GradedTopK:
    """A record's `top_k` over the sorted labelled `query_ids`, graded by `qrels`."""
    run = listed_run(top_k, query_ids)
    position, by_query = qrels.position, qrels.by_query
    none: dict[str, float] = {}
    lists = [top_k.get(query_id, ()) for query_id in query_ids]
    grades = [by_query[position[q]] if q in position else none for q in query_ids]
    grade = np.fromiter(
        (
            graded.get(doc, math.nan)
            for graded, docs in zip(grades, lists, strict=True)
            for doc in docs
        ),
        dtype=np.float64,
        count=len(run),
    )
    return GradedTopK(run, grade)


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
    known = set(zip(before.run.query[old].tolist(), before.run.docs[old].tolist(), strict=True))
    fresh = [
        query
        for query, doc in zip(
            after.run.query[new].tolist(), after.run.docs[new].tolist(), strict=True
        )
        if (query, doc) not in known
    ]
    names = after.run.query_ids
    return Unjudged(
        len(after.run),
        int(new.sum()),
        len(fresh),
        tuple(names[query] for query in sorted(set(fresh))),
        int(old.sum()),
        _mean(judged_before),
        _mean(judged_after),
    )


def labelling_gaps(
    failures: Sequence[Comparison],
    slices: Mapping[str, IntArray],
    judged: tuple[FloatArray, FloatArray],
    unjudged: tuple[FloatArray, FloatArray],
    explainable: Set[tuple[str, str]],
) -> tuple[LabellingGap, ...]:
    """Each failing check whose queries' mean judged@k fell by JUDGED_DROP or more while their
    share of unjudged documents rose by as much (`judged_drops`), and whose verdict the
    unjudged documents could change (`explainable`: (metric, slice))."""
    return tuple(
        LabellingGap(failure.metric, failure.slice, before, after)
        for failure, before, after in judged_drops(failures, slices, judged, unjudged)
        if (failure.metric, failure.slice) in explainable
    )


def judged_drops(
    failures: Sequence[Comparison],
    slices: Mapping[str, IntArray],
    judged: tuple[FloatArray, FloatArray],
    unjudged: tuple[FloatArray, FloatArray],
) -> list[tuple[Comparison, float, float]]:
    """(failure, judged@k before, after) of the failing checks whose queries' mean judged@k
    fell by JUDGED_DROP or more while their share of unjudged documents rose by as much
    (`judged` and `unjudged`: before, after): the only ones that can be labelling gaps."""
    found = []
    for failure in failures:
        rows = slices[failure.slice]
        if not len(rows):
            continue
        before, after = _mean(judged[0][rows]), _mean(judged[1][rows])
        entered = _mean(unjudged[1][rows]) - _mean(unjudged[0][rows])
        # Rounded: means of k-ths can miss an exact 1-point change by a float rounding error.
        if round(before - after, 12) >= JUDGED_DROP and round(entered, 12) >= JUDGED_DROP:
            found.append((failure, before, after))
    return found


def explainable_failures(
    failures: Sequence[Comparison],
    before: GradedTopK,
    after: GradedTopK,
    qrels: Qrels,
    slices: Mapping[str, IntArray],
) -> set[tuple[str, str]]:
    """(metric, slice) of the failing checks that would pass if every document nobody judged
    in either top k were relevant at the highest grade given: only those can be labelling
    gaps. A check that fails even then is a worse retriever, whatever the missing labels say.
    """
    from retrieval_gate.metrics import evaluate, parse_metric
    from retrieval_gate.metrics.diversity import DIVERSITY

    # Diversity measures judge docs per subtopic: "relevant at the highest grade" has no
    # subtopic to be relevant to, so their failures are never claimed as labelling gaps.
    failures = [f for f in failures if parse_metric(f.metric).name not in DIVERSITY]
    if not failures:
        return set()
    optimistic = _optimistic(qrels, (before, after))
    metrics = sorted({failure.metric for failure in failures})
    old_scores, new_scores = (evaluate(top_k.run, optimistic, metrics) for top_k in (before, after))
    if old_scores.query_ids != tuple(after.run.query_ids.tolist()):
        return set()  # not aligned with the slices: claim nothing
    found = set()
    for failure in failures:
        rows = slices[failure.slice]
        if not len(rows):
            continue
        old = _mean(old_scores.values[failure.metric][rows])
        new = _mean(new_scores.values[failure.metric][rows])
        within = failure.max_drop is None or old - new <= failure.max_drop + 1e-12
        above = failure.floor is None or new >= failure.floor - 1e-12
        if within and above:
            found.add((failure.metric, failure.slice))
    return found


def _optimistic(qrels: Qrels, top_ks: Sequence[GradedTopK]) -> Qrels:
    """`qrels` with every doc of `top_ks` that nobody judged (absent, or graded < 0) judged
    relevant at the highest grade given (at least 1)."""
    best = max(float(qrels.grade.max()) if len(qrels) else 1.0, 1.0)
    added = dict.fromkeys(
        pair
        for top_k in top_ks
        for pair in zip(
            top_k.run.query_ids[top_k.run.query[top_k.unjudged]].tolist(),
            top_k.run.docs[top_k.unjudged].tolist(),
            strict=True,
        )
    )
    # A row graded < 0 (pooled, not judged) that a top k holds is replaced by the added one.
    kept = qrels.grade >= 0
    names = qrels.query_ids
    for i in np.flatnonzero(~kept).tolist():
        kept[i] = (names[qrels.query[i]], qrels.docs[i]) not in added
    position = qrels.position
    codes = np.fromiter((position[q] for q, _ in added), np.int64, len(added))
    all_docs = object_array([*qrels.docs[kept].tolist(), *(d for _, d in added)])
    grade = np.concatenate([qrels.grade[kept], np.full(len(added), best)])
    return Qrels(
        qrels.query_ids, np.concatenate([qrels.query[kept], codes]), all_docs, grade, qrels.source
    )


def _mean(values: FloatArray) -> float:
    return float(values.mean()) if len(values) else 0.0


def _relevant(dataset: Dataset, query_id: str) -> dict[str, float]:
    judged = dataset.qrels.by_query[dataset.qrels.position[query_id]]
    return {doc: grade for doc, grade in judged.items() if grade >= 1}


def query_changes(
    baseline: Baseline, current: Baseline, dataset: Dataset, metric: str
) -> tuple[QueryChange, ...]:
    before, after = baseline.scores[metric], current.scores[metric]
    order = np.argsort(after - before, kind="stable")
    changes = []
    for i in order[:QUERY_CHANGES].tolist():
        if after[i] >= before[i]:
            break
        query_id = current.query_ids[i]
        old = _positions(baseline.top_k.get(query_id, ()))
        new = _positions(current.top_k.get(query_id, ()))
        moves = tuple(
            DocMove(doc, grade, old.get(doc), new.get(doc))
            for doc, grade in sorted(_relevant(dataset, query_id).items(), key=lambda d: -d[1])
            if old.get(doc) != new.get(doc)
        )
        changes.append(
            QueryChange(
                query_id,
                dataset.query(query_id).text,
                metric,
                float(before[i]),
                float(after[i]),
                moves,
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
