"""Which stage of a two-stage retriever lost each relevant document the reference ranked."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from retrieval_gate.config.check_keys import kind_of
from retrieval_gate.core.ids import IntArray
from retrieval_gate.core.qrels import Qrels
from retrieval_gate.metrics import parse_metric

QUERIES_SHOWN = 20
"""Queries listed with their lost documents (those that lost most first)."""
DOCS_SHOWN = 5
"""Doc ids listed per stage and query; the counts hold them all."""


@dataclass(frozen=True, kw_only=True)
class StageLoss:
    """One check's lost relevant documents, by the stage that lost them."""

    metric: str
    slice: str
    first_stage: int
    """Relevant documents of the reference's top k missing from the current candidates."""
    reranker: int
    """Relevant documents among the current candidates that the reranker left out of the top k."""


@dataclass(frozen=True, kw_only=True)
class QueryLoss:
    """One query's lost relevant documents (grade >= 1, top k), by stage; ids bounded."""

    query_id: str
    first_stage: int
    reranker: int
    first_stage_docs: tuple[str, ...]
    """The first DOCS_SHOWN of them, in the reference's order."""
    reranker_docs: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class StageLosses:
    """Every gated final-ranking check's losses by stage, and the queries that lost most."""

    checks: tuple[StageLoss, ...]
    queries: tuple[QueryLoss, ...]
    """At most QUERIES_SHOWN, most lost first; `query_count` counts every query that lost one."""
    query_count: int


def lost_by_stage(
    reference: Mapping[str, Sequence[str]],
    current: Mapping[str, Sequence[str]],
    candidates: Mapping[str, Sequence[str]],
    relevant: Mapping[str, Mapping[str, float]],
    depth: int,
    rel: float,
) -> dict[str, tuple[list[str], list[str]]]:
    """Query -> (lost by the first stage, demoted by the reranker): each document of grade
    >= `rel` in the reference's top `depth` and not in the current top `depth`, in the
    reference's order, is the first stage's loss when the current candidates lack it, else the
    reranker's. Queries that lost none are left out."""
    found = {}
    for query, ranked in reference.items():
        grades = relevant.get(query)
        if not grades:
            continue
        now = set(current.get(query, ())[:depth])
        # Positive grades only (`grades`): rel=0 does not count the documents judged out.
        lost = [
            doc for doc in ranked[:depth] if doc in grades and grades[doc] >= rel and doc not in now
        ]
        if lost:  # candidates are read (decoded, in a record) only for a query that lost one
            kept = set(candidates.get(query, ()))
            found[query] = ([d for d in lost if d not in kept], [d for d in lost if d in kept])
    return found


def stage_losses(
    reference: Mapping[str, Sequence[str]],
    current: Mapping[str, Sequence[str]],
    candidates: Mapping[str, Sequence[str]],
    qrels: Qrels,
    query_ids: Sequence[str],
    checks: Iterable[tuple[str, str]],
    slices: Mapping[str, IntArray],
    k: int,
) -> StageLosses:
    """The losses of every (metric, slice) of `checks` that ranks the final list (not a
    `candidates:` check), each at its own cutoff (at most `k`) and relevance grade (`rel`,
    1 for metrics without one), and per query at `k` and grade 1."""
    relevant = _grades(qrels, query_ids)
    position = {query: i for i, query in enumerate(query_ids)}
    cuts: dict[tuple[int, float], dict[str, tuple[list[str], list[str]]]] = {}

    def losses(depth: int, rel: float) -> dict[str, tuple[list[str], list[str]]]:
        if (depth, rel) not in cuts:
            cuts[depth, rel] = lost_by_stage(reference, current, candidates, relevant, depth, rel)
        return cuts[depth, rel]

    found = []
    for metric, name in checks:
        if kind_of(metric) != "ranking":
            continue
        depth, rel = _cut(metric, k)
        lost = losses(depth, rel)
        first = np.zeros(len(query_ids), dtype=np.int64)
        second = np.zeros(len(query_ids), dtype=np.int64)
        for query, (a, b) in lost.items():
            if query in position:
                first[position[query]], second[position[query]] = len(a), len(b)
        rows = slices[name]
        found.append(
            StageLoss(
                metric=metric,
                slice=name,
                first_stage=int(first[rows].sum()),
                reranker=int(second[rows].sum()),
            )
        )
    per_query = sorted(
        losses(k, 1).items(), key=lambda item: (-len(item[1][0]) - len(item[1][1]), item[0])
    )
    shown = tuple(
        QueryLoss(
            query_id=query,
            first_stage=len(a),
            reranker=len(b),
            first_stage_docs=tuple(a[:DOCS_SHOWN]),
            reranker_docs=tuple(b[:DOCS_SHOWN]),
        )
        for query, (a, b) in per_query[:QUERIES_SHOWN]
    )
    return StageLosses(checks=tuple(found), queries=shown, query_count=len(per_query))


def _cut(metric: str, k: int) -> tuple[int, float]:
    """The depth and relevance grade a metric reads: its cutoff (k when none or deeper) and
    its `rel` parameter (1 for graded metrics such as nDCG, which count any grade >= 1)."""
    spec = parse_metric(metric)
    depth = k if spec.k is None else min(spec.k, k)
    return depth, float(spec.param("rel")) if spec.measure.binary else 1.0


def _grades(qrels: Qrels, queries: Iterable[str]) -> dict[str, dict[str, float]]:
    """Query -> doc -> grade, for the positive grades of `queries`."""
    grades = {}
    for query in queries:
        at = qrels.position.get(query)
        if at is None:
            continue
        judged = {doc: grade for doc, grade in qrels.by_query[at].items() if grade > 0}
        if judged:
            grades[query] = judged
    return grades
