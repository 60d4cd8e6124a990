"""Chat requests run through the retrieval runner: its concurrency, retries, Retry-After and
error budget, for LLM calls."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from retrieval_gate.adapters.interface import OneAtATime
from retrieval_gate.config.judge import JudgeConfig
from retrieval_gate.core.model import Hit, Query
from retrieval_gate.errors import GateError
from retrieval_gate.execution.runner import QueryFailure, RunSettings, run_queries
from retrieval_gate.judging.client import ChatClient, Completion, Message

if TYPE_CHECKING:
    from retrieval_gate.execution.progress import Progress


@dataclass(frozen=True)
class Request:
    """One chat request, named by a key unique in its batch."""

    key: str
    messages: Sequence[Message]
    max_tokens: int | None = None


@dataclass(frozen=True)
class Answers:
    """What a batch of requests got: each answered key's completion, the failures (after
    their retries), and the calls made, retries included."""

    completions: Mapping[str, Completion]
    failures: tuple[QueryFailure, ...]
    calls: int


def settings_of(config: JudgeConfig) -> RunSettings:
    """The runner's settings from the judge block."""
    return RunSettings(
        concurrency=config.concurrency,
        timeout=config.timeout,
        retries=config.retries,
        error_budget=config.error_budget,
        seed=config.seed or 0,
    )


def ask_all(
    client: ChatClient, requests: Sequence[Request], *, progress: Progress | None = None
) -> Answers:
    """Send every request through the runner (never cached: a query writer at temperature
    above 0 is meant to vary); a failed one is in `failures`. When the first requests all
    fail the same way the runner sends no more, and that is a GateError."""
    if not requests:
        return Answers({}, (), 0)
    asker = _Asker(client, {request.key: request for request in requests})
    queries = [Query(request.key, request.key) for request in requests]
    result = run_queries(asker, queries, 1, settings_of(client.config), progress=progress)
    if result.stopped:  # the first requests all failed alike: the rest were never sent
        raise GateError(result.stopped)
    return Answers(dict(sorted(asker.completions.items())), result.failures, result.calls)


class _Asker(OneAtATime):
    """The runner's Retriever interface over a chat client: `search` sends the request its
    query id names, keeps the completion, and returns no hits."""

    def __init__(self, client: ChatClient, requests: Mapping[str, Request]) -> None:
        self._client = client
        self._requests = requests
        self._lock = threading.Lock()
        self.completions: dict[str, Completion] = {}

    def describe(self) -> Mapping[str, Any]:
        return self._client.describe()

    def search(self, query: Query, k: int) -> list[Hit]:
        request = self._requests[query.id]
        completion = self._client.complete(request.messages, max_tokens=request.max_tokens)
        with self._lock:
            self.completions[query.id] = completion
        return []

    def close(self) -> None:
        """The caller owns the client."""
