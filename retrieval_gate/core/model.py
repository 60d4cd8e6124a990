"""The values a retriever exchanges: a labelled query, a retrieved hit, a corpus document."""

from __future__ import annotations

from collections.abc import Mapping
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
