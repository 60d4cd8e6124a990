"""Adaptive concurrency: refusals for load halve the pool, answers grow it back, and at one
call a refusal holds every call back."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Mapping
from typing import Any

from retrieval_gate.core.model import Hit, Query
from retrieval_gate.errors import RetrieverError
from retrieval_gate.execution.retry import RetryPolicy
from retrieval_gate.execution.runner import RunSettings, run_queries
from retrieval_gate.execution.throttle import Throttle
from tests.execution.test_runner import queries


def _throttle(ceiling: int = 8, backoff: float = 0.5) -> Throttle:
    return Throttle(ceiling, RetryPolicy(3, backoff, 8.0), random.Random(0))


def test_a_refusal_halves_the_limit_once_for_the_calls_already_in_flight() -> None:
    throttle = _throttle(8)
    assert throttle.refused(0, None, 100.0) == 0.0
    assert (throttle.limit, throttle.epoch) == (4, 1)
    # The other calls sent at the old rate are refused too: the same congestion.
    for _ in range(7):
        assert throttle.refused(0, 1.0, 100.0) == 0.0
    assert throttle.limit == 4
    assert throttle.refused(1, None, 100.0) == 0.0
    assert throttle.limit == 2
    assert throttle.room(1) == 1
    assert throttle.lowest == 2


def test_answers_grow_the_limit_back_by_one_up_to_the_ceiling() -> None:
    throttle = _throttle(8)
    throttle.refused(0, None, 0.0)
    throttle.refused(1, None, 0.0)
    grown = []
    for _ in range(8):
        throttle.answered()
        grown.append(throttle.limit)
    assert grown == [3, 4, 5, 6, 7, 8, 8, 8]
    assert throttle.hold_until == 0.0


def test_at_one_call_a_refusal_holds_the_pool_for_its_retry_after() -> None:
    throttle = _throttle(1)
    assert throttle.refused(0, 2.0, 100.0) == 2.0
    assert throttle.hold_until == 102.0
    # A refusal from before the hold waits out what is left of it; it adds nothing.
    assert throttle.refused(0, 5.0, 101.0) == 1.0
    assert throttle.hold_until == 102.0


def test_without_retry_after_the_holds_back_off_until_an_answer() -> None:
    throttle = _throttle(1, backoff=1.0)
    ceilings = []
    now = 0.0
    for epoch in range(5):
        held = throttle.refused(epoch, None, now)
        ceilings.append(RetryPolicy(3, 1.0, 8.0).delay(epoch))
        assert 0.0 <= held <= ceilings[-1]
        now = throttle.hold_until
    assert ceilings == [1.0, 2.0, 4.0, 8.0, 8.0]
    throttle.answered()
    # The run of refusals is over: the next hold starts from the base again.
    assert throttle.refused(5, None, now) <= 1.0


GATHERING = 1.0
"""Seconds a call waits at most for the others to gather: a pool that never sends them all
at once costs this per call, and its test then fails on the counts, not on the clock."""


class _Limited:
    """Answers each call after `delay`: its first `refused` with a 429 that asks for
    `retry_after` seconds, then with a hit; notes how many calls were in flight as each one came."""

    def __init__(
        self, refused: int, retry_after: float, delay: float, gather: int = 0, calls: int = 0
    ) -> None:
        self.refused = refused
        self.retry_after = retry_after
        self.delay = delay
        self.gather = gather
        self.calls = calls
        self.lock = threading.Condition()
        self.active = 0
        self.arrivals: list[int] = []

    def describe(self) -> Mapping[str, Any]:
        return {"type": "test", "name": "limited"}

    def batch_size(self) -> int:
        return 1

    def search(self, query: Query, k: int) -> list[Hit]:
        with self.lock:
            self.active += 1
            self.arrivals.append(self.active)
            number = len(self.arrivals)
            self.lock.notify_all()
            # The first calls, and the last `gather` of all `calls`, wait (a while at most)
            # until `gather` are in flight: whether the pool sends that many at once does
            # not hang on how fast a loaded machine starts threads.
            if self.gather and (number <= self.gather or number > self.calls - self.gather):
                self.lock.wait_for(lambda: self.active >= self.gather, timeout=GATHERING)
        try:
            time.sleep(self.delay)
            if number <= self.refused:
                raise RetrieverError(
                    "HTTP 429", retryable=True, throttled=True, retry_after=self.retry_after
                )
            return [Hit(f"{query.id}-d0", 1.0)]
        finally:
            with self.lock:
                self.active -= 1

    def search_batch(self, batch: list[Query], k: int) -> list[list[Hit]]:
        return [self.search(query, k) for query in batch]

    def close(self) -> None:
        pass


def test_a_hard_limited_service_gets_one_call_at_a_time_then_the_whole_pool_again() -> None:
    """Every call refused for a while: the pool halves from 8 to 1 within 8 + 4 + 2 + 1
    calls, then sends one call at a time (held for Retry-After between them) instead of
    hammering the service with 8, and grows back to 8 once it answers."""
    retriever = _Limited(refused=24, retry_after=0.02, delay=0.03, gather=8, calls=48 + 24)
    settings = RunSettings(concurrency=8, timeout=5.0, retries=20, backoff=0.01, max_backoff=0.05)
    result = run_queries(retriever, queries(48), 1, settings)
    assert not result.failures
    assert len(result.hits) == 48
    refused = retriever.arrivals[:24]
    assert max(refused) == 8  # the first calls, sent before any refusal
    assert refused[15:] == [1] * 9  # at one call the pool waits: nothing else in flight
    assert max(retriever.arrivals[24:]) == 8  # recovered
    assert result.calls == 48 + 24
