"""A re-chunked corpus gated: each side scored against the labels anchored to its own chunking."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from retrieval_gate.core.ids import object_array
from retrieval_gate.core.qrels import Qrels
from retrieval_gate.core.wording import plural
from retrieval_gate.datasets import Dataset
from retrieval_gate.datasets.anchors import Anchor
from retrieval_gate.datasets.label_drift import (
    ANCHORED,
    Chunking,
    LabelDrift,
    drift_counts,
    label_drift,
)
from retrieval_gate.errors import NotComparableError
from retrieval_gate.gate.baseline.comparable import rescored_baseline
from retrieval_gate.gate.baseline.record import Baseline
from retrieval_gate.metrics.parse import reads_scores

BEFORE = " (before the re-chunk)"
"""Appended to a reference id the current chunking gives to other text: the two sides' ids
are one space in the labels, and the same id must not name two texts there."""
Pairs = dict[tuple[str, str], float]
"""(query id, doc id) -> grade."""


@dataclass(frozen=True, kw_only=True, eq=False)
class Rechunk:
    """Both records and the labelled set ready to compare across a re-chunk."""

    baseline: Baseline
    """The reference as scored, its top k ids renamed (BEFORE) where the current chunking
    gives the id to other text."""
    current: Baseline
    """The current record re-scored under the labels anchored to its own chunking."""
    dataset: Dataset
    """The labelled set with both sides' labels in one id space (the reference's renamed as
    its top k): a chunk one side judged and the other did not is a label hole of that side."""
    drift: tuple[LabelDrift, ...]
    note: str
    """How many labels each side anchored, for the report."""


def recorded_anchors(
    dataset: Dataset, top_k: Mapping[str, Iterable[str]]
) -> dict[str, Anchor] | None:
    """The anchors a record keeps: each chunk judged or in a top k; None when the corpus is
    not chunked. A later chunking's labels are found from them (`rechunked`)."""
    if dataset.anchors is None:
        return None
    wanted = set(dataset.qrels.docs.tolist())
    for docs in top_k.values():
        wanted.update(docs)
    return {chunk: a for chunk, a in dataset.anchors.anchors.items() if chunk in wanted}


def label_drift_since(baseline: Baseline, dataset: Dataset) -> tuple[LabelDrift, ...] | None:
    """Each label of `dataset` against its current chunking, anchored where the baseline's
    chunking had it; None when either side is not chunked or the baseline has no anchors."""
    if baseline.chunk_anchors is None or dataset.anchors is None or dataset.corpus is None:
        return None
    chunking = Chunking(dataset.corpus, dataset.anchors)
    return label_drift(dataset.qrels, baseline.chunk_anchors, chunking)


def rechunked(
    baseline: Baseline, current: Baseline, dataset: Dataset, *, llm_labels: bool = False
) -> Rechunk | None:
    """The comparison across a re-chunk: the reference kept as scored against its labels,
    the current side re-scored from its top k against the labels whose judged text is one
    of its chunks' whole text (valid, re-anchorable); merged, split and orphaned labels are
    its label holes, never graded. None when no label drifted (or nothing is chunked): the
    corpus check (`corpus_changes`) decides then. NotComparableError when a metric reads the
    retriever's scores, which the records do not keep to re-score with, or with `llm_labels`
    (gate.labels human+llm): the judge's layer is keyed by chunk id, not anchored."""
    anchors, corpus = baseline.chunk_anchors, dataset.corpus
    if anchors is None or dataset.anchors is None or corpus is None:
        return None
    chunking = Chunking(corpus, dataset.anchors)
    drift = label_drift(dataset.qrels, anchors, chunking)
    if all(row.drift.kind == "valid" for row in drift):
        return None
    refuse_scored(baseline, "the corpus was re-chunked since the baseline")
    if llm_labels:
        raise NotComparableError(
            "the corpus was re-chunked since the baseline, and gate.labels human+llm reads the "
            "judge's labels by chunk id: they do not follow a re-chunk. Gate the change with "
            "people's labels (gate.labels: human), or recreate the baseline on the new chunking "
            "and judge it again (`retrieval-gate judge`)"
        )
    after: Pairs = {}
    for row in drift:
        if row.drift.kind in ANCHORED:
            _keep_highest(after, (row.query_id, row.drift.chunks[0]), row.grade)
    named = {row.doc_id for row in drift} | _ids(baseline.top_k) | _ids(baseline.candidates)
    renamed = {
        doc: renamed_id(doc, corpus)
        for doc in sorted(named)
        if doc in corpus and chunking.drift(doc, anchors.get(doc)).kind != "valid"
    }
    before: Pairs = {}
    for row in drift:
        _keep_highest(before, (row.query_id, renamed.get(row.doc_id, row.doc_id)), row.grade)
    both = two_sided(dataset, before, after)
    scored = same_fingerprints(rescored_baseline(current, both), current)
    reference = dataclasses.replace(
        baseline,
        top_k={q: tuple(renamed.get(d, d) for d in docs) for q, docs in baseline.top_k.items()},
        candidates=None
        if baseline.candidates is None
        else {q: tuple(renamed.get(d, d) for d in docs) for q, docs in baseline.candidates.items()},
    )
    note = anchored_note(drift)
    if current.repeats is not None:
        note += (
            "; the current side's repeated runs are its first run's top k re-scored (the "
            "others keep no top k): their noise is not measured"
        )
    return Rechunk(baseline=reference, current=scored, dataset=both, drift=drift, note=note)


