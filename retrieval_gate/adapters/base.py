"""The retriever interface every adapter implements, and the values it exchanges."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from retrieval_gate.errors import GateError


@dataclass(frozen=True)
class Query:
    """A labelled query as a retriever sees it: id, text and metadata (intent, segment, ...)."""

    id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Hit:
    """One retrieved document: its id and, when the retriever gives one, its score."""

    doc_id: str
    score: float | None = None


@dataclass(frozen=True)
class Document:
    """A corpus entry, as the built-in bm25 retriever indexes it."""

    id: str
    title: str = ""
    text: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)


class RetrieverError(GateError):
    """A retriever call failed; `retryable` says whether trying again may help (timeouts,
    connection errors, HTTP 429 and 5xx) or not (HTTP 4xx, malformed responses)."""

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


@runtime_checkable
class Retriever(Protocol):
    """What the runner calls. Adapters are thread-safe: the runner calls `search` (or
    `search_batch`) from several worker threads at once."""

    def describe(self) -> Mapping[str, Any]:
        """A JSON-able description of what is being called (type, target, parameters, never
        secrets); its hash keys the cache and the baseline's retriever fingerprint."""
        ...

    def search(self, query: Query, k: int) -> list[Hit]:
        """The top `k` (or fewer) hits for `query`, best first. Raises RetrieverError."""
        ...

    def batch_size(self) -> int:
        """Queries per `search_batch` call; 1 means the runner calls `search` per query."""
        ...

    def search_batch(self, queries: Sequence[Query], k: int) -> list[list[Hit]]:
        """Hits for each query, in order; only called when `batch_size() > 1`."""
        ...

    def close(self) -> None:
        """Release connections, subprocesses and the like."""
        ...


def fingerprint(description: Mapping[str, Any]) -> str:
    """Stable short hash of a retriever description (sorted-key JSON, sha256)."""
    text = json.dumps(description, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
