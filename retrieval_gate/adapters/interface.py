"""The retriever interface the runner calls, and the base class every adapter builds on."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar, runtime_checkable

from retrieval_gate.adapters.settings import AdapterSettings
from retrieval_gate.core.model import Document, Hit, Query

if TYPE_CHECKING:
    import asyncio

LoopSearch = tuple["asyncio.AbstractEventLoop", Callable[[Query, int], Awaitable[list[Hit]]]]
"""An event loop and a coroutine function answering one query (`search`) awaited on it: what
a retriever with a loop of its own offers as `loop_search()`, beside the Retriever protocol."""


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


C = TypeVar("C", bound=AdapterSettings)


class OneAtATime:
    """What a retriever that answers one query per call inherits: no batching, nothing to
    close. Subclasses implement `describe` and `search`."""

    def search(self, query: Query, k: int) -> list[Hit]:
        raise NotImplementedError

    def batch_size(self) -> int:
        return 1

    def search_batch(self, queries: Sequence[Query], k: int) -> list[list[Hit]]:
        return [self.search(query, k) for query in queries]

    def close(self) -> None:
        return None


class Adapter(OneAtATime, Generic[C]):
    """A `Retriever` built from its config. Subclasses implement `describe` and `search`;
    batching adapters also override `batch_size` and `search_batch` (`OneAtATime`'s)."""

    config_class: ClassVar[type[AdapterSettings]]
    cacheable: ClassVar[bool] = False
    """Whether answers may be cached under `describe()`: true only when the description
    changes with everything that can change the answers (a remote service's URL and body,
    a run file's or corpus's hash). Code run in-process or in a subprocess can change
    between two runs without its description changing."""

    def __init__(
        self,
        config: C,
        *,
        base_dir: Path | None = None,
        corpus: Mapping[str, Document] | None = None,
    ) -> None:
        self.config = config
        self.base_dir = base_dir

    def describe(self) -> Mapping[str, Any]:
        raise NotImplementedError

    def unproven_cache(self) -> str | None:
        """Why answers cached under `describe()` cannot be proven current, or None when they
        can (the description covers all that decides the answers)."""
        return None

    def __enter__(self) -> Adapter[C]:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
