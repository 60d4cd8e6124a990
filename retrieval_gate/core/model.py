"""The values a retriever exchanges: a labelled query, a retrieved hit, a corpus document."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Query:
    """A labelled query as a retriever sees it: id, text and metadata (intent, segment, ...)."""

    id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Hit:
    """One retrieved document: its id and, when the retriever gives them, its score and its
    text (what an LLM judge grades when the corpus is not at hand)."""

    doc_id: str
    score: float | None = None
    text: str | None = None


@dataclass(frozen=True)
class Document:
    """A corpus entry, as the built-in bm25 retriever indexes it."""

    id: str
    title: str = ""
    text: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)


MAX_CANDIDATES = 1000
"""First-stage candidates kept per query: a list this long is more than any candidates check
reads (their depth is their cutoff), and a retriever that returns its whole index must not
fill memory, the cache and the record."""


class StagedHits(list[Hit]):
    """A final ranking with the first stage's candidates beside it, as a two-stage retriever's
    `search` returns it: a list of the final hits, so whatever reads hits reads it as before."""

    def __init__(self, hits: Iterable[Hit], candidates: Iterable[Hit]) -> None:
        super().__init__(hits)
        self.candidates: tuple[Hit, ...] = tuple(candidates)


def candidates_of(answer: object) -> tuple[Hit, ...] | None:
    """The first stage's candidates an answer carries, or None when it carries none."""
    return answer.candidates if isinstance(answer, StagedHits) else None
