"""A labelled set: its files as read (Labels), and assembled (queries, qrels, corpus, warnings)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from retrieval_gate.core.ids import object_array
from retrieval_gate.core.judgments import Combine, Judgments
from retrieval_gate.core.model import Document, Query
from retrieval_gate.core.qrels import Qrels
from retrieval_gate.core.wording import plural
from retrieval_gate.datasets.anchors import CorpusAnchors

if TYPE_CHECKING:
    from retrieval_gate.datasets.draws import DrawRecord
    from retrieval_gate.readers.subtopics import SubtopicQrels

EXAMPLES = 5
"""Ids quoted in a data warning before it says `and N more`."""
SYNTHETIC = (
    "every query is synthetic (written by an LLM from one document, which is its only judged "
    "relevant one): such queries share words with their source and flatter lexical retrievers "
    "such as BM25; replace them with real queries and human labels as those come"
)


@dataclass(frozen=True)
class DataWarning:
    """A problem in the data, counted, with a few examples; reported, never silently fixed."""

    kind: str
    message: str
    count: int
    examples: tuple[str, ...]

    def __str__(self) -> str:
        shown = ", ".join(self.examples)
        more = (
            f" and {self.count - len(self.examples)} more"
            if self.count > len(self.examples)
            else ""
        )
        return f"{self.message}: {shown}{more}" if shown else self.message


@dataclass(frozen=True, eq=False)
class Labels:
    """A labelled set's files as read: every query and every judgment row, unchecked."""

    queries: Sequence[Query]
    judgments: Judgments
    corpus: Mapping[str, Document] | None
    source: str
    layout: str
    notes: tuple[DataWarning, ...] = ()
    """Warnings the source itself calls for (e.g. a known flaw in a published collection);
    they come first among the Dataset's warnings."""
    subtopics: SubtopicQrels | None = None
    """Judgments per intent (dataset.subtopics), for the diversity metrics."""
    draws: DrawRecord | None = None
    """The draw record beside the qrels file (`datasets.draws`); None: there is none."""
    anchors: CorpusAnchors | None = None
    """The corpus's chunk anchors (`Dataset.anchors`)."""


@dataclass(frozen=True, eq=False)
class Dataset:
    """The labelled queries (sorted by id, each with text and qrels), their qrels and corpus."""

    queries: tuple[Query, ...]
    qrels: Qrels
    corpus: Mapping[str, Document] | None
    layout: str
    warnings: tuple[DataWarning, ...]
    source: str
    subtopics: SubtopicQrels | None = None
    """Judgments per intent (dataset.subtopics), for the diversity metrics."""
    draws: DrawRecord | None = None
    """How the human-labelled queries were chosen (`datasets.draws`); None: not recorded."""
    anchors: CorpusAnchors | None = None
    """Where each chunk of a chunked corpus sits in its source document; None when the
    corpus is not chunked (no document names a source) or there is none."""

    @cached_property
    def fingerprint(self) -> str:
        """sha256 over the layout, each query (id, text, metadata) and each judgment, sorted,
        then each subtopic judgment when there are some; computed when first asked for (lint
        never asks)."""
        fingerprint = _fingerprint(self._queries_text, self.qrels, self.layout)
        if self.subtopics is None:
            return fingerprint
        return _subtopics_fingerprint(fingerprint, self.subtopics)

    @cached_property
    def queries_fingerprint(self) -> str:
        """sha256 over the queries alone (id, text, metadata): equal when only judgments changed."""
        return hashlib.sha256(b"retrieval-gate queries v1\n" + self._queries_text).hexdigest()

    @cached_property
    def _queries_text(self) -> bytes:
        """What both fingerprints hash of the queries: a JSON line per query."""
        return _queries_text(self.queries)

    def query(self, query_id: str) -> Query:
        """The query with id `query_id`."""
        return self._by_id[query_id]

    @cached_property
    def _by_id(self) -> dict[str, Query]:
        return {q.id: q for q in self.queries}


