"""The runner's lanes: workers on the http client's event loop (timed and bounded from the
send, stopped with the run) and worker threads for every other retriever."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from retrieval_gate.adapters import HttpConfig, Query
from retrieval_gate.adapters.http import HttpRetriever
from retrieval_gate.core.model import Hit
from retrieval_gate.execution.cache import ResultCache
from retrieval_gate.execution.lanes import LoopLane, ThreadLane, open_lane
from retrieval_gate.execution.runner import STOP_AFTER, RunSettings, run_queries
from tests.helpers.local_server import Answer, serving
from tests.helpers.waiting import GUARD

pytest.importorskip("aiohttp")


class Service:
    """A search service: each query text's scripted statuses in turn (then 200), after
    delays[text] seconds, or once that event is set; it notes every request's text and when
    it came, and sets `asked` at the first."""

    def __init__(self, delays: Mapping[str, float | threading.Event] | None = None) -> None:
        self.delays = dict(delays or {})
        self.statuses: dict[str, list[int]] = {}
        self.seen: list[tuple[str, float]] = []
        self.lock = threading.Lock()
        self.asked = threading.Event()

    def __call__(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Answer:
        text = json.loads(body)["query"]
        with self.lock:
            self.seen.append((text, time.monotonic()))
            scripted = self.statuses.get(text, [])
            status = scripted.pop(0) if scripted else 200
        self.asked.set()
        delay = self.delays.get(text, 0.0)
        if isinstance(delay, threading.Event):
            delay.wait(GUARD)  # the test sets it
        else:
            time.sleep(delay)
        if status != 200:
            return status, {"Content-Type": "application/json"}, b'{"error": "no"}'
        payload = json.dumps({"hits": [{"id": f"{text}-d", "score": 1.0}]})
        return 200, {"Content-Type": "application/json"}, payload.encode()

    def texts(self) -> list[str]:
        with self.lock:
            return [text for text, _ in self.seen]


def _retriever(url: str, client: str = "aiohttp", **settings: Any) -> HttpRetriever:
    return HttpRetriever(HttpConfig(url=f"{url}/search", **settings), client=client)  # type: ignore[arg-type]


def test_http_on_aiohttp_runs_on_its_loop_and_the_rest_on_threads() -> None:
    with serving(Service()) as url:
        on_loop, on_httpx = _retriever(url), _retriever(url, client="httpx")
        batched = _retriever(url, batch_size=4, body={"queries": "{queries}"})
        lanes = [open_lane(r, 5, 2, 1.0) for r in (on_loop, on_httpx, batched)]
        try:
            assert [type(lane) for lane in lanes] == [LoopLane, ThreadLane, ThreadLane]
        finally:
            for lane in lanes:
                lane.close()
            for retriever in (on_loop, on_httpx, batched):
                retriever.close()
        lane = open_lane(on_loop, 5, 2, 1.0)  # a closed client's loop: threads, which fail
        lane.close()
        assert type(lane) is ThreadLane


def test_a_timeout_counts_from_the_send_not_from_the_hand_over() -> None:
    # One call at a time: the second query waits 1.1 s for the first before it is sent, and
    # then takes 1.1 s itself; 2.2 s after the runner handed it over, but within its 2 s
    # (0.9 s to spare for each call on a loaded machine).
    service = Service({"a": 1.1, "b": 1.1})
    with serving(service) as url:
        retriever = _retriever(url, timeout=2.0)
        try:
            settings = RunSettings(concurrency=1, timeout=2.0, retries=0, error_budget=1.0)
            result = run_queries(retriever, [Query("a", "a"), Query("b", "b")], 5, settings)
        finally:
            retriever.close()
    assert not result.failures
    assert service.texts() == ["a", "b"]
    for query in "ab":
        assert 1100.0 <= result.timings[query].latency < 2000.0


def test_a_stopped_run_sends_nothing_it_queued() -> None:
    service = Service()
    items = [Query(f"q{i}", f"t{i}") for i in range(200)]
    for query in items:
        service.statuses[query.text] = [400]
    with serving(service) as url:
        retriever = _retriever(url, concurrency=4)
        try:
            result = run_queries(retriever, items, 5, RunSettings(concurrency=4, retries=0))
            sent = len(service.texts())
            time.sleep(0.3)
            assert len(service.texts()) == sent  # nothing queued went out after the stop
        finally:
            retriever.close()
    assert result.stopped.startswith(f"the first {STOP_AFTER} queries all failed the same way")
    assert STOP_AFTER <= sent <= STOP_AFTER + 2 * 4


def test_retries_wait_their_backoff_and_answer_on_the_loop(tmp_path: Path) -> None:
    service = Service()
    service.statuses["t1"] = [503, 503]
    items = [Query(f"q{i}", f"t{i}") for i in range(6)]
    settings = RunSettings(concurrency=2, retries=3, backoff=0.05, max_backoff=0.05, seed=1)
    with serving(service) as url:
        retriever = _retriever(url, concurrency=2, version="v1")
        try:
            with ResultCache(tmp_path / "cache.sqlite") as cache:
                first = run_queries(retriever, items, 5, settings, cache=cache)
                again = run_queries(retriever, items, 5, settings, cache=cache)
        finally:
            retriever.close()
    assert not first.failures
    assert first.calls == 8  # 6 queries, one of them retried twice
    assert first.hits["q1"] == (Hit("t1-d", 1.0),)
    assert (again.calls, again.cached) == (0, 6)
    texts = service.texts()
    assert sorted(texts) == sorted([query.text for query in items] + ["t1", "t1"])
    times = [at for text, at in service.seen if text == "t1"]
    assert times == sorted(times)


def test_a_retry_after_holds_every_worker_outside_the_timeout() -> None:
    service = Service()
    service.statuses["t0"] = [429]

    def respond(method: str, path: str, headers: Mapping[str, str], body: bytes) -> Answer:
        status, head, payload = service(method, path, headers, body)
        return status, {**head, **({"Retry-After": "2"} if status == 429 else {})}, payload

    items = [Query(f"q{i}", f"t{i}") for i in range(4)]
    with serving(respond) as url:
        retriever = _retriever(url, concurrency=1, timeout=1.0)
        try:
            settings = RunSettings(concurrency=1, timeout=1.0, retries=1, backoff=0.0)
            result = run_queries(retriever, items, 5, settings)
        finally:
            retriever.close()
    assert not result.failures
    limited_at = service.seen[0][1]
    assert service.seen[0][0] == "t0"
    assert all(at - limited_at >= 1.95 for _, at in service.seen[1:])
    assert all(timing.latency < 1000.0 for timing in result.timings.values())


def test_a_retriever_closed_mid_run_fails_its_queries_instead_of_hanging() -> None:
    # No query is answered before the retriever is closed: it closes once the first is asked.
    closed = threading.Event()
    service = Service(dict.fromkeys((f"t{i}" for i in range(8)), closed))
    items = [Query(f"q{i}", f"t{i}") for i in range(8)]

    def close_once_asked() -> None:
        service.asked.wait(GUARD)
        retriever.close()
        closed.set()

    with serving(service) as url:
        retriever = _retriever(url, concurrency=2)
        closer = threading.Thread(target=close_once_asked)
        closer.start()
        try:
            settings = RunSettings(concurrency=2, retries=0, error_budget=1.0)
            result = run_queries(retriever, items, 5, settings)
        finally:
            service.asked.set()
            closer.join()
    assert result.failures
    assert len(result.hits) + len(result.failures) == len(items)


def test_units_handed_over_after_the_loop_closed_fail_and_nothing_is_left_pending() -> None:
    """The race a loaded machine ran into: the retriever closes between the runner's start
    and its hand-over; the hand-over must fail the units, and the workers end with the loop
    (a worker destroyed pending would call into the closed loop from the collector)."""
    from retrieval_gate.execution.lanes import Unit

    with serving(Service()) as url:
        retriever = _retriever(url, concurrency=2)
        lane = open_lane(retriever, 5, 2, 5.0)
        assert isinstance(lane, LoopLane)
        unit = Unit((Query("q1", "t1"),), False)
        lane.start(unit)
        retriever.close()  # the loop stops and closes before the unit is handed over
        ended = lane.finished(time.monotonic() + 2.0)
        lane.close()
    assert [(u.queries[0].id, type(outcome).__name__) for u, outcome in ended] == [
        ("q1", "Failure")
    ]
    assert "event loop stopped" in ended[0][1].text  # type: ignore[union-attr]
    assert lane.busy() == 0
