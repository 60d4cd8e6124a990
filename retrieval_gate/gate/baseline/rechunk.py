"""A re-chunked corpus gated: each side scored against the labels anchored to its own chunking."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from retrieval_gate.core.ids import object_array
from retrieval_gate.core.judge_identity import JudgeIdentity
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
    same_text,
)
from retrieval_gate.errors import NotComparableError
from retrieval_gate.gate.baseline.comparable import rescored_baseline
from retrieval_gate.gate.baseline.record import Baseline
from retrieval_gate.metrics.parse import reads_scores

BEFORE = " (before the re-chunk)"
"""Appended to a reference id the current chunking gives to other text: the two sides' ids
are one space in the labels, and the same id must not name two texts there (`one_id_space`)."""
Pairs = dict[tuple[str, str], float]
"""(query id, doc id) -> grade."""


@dataclass(frozen=True, kw_only=True, eq=False)
class Rechunk:
    """Both records and the labelled set ready to compare across a re-chunk."""

    baseline: Baseline
    """The reference as scored, its top k ids renamed into one id space with the current
    chunking's (`one_id_space`)."""
    current: Baseline
    """The current record re-scored under the labels anchored to its own chunking."""
    dataset: Dataset
    """The labelled set with both sides' labels in one id space (the reference's renamed as
    its top k): a chunk one side judged and the other did not is a label hole of that side."""
    drift: tuple[LabelDrift, ...]
    note: str
    """How many labels each side anchored, for the report."""
    chunking: Chunking
    """The current side's chunking."""
    anchors: Mapping[str, Anchor]
    """The reference's chunking: the baseline's recorded anchors."""
    renamed: Mapping[str, str]
    """Reference id -> its name in the labels' one id space (`one_id_space`)."""


@dataclass(frozen=True)
class JudgedText:
    """One grade of the judge's layer and the text it read: `anchor` as the row recorded it
    (None: written before anchors were, or not a chunk)."""

    query: str
    doc: str
    grade: float
    anchor: Anchor | None
    identity: JudgeIdentity


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


def rechunked(baseline: Baseline, current: Baseline, dataset: Dataset) -> Rechunk | None:
    """The comparison across a re-chunk: the reference kept as scored against its labels,
    the current side re-scored from its top k against the labels whose judged text is one
    of its chunks' whole text (valid, re-anchorable); merged, split and orphaned labels are
    its label holes, never graded. None when no label drifted (or nothing is chunked): the
    corpus check (`corpus_changes`) decides then. NotComparableError when a metric reads the
    retriever's scores, which the records do not keep to re-score with. The judge's labels
    (gate.labels human+llm) follow the re-chunk apart: `judge_across`."""
    anchors, corpus = baseline.chunk_anchors, dataset.corpus
    if anchors is None or dataset.anchors is None or corpus is None:
        return None
    chunking = Chunking(corpus, dataset.anchors)
    drift = label_drift(dataset.qrels, anchors, chunking)
    if all(row.drift.kind == "valid" for row in drift):
        return None
    refuse_scored(baseline, "the corpus was re-chunked since the baseline")
    after: Pairs = {}
    for row in drift:
        if row.drift.kind in ANCHORED:
            _keep_highest(after, (row.query_id, row.drift.chunks[0]), row.grade)
    named = {row.doc_id for row in drift} | _ids(baseline.top_k) | _ids(baseline.candidates)
    renamed = one_id_space(named, anchors, chunking, corpus)
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
    return Rechunk(
        baseline=reference, current=scored, dataset=both, drift=drift, note=note,
        chunking=chunking, anchors=anchors, renamed=renamed,
    )  # fmt: skip


