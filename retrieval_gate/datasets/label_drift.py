"""Labels against a new chunking: valid, re-anchorable, merged, split or orphaned, per label."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from retrieval_gate.core.model import Document
from retrieval_gate.core.qrels import Qrels
from retrieval_gate.datasets.anchors import Anchor, CorpusAnchors, span_hash

DriftKind = Literal["valid", "re-anchorable", "merged", "split", "orphaned"]
KINDS: tuple[DriftKind, ...] = ("valid", "re-anchorable", "merged", "split", "orphaned")
ANCHORED: frozenset[DriftKind] = frozenset({"valid", "re-anchorable"})
"""The kinds whose judged text is one chunk's whole text now: the label holds as it was given,
on that chunk. The others would need a grade nobody gave: a larger chunk's, or pieces'."""


@dataclass(frozen=True)
class Drift:
    """Where a labelled chunk's judged text is in the new chunking."""

    kind: DriftKind
    chunks: tuple[str, ...] = ()
    """valid, re-anchorable: the one chunk holding exactly the text; merged: every chunk holding
    it whole, shortest first; split: the chunks it is now across, by offset; orphaned: none."""


@dataclass(frozen=True)
class LabelDrift:
    """One judgment (query, chunk, grade) and its drift."""

    query_id: str
    doc_id: str
    grade: float
    drift: Drift


class _Source:
    """One source document's chunks in the new chunking, by offset, with their texts, and the
    source's own text when known."""

    def __init__(self, chunks: Sequence[tuple[Anchor, str, str]], text: str | None) -> None:
        self.chunks = sorted(chunks, key=lambda c: (c[0].start, c[0].end, c[2]))
        self.starts = [anchor.start for anchor, _, _ in self.chunks]
        self.text = text

    def drift(self, anchor: Anchor) -> Drift:
        """Where the text `anchor` names is: one chunk's whole text, inside larger ones, across
        several, or gone (not covered, or covered by another text)."""
        s, e = anchor.start, anchor.end
        # Chunks starting at or before s: the candidates for holding the span whole.
        before = self.chunks[: bisect.bisect_right(self.starts, s)]
        exact = [i for a, _, i in before if (a.start, a.end, a.hash) == (s, e, anchor.hash)]
        if exact:
            return Drift("re-anchorable", (min(exact),))
        holding = [
            (a.end - a.start, a.start, i)
            for a, text, i in before
            if a.end >= e and (a.start, a.end) != (s, e)
            and span_hash(text[s - a.start : e - a.start]) == anchor.hash
        ]  # fmt: skip
        if holding:
            return Drift("merged", tuple(i for _, _, i in sorted(holding)))
        return self._split(anchor)

    def _split(self, anchor: Anchor) -> Drift:
        """The span rebuilt from the chunks covering it, each stretch from the chunk reaching
        furthest, and the whitespace between chunks from the source's text (splitters drop it):
        split when every character is found and the text is the judged one."""
        s, e = anchor.start, anchor.end
        pieces: list[str] = []
        at = s
        while at < e:
            reach = [
                (a.end, text[at - a.start :])
                for a, text, _ in self.chunks[: bisect.bisect_right(self.starts, at)]
                if a.end > at
            ]
            if reach:
                end, rest = max(reach, key=lambda r: r[0])  # the first: the earliest start
                pieces.append(rest[: min(end, e) - at])
                at = min(end, e)
            elif self.text is not None and at < len(self.text) and self.text[at].isspace():
                pieces.append(self.text[at])
                at += 1
            else:
                return Drift("orphaned")
        if span_hash("".join(pieces)) != anchor.hash:
            return Drift("orphaned")
        return Drift("split", tuple(i for a, _, i in self.chunks if a.start < e and a.end > s))


class Chunking:
    """A corpus's chunks by source, to find where a label's judged text is now."""

    def __init__(self, corpus: Mapping[str, Document], anchors: CorpusAnchors) -> None:
        grouped: dict[str, list[tuple[Anchor, str, str]]] = {}
        for chunk, anchor in anchors.anchors.items():
            grouped.setdefault(anchor.source, []).append((anchor, corpus[chunk].text, chunk))
        self._sources = {
            source: _Source(chunks, anchors.texts.get(source)) for source, chunks in grouped.items()
        }
        self._anchors = anchors.anchors
        self._ids = frozenset(corpus)

    def drift(self, doc_id: str, anchor: Anchor | None) -> Drift:
        """The drift of the chunk `doc_id` was when labelled, at `anchor` (None: it was no
        chunk, or not anchored; then valid while the id exists, else orphaned)."""
        if anchor is None:
            return Drift("valid", (doc_id,)) if doc_id in self._ids else Drift("orphaned")
        if self._anchors.get(doc_id) == anchor:
            return Drift("valid", (doc_id,))
        source = self._sources.get(anchor.source)
        return source.drift(anchor) if source is not None else Drift("orphaned")


def label_drift(
    qrels: Qrels, labelled: Mapping[str, Anchor], chunking: Chunking
) -> tuple[LabelDrift, ...]:
    """Every judgment of `qrels` classified against `chunking`, by (query, doc): `labelled`
    holds the anchors of the chunks as they were when judged. Never a grade for a new chunk:
    each row keeps the grade it was given, on the chunk it was given to."""
    rows = zip(
        qrels.query_ids[qrels.query].tolist(),
        qrels.docs.tolist(),
        qrels.grade.tolist(),
        strict=True,
    )
    return pairs_drift(rows, labelled, chunking)


def pairs_drift(
    rows: Iterable[tuple[str, str, float]], labelled: Mapping[str, Anchor], chunking: Chunking
) -> tuple[LabelDrift, ...]:
    """`label_drift` of (query, doc, grade) rows, sorted by (query, doc), in order within."""
    found: dict[str, Drift] = {}
    drifts = []
    for query, doc, grade in rows:
        if doc not in found:
            found[doc] = chunking.drift(doc, labelled.get(doc))
        drifts.append(LabelDrift(query, doc, float(grade), found[doc]))
    return tuple(sorted(drifts, key=lambda r: (r.query_id, r.doc_id)))


def drift_counts(drifts: Sequence[LabelDrift]) -> dict[DriftKind, int]:
    """How many labels of each kind, every kind present (0 too), in KINDS order."""
    counts = dict.fromkeys(KINDS, 0)
    for row in drifts:
        counts[row.drift.kind] += 1
    return counts
