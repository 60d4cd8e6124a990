"""Judged documents removed or rewritten since the baseline, and the queries they leave out."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from retrieval_gate.core.ids import object_array
from retrieval_gate.core.model import Document
from retrieval_gate.core.wording import plural
from retrieval_gate.datasets import Dataset
from retrieval_gate.errors import NotComparableError
from retrieval_gate.gate.baseline.record import RECREATE, Baseline, restricted_record, some_of

HASH_DIGITS = 16
"""Hex digits kept of a document's sha256 (64 bits). A hash is only ever compared with the
same document's hash in the baseline, never with another document's, so the one failure is a
rewritten text keeping its 64 bits: a chance of 2**-64 per changed document."""
NO_CORPUS = "the labelled set has no corpus (dataset.corpus or a BEIR corpus.jsonl)"
NO_HASHES = (
    "the reference holds no hashes of its judged documents (a baseline made without a corpus "
    "or before retrieval-gate recorded them: recreate it to check them; or a run at a commit "
    "whose labelled set has no corpus)"
)


@dataclass(frozen=True, kw_only=True)
class NotComparableQuery:
    """A query left out of every check: a document it judged changed under its labels."""

    query_id: str
    reasons: tuple[str, ...]
    """"doc D1 removed", "doc D9 text changed": one per changed judged document, by doc id."""


@dataclass(frozen=True, kw_only=True)
class CorpusCheck:
    """Whether the judged documents were checked against the baseline's, and what it left out."""

    checked: bool
    reason: str = ""
    """Why not checked (NO_CORPUS, NO_HASHES); empty when checked."""
    not_comparable: tuple[NotComparableQuery, ...] = ()
    """By query id; the checks were decided on the other queries."""


def document_hash(document: Document) -> str:
    """The first HASH_DIGITS hex digits of sha256 over [title, text] as JSON, each with its
    whitespace runs made one space and its ends stripped: re-wrapping a text is no change,
    any other edit of its words or characters is. Metadata and the id are not hashed."""
    canonical = [" ".join(document.title.split()), " ".join(document.text.split())]
    text = json.dumps(canonical, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_DIGITS]


def judged_document_hashes(dataset: Dataset) -> dict[str, str] | None:
    """Doc id -> `document_hash` of each document judged (any grade) that the corpus holds,
    sorted by id; None without a corpus. Its size is bounded by the qrels, not the corpus."""
    corpus = dataset.corpus
    if corpus is None:
        return None
    judged = sorted(set(dataset.qrels.docs.tolist()))
    return {doc: document_hash(corpus[doc]) for doc in judged if doc in corpus}


def corpus_checked(
    baseline: Baseline, current: Baseline, dataset: Dataset, min_coverage: float
) -> tuple[Baseline, Baseline, Dataset, CorpusCheck]:
    """The two records and the labelled set without the queries that judged a document
    removed from the corpus or rewritten since the baseline, and what was left out.

    A document the baseline did not hash (not judged then, or not in its corpus) is new: no
    change to the labels. NotComparableError (exit 2) when the queries kept are fewer than
    `min_coverage` of them: the baseline is then about another corpus."""
    if current.judged_documents is None:
        return baseline, current, dataset, CorpusCheck(checked=False, reason=NO_CORPUS)
    if baseline.judged_documents is None:
        return baseline, current, dataset, CorpusCheck(checked=False, reason=NO_HASHES)
    changes = document_changes(baseline.judged_documents, current.judged_documents)
    left_out = _not_comparable(changes, dataset, set(baseline.query_ids))
    if not left_out:
        return baseline, current, dataset, CorpusCheck(checked=True)
    total = len(baseline.query_ids)
    kept = total - len(left_out)
    if kept == 0 or kept < min_coverage * total - 1e-9:
        removed = sorted(d for d, what in changes.items() if what == "removed")
        changed = sorted(d for d, what in changes.items() if what != "removed")
        parts = [f"removed from the corpus: {some_of(removed)}"] if removed else []
        parts += [f"text changed: {some_of(changed)}"] if changed else []
        raise NotComparableError(
            f"the corpus changed under the labels of {plural(len(left_out), 'query')} of "
            f"{total} ({some_of([q.query_id for q in left_out])}), leaving {kept}, fewer than "
            f"gate.min_coverage {min_coverage:.0%} of them:\n  - "
            + "\n  - ".join(parts)
            + f"\ncheck the labels of those documents, then {RECREATE}"
        )
    out = {q.query_id for q in left_out}
    keep = [q for q in baseline.query_ids if q not in out]
    return (
        restricted_record(baseline, keep),
        restricted_record(current, keep),
        _without(dataset, out),
        CorpusCheck(checked=True, reason="", not_comparable=left_out),
    )


def document_changes(before: Mapping[str, str], after: Mapping[str, str]) -> dict[str, str]:
    """Doc id -> "removed" or "text changed", of each document hashed in `before` whose hash
    is not in `after` or differs there."""
    changes = {}
    for doc, digest in before.items():
        now = after.get(doc)
        if now != digest:
            changes[doc] = "removed" if now is None else "text changed"
    return changes


def _not_comparable(
    changes: Mapping[str, str], dataset: Dataset, compared: set[str]
) -> tuple[NotComparableQuery, ...]:
    """The compared queries judging a changed document, each with its reasons."""
    if not changes:
        return ()
    qrels = dataset.qrels
    rows = np.flatnonzero(np.isin(qrels.docs, object_array(sorted(changes))))
    reasons: dict[str, list[str]] = {}
    for query, doc in zip(
        qrels.query_ids[qrels.query[rows]].tolist(), qrels.docs[rows].tolist(), strict=True
    ):
        if query in compared:
            reasons.setdefault(query, []).append(f"doc {doc} {changes[doc]}")
    return tuple(
        NotComparableQuery(query_id=query, reasons=tuple(sorted(set(found))))
        for query, found in sorted(reasons.items())
    )


def _without(dataset: Dataset, out: set[str]) -> Dataset:
    """`dataset` without the queries `out`, its fingerprints kept: it is the same labelled
    set, of which fewer queries are compared."""
    keep = ~np.isin(dataset.qrels.query_ids, object_array(sorted(out)))
    smaller = dataclasses.replace(
        dataset,
        queries=tuple(q for q in dataset.queries if q.id not in out),
        qrels=dataset.qrels.restricted(keep),
    )
    # cached_property values live in the instance dict: set, they are not recomputed.
    smaller.__dict__["fingerprint"] = dataset.fingerprint
    smaller.__dict__["queries_fingerprint"] = dataset.queries_fingerprint
    return smaller
