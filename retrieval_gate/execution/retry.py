"""The one retry policy: how many attempts, how long to wait between them, and which failures
are worth another attempt."""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from retrieval_gate.errors import RetrieverError

_Result = TypeVar("_Result")


@dataclass(frozen=True)
class RetryPolicy:
    """Attempts and the waits between them: exponential backoff, capped at `max_backoff`,
    with full jitter when the waits are drawn from a random generator."""

    retries: int
    """Extra attempts after the first; below 0 counts as 0."""
    backoff: float
    """Seconds of the wait after the first failed attempt; each later wait doubles."""
    max_backoff: float = math.inf
    """The longest wait, in seconds."""

    @property
    def attempts(self) -> int:
        """Attempts in all, the first included."""
        return max(self.retries, 0) + 1

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """Seconds to wait after failed attempt number `attempt` (0-based): the ceiling
        min(max_backoff, backoff * 2**attempt) or, given `rng`, uniform in [0, ceiling]
        ("full jitter", so that many workers hit by the same outage do not retry in step)."""
        ceiling = min(self.max_backoff, self.backoff * 2.0 ** min(attempt, 64))
        return ceiling if rng is None else rng.uniform(0.0, ceiling)

    def call(self, once: Callable[[], _Result], transient: type[Exception]) -> _Result:
        """What `once` returns, called again after each wait (no jitter) while it raises
        `transient`; the last attempt's error propagates, as does any other error."""
        for attempt in range(1, self.attempts):
            try:
                return once()
            except transient:
                pass
            if self.backoff > 0:
                time.sleep(self.delay(attempt - 1))
        return once()


@dataclass(frozen=True)
class Failure:
    """A retriever call's failure: its text, whether another attempt may help, its kind
    (the text without what varies per query), whether the config's response mapping is at
    fault, and whether the service refused for load and asked for a wait (`RetrieverError`)."""

    text: str
    retryable: bool
    kind: str
    mapping: bool = False
    throttled: bool = False
    retry_after: float | None = None


def describe_failure(error: BaseException) -> Failure:
    """A retriever call's failure: a RetrieverError says what it is itself; a plain
    TimeoutError is worth another attempt."""
    if isinstance(error, RetrieverError):
        text = str(error) or type(error).__name__
        return Failure(
            text,
            error.retryable,
            error.kind or text,
            error.mapping,
            error.throttled,
            error.retry_after,
        )
    text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    # A plain TimeoutError from a Python retriever is the same situation as our own timeout.
    return Failure(text, isinstance(error, TimeoutError), text)