def assemble(
    labels: Labels, *, combine: Combine = "median", keep_unjudged: bool = False
) -> Dataset:
    """The dataset of the queries that have both text and judgments, with warnings for the rest.

    Several annotators' grades of one (query, doc) become one by `combine`; a (query, doc)
    judged twice by one annotator (or with none named) is an InputError. `keep_unjudged`
    (gate.labels: human+llm, where a judge labels them) keeps the queries with text and no
    judgment: in the qrels' query ids without a row, so they are run and score 0 under
    people's labels.
    """
    qrels = labels.judgments.qrels(combine)
    corpus = labels.corpus
    texts = {q.id: q for q in labels.queries}
    judged = set(qrels.query_ids.tolist())
    warnings: list[DataWarning] = list(labels.notes)

    no_text = sorted(judged - texts.keys())
    _warn(warnings, "qrels_without_query", "judged query", "with no query text left out", no_text)
    unjudged = sorted(texts.keys() - judged)
    if not keep_unjudged:
        _warn(warnings, "query_without_qrels", "query", "with no judgments not run", unjudged)
    if no_text:
        keep = ~np.isin(qrels.query_ids, object_array(no_text))
        qrels = qrels.restricted(keep)
    if keep_unjudged and unjudged:
        qrels = _with_queries(qrels, unjudged)
    labelled = tuple(texts[q] for q in qrels.query_ids.tolist())

    relevant = np.bincount(qrels.query, weights=qrels.grade >= 1, minlength=len(labelled))
    no_relevant = [
        q.id for q, r in zip(labelled, relevant, strict=True) if r == 0 and q.id in judged
    ]
    _warn(warnings, "no_relevant", "query", "with no relevant document (grade >= 1), scoring 0",
          no_relevant)  # fmt: skip
    if corpus is not None:
        missing = sorted({d for d in qrels.docs.tolist() if d not in corpus})
        _warn(warnings, "judged_doc_not_in_corpus", "judged document", "missing from the corpus",
              missing)  # fmt: skip
    if labelled and all(q.metadata.get("synthetic") is True for q in labelled):
        warnings.append(DataWarning("synthetic", SYNTHETIC, len(labelled), ()))
    if labels.subtopics is not None:
        ids = [q.id for q in labelled]
        judged_topics = set(labels.subtopics.query_ids.tolist())
        _warn(warnings, "query_without_subtopics", "query",
              "with no subtopic judgments, scoring 0 on the diversity metrics",
              [q for q in ids if q not in judged_topics])  # fmt: skip
        _warn(warnings, "subtopics_without_query", "subtopic-judged topic",
              "not in the labelled set left out", sorted(judged_topics - set(ids)))  # fmt: skip
    return Dataset(
        labelled,
        qrels,
        corpus,
        labels.layout,
        tuple(warnings),
        labels.source,
        labels.subtopics,
        labels.draws,
        labels.anchors,
    )


def _warn(warnings: list[DataWarning], kind: str, noun: str, what: str, ids: Sequence[str]) -> None:
    if ids:
        message = f"{plural(len(ids), noun)} {what}"
        warnings.append(DataWarning(kind, message, len(ids), tuple(ids[:EXAMPLES])))


def _with_queries(qrels: Qrels, more: Sequence[str]) -> Qrels:
    """Qrels over its query ids and `more` (sorted together), the rows unchanged."""
    ids = object_array(sorted([*qrels.query_ids.tolist(), *more]))
    position = {q: i for i, q in enumerate(ids.tolist())}
    remap = np.asarray([position[q] for q in qrels.query_ids.tolist()], dtype=np.int64)
    return Qrels(ids, remap[qrels.query], qrels.docs, qrels.grade, qrels.source)


def _fingerprint(queries_text: bytes, qrels: Qrels, layout: str) -> str:
    """sha256 over the layout, each query (id, text, metadata) and each judgment, sorted."""
    digest = hashlib.sha256(f"retrieval-gate dataset v1 {layout}\n".encode())
    digest.update(queries_text)
    order = np.lexsort((qrels.docs.astype(str), qrels.query))
    rows = zip(
        qrels.query_ids[qrels.query[order]].tolist(),
        qrels.docs[order].tolist(),
        qrels.grade[order].tolist(),
        strict=True,
    )
    digest.update("".join(f"{q}\t{d}\t{g!r}\n" for q, d, g in rows).encode())
    return digest.hexdigest()


def _subtopics_fingerprint(fingerprint: str, subtopics: SubtopicQrels) -> str:
    """sha256 over `fingerprint` and each subtopic judgment, sorted."""
    digest = hashlib.sha256(f"retrieval-gate subtopics v1 {fingerprint}\n".encode())
    rows = sorted(
        zip(
            subtopics.query_ids[subtopics.query].tolist(),
            subtopics.subtopic.tolist(),
            subtopics.docs.tolist(),
            subtopics.judgment.tolist(),
            strict=True,
        )
    )
    for q, s, d, j in rows:
        digest.update(f"{q}\t{s}\t{d}\t{j!r}\n".encode())
    return digest.hexdigest()


def _queries_text(queries: Sequence[Query]) -> bytes:
    """A JSON line [id, text, metadata with sorted keys] per query, in order."""
    encode = json.JSONEncoder(ensure_ascii=False, default=str).encode  # json.dumps's, built once
    lines = [
        encode([query.id, query.text, dict(sorted(query.metadata.items()))]) for query in queries
    ]
    return ("\n".join(lines) + "\n").encode() if lines else b""
