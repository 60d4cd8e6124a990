"""Chunk anchors: where each chunk of a chunked corpus sits in its source document, hashed."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from retrieval_gate.core.model import Document
from retrieval_gate.datasets.files import field_path, read_corpus
from retrieval_gate.errors import InputError

if TYPE_CHECKING:
    from retrieval_gate.config.schema import DatasetConfig

SOURCE_KEY = "source"
"""The metadata key naming a chunk's source document id."""
START_KEY = "start"
"""The metadata key giving a chunk's first character's offset in its source's text."""
SPAN_HASH_DIGITS = 16
"""Hex digits kept of a span's sha256, as `corpus_changes.HASH_DIGITS`: a span's hash is only
compared with a span of the same source and offsets, so the one failure is an edited text
keeping its 64 bits."""
MAX_SOURCE_ID = 1000
"""Longest source id accepted: an id is quoted in reports, and a huge one is an input error."""


@dataclass(frozen=True, order=True)
class Anchor:
    """The text a chunk holds: characters [start, end) of its source document's text, and
    their hash. Two chunkings of one text give a span the same anchor whatever the chunk ids."""

    source: str
    start: int
    end: int
    hash: str


def span_hash(text: str) -> str:
    """The first SPAN_HASH_DIGITS hex digits of sha256 over `text` (UTF-8), exactly as held:
    offsets are exact, so the text is not normalised."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:SPAN_HASH_DIGITS]


@dataclass(frozen=True)
class CorpusAnchors:
    """The anchors of a corpus's chunks, and the chunks that name a source but were not found."""

    anchors: Mapping[str, Anchor]
    """Chunk id -> its anchor, sorted by id; documents that are not chunks have none."""
    unanchored: tuple[str, ...]
    """Sorted ids of the chunks naming a source whose span could not be found: no `start`
    and no source text, or a text the source does not contain."""
    sources: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Chunk id -> the source it names, of every chunk (anchored or not): what the
    document-level view rolls a chunk up to."""
    texts: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Source id -> its text, of the sources `documents` held: what tells the whitespace a
    splitter dropped between two chunks from text the chunking lost."""

    @property
    def chunked(self) -> bool:
        """Whether any document of the corpus names a source."""
        return bool(self.sources)


def corpus_anchors(
    corpus: Mapping[str, Document],
    documents: Mapping[str, Document] | None = None,
    *,
    source: str = "dataset.corpus",
) -> CorpusAnchors:
    """Each chunk's anchor: a document whose metadata names a `source` is a chunk of it, its
    text at metadata `start` when given (checked against the source's text when `documents`
    holds it), else found by exact containment in `documents[source]`'s text.

    Containment takes the first occurrence after the previous chunk's start of that source (in
    corpus order), then anywhere: splitters emit a document's chunks in order, so a sentence
    repeated in a document anchors where this chunking took it. Raises InputError (naming
    `source` and the chunk) on a source or start of the wrong type, or a given start whose
    span is not the source's text there.
    """
    anchors: dict[str, Anchor] = {}
    unanchored: list[str] = []
    after: dict[str, int] = {}
    sources: dict[str, str] = {}
    for chunk_id, document in corpus.items():
        origin = _source_of(document, source)
        if origin is None:
            continue
        sources[chunk_id] = origin
        text = document.text
        start = _start_of(document, source)
        held = documents.get(origin) if documents is not None else None
        if start is not None:
            if held is not None and held.text[start : start + len(text)] != text:
                raise InputError(
                    f"chunk {chunk_id!r}: its text is not the text of source {origin!r} at "
                    f"start {start}; correct metadata.start, or leave it out and the gate "
                    "finds the text in the source",
                    source=source,
                )
        elif held is not None:
            found = held.text.find(text, after.get(origin, 0)) if text else -1
            start = found if found >= 0 else (held.text.find(text) if text else -1)
            start = None if start < 0 else start
        if start is None:
            unanchored.append(chunk_id)
            continue
        after[origin] = start + 1  # a splitter's next chunk starts after this one's start
        anchors[chunk_id] = Anchor(origin, start, start + len(text), span_hash(text))
    texts = {}
    if documents is not None:
        texts = {s: documents[s].text for s in sorted(after) if s in documents}
    return CorpusAnchors(
        dict(sorted(anchors.items())),
        tuple(sorted(unanchored)),
        dict(sorted(sources.items())),
        texts,
    )


def dataset_anchors(
    spec: DatasetConfig, base_dir: Path, corpus: Mapping[str, Document]
) -> CorpusAnchors:
    """`corpus_anchors` of a labelled set's corpus, its source texts read from
    `dataset.documents` when the config names them."""
    documents = None
    if spec.documents:
        documents = read_corpus(field_path(spec.documents, base_dir, "dataset.documents"))
    return corpus_anchors(corpus, documents, source=spec.corpus or "dataset.corpus")


def _source_of(document: Document, source: str) -> str | None:
    """The source id a document's metadata names, None when it names none."""
    origin = document.metadata.get(SOURCE_KEY)
    if origin is None:
        return None
    if not isinstance(origin, str) or not origin or len(origin) > MAX_SOURCE_ID:
        raise InputError(
            f"chunk {document.id!r}: metadata.{SOURCE_KEY} must be a source document's id "
            f"(a non-empty string of at most {MAX_SOURCE_ID} characters), not {_shown(origin)}",
            source=source,
        )
    return origin


def _start_of(document: Document, source: str) -> int | None:
    """The offset a document's metadata gives, None when it gives none."""
    start = document.metadata.get(START_KEY)
    if start is None:
        return None
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise InputError(
            f"chunk {document.id!r}: metadata.{START_KEY} must be a whole number of characters "
            f">= 0 (the chunk's offset in its source's text), not {_shown(start)}; leave it out "
            "and the gate finds the text in the source",
            source=source,
        )
    return start


def _shown(value: object) -> str:
    """A value as an error message quotes it: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
