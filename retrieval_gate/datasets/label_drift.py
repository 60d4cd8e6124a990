"""Labels against a new chunking: valid, re-anchorable, merged, split or orphaned, per label."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from retrieval_gate.core.model import Document
from retrieval_gate.core.qrels import Qrels
from retrieval_gate.datasets.anchors import Anchor, CorpusAnchors, span_hash

DriftKind = Literal["valid", "re-anchorable", "merged", "split", "orphaned"]
KINDS: tuple[DriftKind, ...] = ("valid", "re-anchorable", "merged", "split", "orphaned")
NEAR = 64
"""How far from its old offset a moved text is looked for one offset at a time before every
offset of its source is hashed: the nearest is found first either way."""
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


def same_text(one: Anchor, other: Anchor) -> bool:
    """Whether two anchors name the same text of the same source, wherever it sits: an
    anchor's identity is its text (source, length, hash); its offsets are a hint."""
    return (one.source, one.end - one.start, one.hash) == (
        other.source,
        other.end - other.start,
        other.hash,
    )


class _Source:
    """One source document's chunks in the new chunking, by offset, with their texts, and the
    source's own text when known."""

    def __init__(self, chunks: Sequence[tuple[Anchor, str, str]], text: str | None) -> None:
        self.chunks = sorted(chunks, key=lambda c: (c[0].start, c[0].end, c[2]))
        self.starts = [anchor.start for anchor, _, _ in self.chunks]
        self.text = text
        self._whole: dict[tuple[int, str], list[tuple[int, str]]] = {}
        for a, _, i in self.chunks:  # sorted by start, then id within a start
            self._whole.setdefault((a.end - a.start, a.hash), []).append((a.start, i))
        self._segments: list[tuple[int, str]] | None = None
        self._windows: dict[int, dict[str, list[int]]] = {}

    def drift(self, anchor: Anchor) -> Drift:
        """Where the text `anchor` names is now, found by its hash wherever it moved (an edit
        shifts the text after it); its offsets are only a hint. A chunk whose whole text it
        is re-anchors it (the one starting nearest the old offset, then the earlier); else
        the occurrence nearest the old offset (then the earlier) of the text as the chunks
        hold it decides: inside larger chunks (merged), across several (split). Orphaned
        when the chunks hold it nowhere."""
        size, hint = anchor.end - anchor.start, anchor.start
        whole = self._whole.get((size, anchor.hash))
        if whole:
            return Drift("re-anchorable", (_nearest(whole, hint)[1],))
        at = self._occurrence(size, anchor.hash, hint)
        if at is None:
            return Drift("orphaned")
        return self._at(Anchor(anchor.source, at, at + size, anchor.hash))

    def _occurrence(self, size: int, hash_: str, hint: int) -> int | None:
        """The start of the occurrence of the text (`size` characters hashing to `hash_`)
        nearest `hint` (then the earlier) in the source's text as its chunks (and the
        whitespace between them) hold it; None when it occurs nowhere whole."""
        if size <= 0:
            return None
        windows = self._windows.get(size)
        if windows is None:
            # Outward from the hint first, the earlier of two equally near: the first found is
            # the nearest, and an edit moves a text a little. The full table is built (once a
            # size) only for a text not found near.
            for distance in range(NEAR + 1):
                for at in (hint - distance, hint + distance)[: 2 if distance else 1]:
                    window = self._window(at, size)
                    if window is not None and span_hash(window) == hash_:
                        return at
            windows = {}
            for start, text in self._held_segments():
                for at in range(len(text) - size + 1):
                    windows.setdefault(span_hash(text[at : at + size]), []).append(start + at)
            self._windows[size] = windows
        starts = windows.get(hash_)
        return _nearest([(at, "") for at in starts], hint)[0] if starts else None

    def _window(self, at: int, size: int) -> str | None:
        """The `size` characters the chunks hold from offset `at`, None where one is missing."""
        segments = self._held_segments()
        index = bisect.bisect_right(segments, at, key=lambda segment: segment[0]) - 1
        if index < 0 or at < 0:
            return None
        start, text = segments[index]
        if at + size > start + len(text):
            return None
        return text[at - start : at - start + size]

    def _held_segments(self) -> list[tuple[int, str]]:
        """The source's text as the chunks hold it: (start, text) of each stretch with no
        character missing, by start. Each stretch's characters come from the chunk reaching
        furthest, as `_split` rebuilds a span; the whitespace between chunks from the
        source's text (splitters drop it)."""
        if self._segments is not None:
            return self._segments
        segments: list[tuple[int, list[str]]] = []
        reach = 0

        def held(start: int, piece: str) -> None:
            nonlocal reach
            if not piece:
                return
            if segments and start == reach:
                segments[-1][1].append(piece)
            else:
                segments.append((start, [piece]))
            reach = start + len(piece)

        at = index = 0
        best: tuple[Anchor, str, str] | None = None
        last = max((a.end for a, _, _ in self.chunks), default=0)
        while at < last:
            while index < len(self.chunks) and self.chunks[index][0].start <= at:
                if best is None or self.chunks[index][0].end > best[0].end:
                    best = self.chunks[index]
                index += 1
            if best is not None and best[0].end > at:
                held(at, best[1][at - best[0].start :])
                at = best[0].end
                continue
            gap = self.chunks[index][0].start if index < len(self.chunks) else last
            known = self.text[at:gap] if self.text is not None else ""
            for blank, run in itertools.groupby(known, key=str.isspace):
                piece = "".join(run)
                if blank:
                    held(at, piece)
                at += len(piece)
            at = gap
        self._segments = [(start, "".join(pieces)) for start, pieces in segments]
        return self._segments

    def _at(self, anchor: Anchor) -> Drift:
        """The drift of the text at `anchor`'s offsets, where the chunks hold it."""
        s, e = anchor.start, anchor.end
        # Chunks starting at or before s: the candidates for holding the span whole.
        before = self.chunks[: bisect.bisect_right(self.starts, s)]
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


def _nearest(found: Sequence[tuple[int, str]], hint: int) -> tuple[int, str]:
    """The (offset, id) of `found` (sorted) nearest `hint`, the earlier (then the first id)
    on a tie."""
    right = bisect.bisect_left(found, (hint, ""))
    near = []
    if right < len(found):
        near.append(found[right])
    if right > 0:
        left = found[right - 1][0]
        near.append(found[bisect.bisect_left(found, (left, ""))])
    return min(near, key=lambda f: (abs(f[0] - hint), f[0], f[1]))


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
        now = self._anchors.get(doc_id)
        if now is not None and same_text(now, anchor):
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
