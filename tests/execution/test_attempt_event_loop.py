"""Calls started on the http client's event loop (start_attempt): timed, failed and bounded
like calls on worker threads."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from concurrent.futures import Future
from typing import Any

import pytest

from retrieval_gate.adapters import HttpConfig, Query
from retrieval_gate.adapters.http import HttpRetriever
from retrieval_gate.core.model import Hit
from retrieval_gate.errors import RetrieverError
from retrieval_gate.execution.attempt import start_attempt
from retrieval_gate.execution.runner import RunSettings, run_queries
from tests.helpers.local_server import Answer, serving
from tests.helpers.waiting import GUARD

pytest.importorskip("aiohttp")


class Gathered(threading.Event):
    """Set once `width` requests are in progress at once."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.width = width


def _slow(
    delays: Mapping[str, float | threading.Event],
    seen: list[str],
    busy: list[int] | None = None,
    gathered: Gathered | None = None,
) -> Any:
    """A search service that waits delays[query text] seconds (default 0), or until that
    event is set, and answers; `busy` holds the requests in progress now and the most at
    once; with `gathered`, each request first waits until that many are in progress."""
    lock = threading.Lock()
    busy = [0, 0] if busy is None else busy

    def respond(method: str, path: str, headers: Mapping[str, str], body: bytes) -> Answer:
        text = json.loads(body)["query"]
        with lock:
            seen.append(text)
            busy[0] += 1
            busy[1] = max(busy)
            if gathered is not None and busy[0] >= gathered.width:
                gathered.set()
        if gathered is not None:
            gathered.wait(GUARD)
        delay = delays.get(text, 0.0)
        if isinstance(delay, threading.Event):
            delay.wait(GUARD)
        else:
            time.sleep(delay)
        with lock:
            busy[0] -= 1
        payload = json.dumps({"hits": [{"id": f"{text}-d", "score": 1.0}]})
        return 200, {"Content-Type": "application/json"}, payload.encode()

    return respond


def _retriever(url: str, **settings: Any) -> HttpRetriever:
    return HttpRetriever(HttpConfig(url=f"{url}/search", **settings), client="aiohttp")


def test_an_http_retriever_on_aiohttp_starts_calls_without_a_worker() -> None:
    seen: list[str] = []
    with serving(_slow({}, seen)) as url:
        retriever = _retriever(url)
        try:
            future = start_attempt(retriever, [Query("q1", "a")], False, 5)
            assert isinstance(future, Future)
            call = future.result(timeout=10)
            assert call.replies == [((Hit("a-d", 1.0),), None)]
            assert start_attempt(retriever, [Query("q1", "a")], True, 5) is None  # batched
        finally:
            retriever.close()
        on_httpx = HttpRetriever(HttpConfig(url=f"{url}/search"), client="httpx")
        try:
            assert start_attempt(on_httpx, [Query("q1", "a")], False, 5) is None
        finally:
            on_httpx.close()


def test_a_request_that_cannot_be_built_is_the_calls_error() -> None:
    with serving(_slow({}, [])) as url:
        retriever = _retriever(url, body={"q": "{metadata.missing}"})
        try:
            future = start_attempt(retriever, [Query("q1", "a")], False, 5)
            assert future is not None
            with pytest.raises(RetrieverError, match="no metadata field 'missing'"):
                future.result(timeout=10)
            result = run_queries(
                retriever, [Query("q1", "a")], 5, RunSettings(retries=0, error_budget=1.0)
            )
            assert "no metadata field 'missing'" in result.failures[0].error
        finally:
            retriever.close()


class FirstAnswer:
    """A progress that sets `answered` once the runner has taken an answer."""

    def __init__(self) -> None:
        self.answered = threading.Event()

    def start(self, total: int) -> None:
        return None

    def advance(self, n: int, *, failed: bool = False, cached: bool = False) -> None:
        self.answered.set()

    def close(self) -> None:
        return None


def test_each_query_is_timed_from_its_start_to_its_answer() -> None:
    # The slow query is answered 0.2 s after the runner took the fast one's answer: timed
    # to its own answer, the fast one took less, however slow the machine.
    progress = FirstAnswer()
    slow = threading.Event()
    seen: list[str] = []
    with serving(_slow({"slow": slow}, seen)) as url:
        retriever = _retriever(url)

        def answer_the_slow_one() -> None:
            progress.answered.wait(GUARD)
            time.sleep(0.2)
            slow.set()

        releaser = threading.Thread(target=answer_the_slow_one, daemon=True)
        releaser.start()
        try:
            items = [Query("s", "slow"), Query("f", "fast")]
            result = run_queries(retriever, items, 5, RunSettings(concurrency=2), progress=progress)
        finally:
            slow.set()
            releaser.join()
            retriever.close()
    assert result.timings["s"].latency >= 200.0
    assert result.timings["f"].latency < result.timings["s"].latency


def test_concurrency_bounds_the_calls_in_flight() -> None:
    seen: list[str] = []
    busy = [0, 0]
    delays: dict[str, float | threading.Event] = {f"t{i}": 0.05 for i in range(12)}
    # The first calls wait until three are in flight: used, however slowly they start.
    with serving(_slow(delays, seen, busy, Gathered(3))) as url:
        retriever = _retriever(url, concurrency=3)
        try:
            items = [Query(f"q{i}", f"t{i}") for i in range(12)]
            started = time.perf_counter()
            result = run_queries(retriever, items, 5, RunSettings(concurrency=3))
            wall = time.perf_counter() - started
        finally:
            retriever.close()
    assert not result.failures
    assert sorted(seen) == sorted(query.text for query in items)
    assert busy[1] == 3  # used, and never more
    assert wall >= 4 * 0.05  # 12 calls, 3 at a time


def test_a_call_past_its_timeout_is_a_retryable_failure() -> None:
    seen: list[str] = []
    never = threading.Event()  # the hanging query is answered only once the run is over
    with serving(_slow({"hang": never}, seen)) as url:
        retriever = _retriever(url, timeout=1.0)
        try:
            settings = RunSettings(timeout=1.0, retries=1, backoff=0.0, error_budget=1.0)
            result = run_queries(retriever, [Query("h", "hang"), Query("o", "ok")], 5, settings)
        finally:
            never.set()
            retriever.close()
    assert set(result.hits) == {"o"}
    (failure,) = result.failures
    assert failure.attempts == 2  # retried once
    assert "1s" in failure.error
    assert seen.count("hang") == 2


def test_a_subclass_with_its_own_search_is_called_on_a_worker() -> None:
    class Tagged(HttpRetriever):
        def search(self, query: Query, k: int) -> list[Hit]:
            return [Hit("tagged"), *super().search(query, k)]

    with serving(_slow({}, [])) as url:
        retriever = Tagged(HttpConfig(url=f"{url}/search"), client="aiohttp")
        try:
            assert start_attempt(retriever, [Query("q1", "a")], False, 5) is None
            result = run_queries(retriever, [Query("q1", "a")], 5, RunSettings())
        finally:
            retriever.close()
    assert [hit.doc_id for hit in result.hits["q1"]] == ["tagged", "a-d"]