def judge_across(
    texts: Sequence[JudgedText], rechunk: Rechunk
) -> tuple[dict[tuple[str, str], JudgedText], str]:
    """The judge's grades on both sides of a re-chunk, in the labels' id space: each grade
    on the reference's chunk and on the current side's chunk whose whole text is the text it
    read (its recorded anchor, else where the baseline's chunking had its doc). A grade whose
    text is no chunk's whole text on a side grades nothing there: a label hole of that side,
    for the judge's step or the bounds. Where two grades land on one pair, the higher (then
    the first) is kept; a grade stays the judge's, beside people's. Also the note saying how
    many each side anchored."""
    same: dict[tuple[str, int, str], list[tuple[int, str]]] = {}
    for held, a in rechunk.anchors.items():
        same.setdefault((a.source, a.end - a.start, a.hash), []).append((a.start, held))
    found: dict[tuple[str, str], JudgedText] = {}
    counts = [0, 0]
    for text in texts:
        anchor = text.anchor if text.anchor is not None else rechunk.anchors.get(text.doc)
        drift = rechunk.chunking.drift(text.doc, anchor)
        sides = (
            _reference_chunk(text.doc, anchor, rechunk, same),
            drift.chunks[0] if drift.kind in ANCHORED else None,
        )
        for side, chunk in enumerate(sides):
            if chunk is None:
                continue
            counts[side] += 1
            key = (text.query, chunk)
            if key not in found or text.grade > found[key].grade:
                found[key] = text
    note = (
        f"the judge's layer across the re-chunk: of its {plural(len(texts), 'grade')}, the "
        f"baseline's chunking anchors {counts[0]} and the current one {counts[1]}; a pair "
        "whose text no grade read is a label hole of its side (graded by the judge's step, "
        "else bounded)"
    )
    return found, note


def _reference_chunk(
    doc: str,
    anchor: Anchor | None,
    rechunk: Rechunk,
    same: Mapping[tuple[str, int, str], list[tuple[int, str]]],
) -> str | None:
    """The reference's chunk (as the labels name it) whose whole text `anchor` is: `doc`
    itself when it is, else the one starting nearest the anchor's offset (then the first
    id); None when none is. An unanchored grade keeps its id where the current chunking did
    not give it to other text."""
    if anchor is None:
        return doc if doc not in rechunk.renamed else None
    held = rechunk.anchors.get(doc)
    if held is not None and same_text(held, anchor):
        return rechunk.renamed.get(doc, doc)
    found = same.get((anchor.source, anchor.end - anchor.start, anchor.hash))
    if not found:
        return None
    _, chunk = min(found, key=lambda f: (abs(f[0] - anchor.start), f[0], f[1]))
    return rechunk.renamed.get(chunk, chunk)


def pairs_qrels(
    query_ids: np.ndarray, pairs: Mapping[tuple[str, str], float], source: str
) -> Qrels:
    """`pairs` as qrels over `query_ids` (sorted, as a Dataset's), in query then doc order."""
    position = {q: i for i, q in enumerate(query_ids.tolist())}
    ordered = sorted(
        ((key, grade) for key, grade in pairs.items() if key[0] in position),
        key=lambda item: (position[item[0][0]], item[0][1]),
    )
    return Qrels(
        query_ids,
        np.asarray([position[q] for (q, _), _ in ordered], dtype=np.int64),
        object_array([d for (_, d), _ in ordered]),
        np.asarray([grade for _, grade in ordered], dtype=np.float64),
        source,
    )


def one_id_space(
    named: Iterable[str],
    anchors: Mapping[str, Anchor],
    chunking: Chunking,
    corpus: Mapping[str, object],
) -> dict[str, str]:
    """The reference's ids renamed into one id space with the current chunking's: a chunk
    whose text is a current chunk's whole text takes that chunk's id (one text, one id, so
    a label on it counts once in each side's ideal ranking and recall); one the current
    chunking gives to other text takes BEFORE. Valid ids and the rest keep theirs."""
    renamed: dict[str, str] = {}
    taken: set[str] = set()
    for doc in sorted(named):
        drift = chunking.drift(doc, anchors.get(doc))
        if drift.kind == "valid":
            taken.add(doc)
    for doc in sorted(named):
        drift = chunking.drift(doc, anchors.get(doc))
        if drift.kind == "re-anchorable" and drift.chunks[0] not in taken:
            renamed[doc] = drift.chunks[0]
            taken.add(drift.chunks[0])
        elif drift.kind != "valid" and doc in corpus:
            renamed[doc] = renamed_id(doc, corpus)
    return renamed


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
    qrels = pairs_qrels(dataset.qrels.query_ids, rows, dataset.qrels.source)
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
