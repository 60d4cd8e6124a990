"""The document-level view of a chunked corpus: rankings and labels rolled up to their sources."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from retrieval_gate.core.wording import plural
from retrieval_gate.datasets import Dataset
from retrieval_gate.datasets.label_drift import LabelDrift
from retrieval_gate.errors import NotComparableError
from retrieval_gate.gate.baseline.comparable import rescored_baseline
from retrieval_gate.gate.baseline.rechunk import (
    Pairs,
    refuse_scored,
    renamed_id,
    same_fingerprints,
    two_sided,
)
from retrieval_gate.gate.baseline.record import Baseline

ROLLED = (
    "the document level: each side's top-k chunks rolled up to their source documents (a "
    "document ranks where its first chunk does) and each label to its chunk's source (a "
    "document's grade is its judged chunks' highest)"
)


def document_level(
    baseline: Baseline,
    current: Baseline,
    dataset: Dataset,
    drift: Sequence[LabelDrift] | None,
    *,
    llm_labels: bool = False,
    why: str = "dataset.level is document",
) -> tuple[Baseline, Baseline, Dataset, tuple[str, ...]]:
    """Both records re-scored on source documents, and the labelled set they are scored with.

    A chunk's source is its anchor's for the baseline's own chunks, and the one its metadata
    names for the current side's (anchored or not); a document that is no chunk is its own
    source. The reference's labels
    roll up as they are; the current side's leave out the labels whose judged text is gone
    (`drift` orphaned: merged and split text is still in the document). A (query, document)
    graded differently on the two sides is renamed on the reference's side, so a document the
    current side lost every judged text of is a label hole there, not a non-relevant hit.
    Unchanged, with no note, when neither side is chunked. NotComparableError with
    `llm_labels` (gate.labels human+llm): the judge's labels are of chunks, not documents;
    `why` begins the one for a metric that reads the retriever's scores.
    """
    now = dataset.anchors.sources if dataset.anchors is not None else {}
    then = baseline.chunk_anchors or {}
    if not now and not then:
        return baseline, current, dataset, ()
    refuse_scored(baseline, why)
    if llm_labels:
        raise NotComparableError(
            "dataset.level document rolls labels up to documents, and gate.labels human+llm "
            "reads the judge's labels of chunks: gate at dataset.level chunk, or with people's "
            "labels alone (gate.labels: human)"
        )

    def source_now(chunk: str) -> str:
        return now.get(chunk, chunk)  # the source it names, anchored or not

    def source_then(chunk: str) -> str:
        return then[chunk].source if chunk in then else source_now(chunk)

    orphaned = {(row.query_id, row.doc_id) for row in drift or () if row.drift.kind == "orphaned"}
    qrels = dataset.qrels
    before: Pairs = {}
    after: Pairs = {}
    for query, chunk, grade in zip(
        qrels.query_ids[qrels.query].tolist(),
        qrels.docs.tolist(),
        qrels.grade.tolist(),
        strict=True,
    ):
        key = (query, source_then(chunk))
        before[key] = max(before.get(key, grade), grade)
        if (query, chunk) not in orphaned:
            after[key] = max(after.get(key, grade), grade)
    differ = {key for key, grade in before.items() if after.get(key) != grade}
    taken = dict.fromkeys(source for _, source in after)
    renamed = {key: renamed_id(key[1], taken) for key in sorted(differ)}
    both = two_sided(dataset, {(k[0], renamed.get(k, k[1])): g for k, g in before.items()}, after)

    def rolled(record: Baseline, source: Callable[[str], str], rename: bool) -> Baseline:
        def up(query: str, ranked: Sequence[str]) -> tuple[str, ...]:
            docs = dict.fromkeys(source(chunk) for chunk in ranked)  # first occurrence ranks
            if rename:
                return tuple(renamed.get((query, doc), doc) for doc in docs)
            return tuple(docs)

        return dataclasses.replace(
            record,
            top_k=_up(record.top_k, up),
            candidates=None if record.candidates is None else _up(record.candidates, up),
        )

    reference = same_fingerprints(
        rescored_baseline(rolled(baseline, source_then, True), both), baseline
    )
    scored = same_fingerprints(rescored_baseline(rolled(current, source_now, False), both), current)
    notes = [ROLLED]
    noisy = [side for side, r in (("the baseline's", baseline), ("the current side's", current))
             if _varied(r)]  # fmt: skip
    if noisy:
        notes.append(
            f"{' and '.join(noisy)} repeated runs are rolled up from the first "
            "run's top k (the others keep no top k): the run noise they showed is not allowed "
            "for at the document level; gate at dataset.level chunk to allow for it"
        )
    if differ:
        notes.append(
            f"{plural(len(differ), '(query, document) label')} lost judged text on the current "
            "side (orphaned chunks): label holes for it there"
        )
    return reference, scored, both, tuple(notes)


def _varied(record: Baseline) -> bool:
    """Whether `record`'s repeated runs differed: the noise a roll-up from one top k loses."""
    return record.repeats is not None and bool(record.repeats.varying)


def _up(
    top: Mapping[str, Sequence[str]], up: Callable[[str, Sequence[str]], tuple[str, ...]]
) -> dict[str, tuple[str, ...]]:
    return {query: up(query, ranked) for query, ranked in top.items()}