def anchored_note(drift: Sequence[LabelDrift]) -> str:
    """How many labels each side anchored, and what the others are."""
    counts = drift_counts(drift)
    anchored = counts["valid"] + counts["re-anchorable"]
    others = len(drift) - anchored
    holes = ", ".join(
        f"{counts[kind]} {kind}" for kind in ("merged", "split", "orphaned") if counts[kind]
    )
    return (
        f"the corpus was re-chunked since the baseline: the baseline's chunking anchors all "
        f"{plural(len(drift), 'label')}, the current one {anchored} ({counts['valid']} valid, "
        f"{counts['re-anchorable']} re-anchorable)"
        + (
            f"; the other {others} ({holes}) are label holes for the current side, never "
            "graded: `retrieval-gate label-drift` lists them and queues them for labelling"
            if others
            else ""
        )
    )


def refuse_scored(baseline: Baseline, why: str) -> None:
    """NotComparableError when a metric reads the retriever's scores: a record keeps
    rankings, not scores, so such a metric cannot be re-scored under other labels."""
    scored = [m for m in baseline.fingerprints.metrics if reads_scores(m)]
    if scored:
        raise NotComparableError(
            f"{why}, and {', '.join(scored)} {'reads' if len(scored) == 1 else 'read'} the "
            "retriever's scores, which the records do not keep: they cannot be re-scored under "
            "the labels anchored to each chunking. Gate without them, or recreate the baseline "
            "with `retrieval-gate baseline --force`"
        )


def renamed_id(doc: str, taken: Mapping[str, object]) -> str:
    """`doc` + BEFORE, longer still in the unlikely case a corpus holds that id."""
    name = doc + BEFORE
    while name in taken:
        name += "'"
    return name


def two_sided(dataset: Dataset, before: Pairs, after: Pairs) -> Dataset:
    """`dataset` with the judgments of both sides (the highest grade where both judged a
    pair), its fingerprints kept: the same labelled set, anchored to two chunkings."""
    rows = dict(before)
    for key, grade in after.items():
        _keep_highest(rows, key, grade)
    query_ids = dataset.qrels.query_ids
    position = dataset.qrels.position
    ordered = sorted(rows.items(), key=lambda item: (position[item[0][0]], item[0][1]))
    qrels = Qrels(
        query_ids,
        np.asarray([position[q] for (q, _), _ in ordered], dtype=np.int64),
        object_array([d for (_, d), _ in ordered]),
        np.asarray([grade for _, grade in ordered], dtype=np.float64),
        dataset.qrels.source,
    )
    both = dataclasses.replace(dataset, qrels=qrels)
    # cached_property values live in the instance dict: set, they are not recomputed.
    both.__dict__["fingerprint"] = dataset.fingerprint
    both.__dict__["queries_fingerprint"] = dataset.queries_fingerprint
    return both


def same_fingerprints(record: Baseline, like: Baseline) -> Baseline:
    """`record` re-scored, with `like`'s fingerprints: the same run, whose labels were
    anchored anew. It has no repeats: only the first run's top k is kept to re-score."""
    return dataclasses.replace(record, fingerprints=like.fingerprints)


def _keep_highest(pairs: Pairs, key: tuple[str, str], grade: float) -> None:
    if key not in pairs or grade > pairs[key]:
        pairs[key] = grade


def _ids(top: Mapping[str, Sequence[str]] | None) -> set[str]:
    return {doc for docs in top.values() for doc in docs} if top is not None else set()
