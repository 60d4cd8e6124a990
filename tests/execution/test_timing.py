"""Each query's latency and cost as the runner records them, from real calls."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from retrieval_gate.adapters.http import HttpConfig, HttpRetriever
from retrieval_gate.core.model import Hit, Query
from retrieval_gate.core.reported import Reported
from retrieval_gate.execution.cache import ResultCache
from retrieval_gate.execution.runner import RunSettings, run_queries
from tests.helpers.local_server import Answer, serving

SERIAL = RunSettings(concurrency=1, timeout=5.0, retries=0, error_budget=1.0)
SLOW = 0.2
"""Seconds q1 takes: far more than a loaded machine's wait for a core (the others take 5 ms)."""


def queries(n: int) -> list[Query]:
    return [Query(f"q{i}", f"text {i}") for i in range(n)]


class Sleepy:
    """Sleeps 5 ms per query (SLOW for q1), in batches of `batch`; reports what it is told."""

    def __init__(self, batch: int = 1, report: Mapping[str, Any] | None = None) -> None:
        self.batch = batch
        self.report = report

    def describe(self) -> Mapping[str, Any]:
        return {"type": "sleepy"}

    def search(self, query: Query, k: int) -> list[Hit]:
        time.sleep(SLOW if query.id == "q1" else 0.005)
        hits = [Hit(f"{query.id}-d")]
        return Reported(hits, **self.report) if self.report is not None else hits

    def batch_size(self) -> int:
        return self.batch

    def search_batch(self, queries: Sequence[Query], k: int) -> list[list[Hit]]:
        return [self.search(query, k) for query in queries]

    def close(self) -> None:
        return None


def test_each_query_gets_its_own_wall_time_in_milliseconds() -> None:
    result = run_queries(Sleepy(), queries(3), 5, SERIAL)
    assert set(result.timings) == {"q0", "q1", "q2"}
    assert result.timings["q0"].latency >= 4.0
    assert result.timings["q1"].latency >= SLOW * 1000 - 1.0
    assert result.timings["q0"].latency < result.timings["q1"].latency  # not q1's time
    assert result.timings["q0"].reported is None
    assert result.timings["q0"].cost is None


def test_a_batch_call_splits_its_time_evenly() -> None:
    result = run_queries(Sleepy(batch=3), queries(3), 5, SERIAL)
    shares = {timing.latency for timing in result.timings.values()}
    assert len(shares) == 1  # one call: one share each
    assert shares.pop() >= (SLOW + 0.005 + 0.005) * 1000 / 3 - 0.5


def test_cached_answers_have_no_latency(tmp_path: Path) -> None:
    with ResultCache(tmp_path / "cache.sqlite") as cache:
        first = run_queries(Sleepy(), queries(2), 5, SERIAL, cache=cache)
        again = run_queries(Sleepy(), queries(3), 5, SERIAL, cache=cache)
    assert set(first.timings) == {"q0", "q1"}
    assert again.cached == 2
    assert set(again.timings) == {"q2"}


def test_a_python_retriever_reports_its_own_latency_and_cost() -> None:
    result = run_queries(Sleepy(report={"latency": 2.5, "cost": 120}), queries(2), 5, SERIAL)
    assert result.timings["q0"].reported == 2.5
    assert result.timings["q0"].cost == 120.0


@pytest.mark.parametrize("bad", [float("nan"), -1.0, float("inf"), 1e300, True, "12", [1]])
def test_a_bad_reported_value_is_refused_where_it_is_made(bad: Any) -> None:
    with pytest.raises(ValueError, match=r"cost .* not"):
        Reported([], cost=bad)


def test_a_look_alike_with_bad_values_fails_its_query_as_a_mapping_error() -> None:
    class Cheat(Reported):
        def __init__(self) -> None:
            super().__init__([Hit("d")])
            self.cost = float("nan")

    class Cheater(Sleepy):
        def search(self, query: Query, k: int) -> list[Hit]:
            return Cheat()

    result = run_queries(Cheater(), queries(1), 5, SERIAL)
    assert result.timings == {}
    assert result.failures[0].mapping
    assert "the retriever reported cost nan" in result.failures[0].error


def _search_service(body: Any) -> Any:
    def respond(method: str, path: str, headers: Mapping[str, str], raw: bytes) -> Answer:
        sent = json.loads(raw)
        payload = body(sent) if callable(body) else body
        return 200, {"Content-Type": "application/json"}, json.dumps(payload).encode()

    return respond


def _http(url: str, **settings: Any) -> HttpRetriever:
    return HttpRetriever(HttpConfig(url=url, retries=0, **settings))


def test_http_reads_the_services_latency_and_cost() -> None:
    body = {"took": 7, "usage": {"total_tokens": 31}, "hits": [{"id": "d1", "score": 1.0}]}
    with serving(_search_service(body)) as url:
        retriever = _http(url, latency="$.took", cost="usage.total_tokens")
        try:
            result = run_queries(retriever, queries(2), 5, SERIAL)
        finally:
            retriever.close()
    assert result.timings["q1"].reported == 7.0
    assert result.timings["q1"].cost == 31.0
    assert result.timings["q1"].latency > 0
    assert retriever.describe()["latency"] == "$.took"


def test_http_batches_read_one_value_per_query_or_split_one() -> None:
    def answer(sent: Any) -> Any:
        n = len(sent["queries"])
        return {
            "took": 30,
            "costs": [float(i) for i in range(n)],
            "results": [[{"id": "d"}] for _ in range(n)],
        }

    with serving(_search_service(answer)) as url:
        retriever = _http(url, batch_size=3, results="results[*]", latency="took", cost="costs[*]")
        try:
            result = run_queries(retriever, queries(3), 5, SERIAL)
        finally:
            retriever.close()
    assert [result.timings[f"q{i}"].reported for i in range(3)] == [10.0, 10.0, 10.0]
    assert [result.timings[f"q{i}"].cost for i in range(3)] == [0.0, 1.0, 2.0]


@pytest.mark.parametrize(
    ("took", "problem"),
    [
        ("fast", "is not a number"),
        (-3, "not a finite number from 0"),
        (1e308, "not a finite number from 0"),
        ({"nested": [1]}, "is not a number"),
        ("::error::owned\n\x1b[31m", "is not a number"),
        (None, "is not a number"),
    ],
)
def test_http_a_bad_latency_field_fails_the_query_naming_the_field(took: Any, problem: str) -> None:
    body = {"took": took, "hits": [{"id": "d1"}]}
    with serving(_search_service(body)) as url:
        retriever = _http(url, latency="took")
        try:
            result = run_queries(retriever, queries(1), 5, SERIAL)
        finally:
            retriever.close()
    failure = result.failures[0]
    assert failure.mapping
    assert "retriever.latency (took)" in failure.error
    assert problem in failure.error
    assert "\n" not in failure.error
    assert "\x1b" not in failure.error


def test_http_a_missing_cost_field_fails_the_query() -> None:
    with serving(_search_service({"hits": []})) as url:
        retriever = _http(url, cost="usage.total_tokens")
        try:
            result = run_queries(retriever, queries(1), 5, SERIAL)
        finally:
            retriever.close()
    assert "retriever.cost (usage.total_tokens)" in result.failures[0].error


def test_a_python_retriever_returns_reported_hits(tmp_path: Path) -> None:
    from retrieval_gate.adapters.python import PythonConfig, PythonRetriever

    (tmp_path / "timed_search.py").write_text(
        "from retrieval_gate.core.reported import Reported\n"
        "def search(query, k):\n"
        "    return Reported(['d1', ('d2', 0.5)], latency=4.0, cost=0.002)\n"
    )
    retriever = PythonRetriever(PythonConfig(target="timed_search:search"), base_dir=tmp_path)
    result = run_queries(retriever, queries(1), 5, SERIAL)
    assert result.timings["q0"].reported == 4.0
    assert result.timings["q0"].cost == 0.002
    assert [hit.doc_id for hit in result.hits["q0"]] == ["d1", "d2"]


def test_http_a_two_stage_answer_keeps_its_candidates_beside_its_latency() -> None:
    body = {
        "took": 3,
        "hits": [{"id": "d1"}],
        "first": [{"id": "d1"}, {"id": "d2"}],
    }
    with serving(_search_service(body)) as url:
        retriever = _http(url, latency="took", candidates="first")
        try:
            result = run_queries(retriever, queries(1), 5, SERIAL)
        finally:
            retriever.close()
    assert result.timings["q0"].reported == 3.0
    assert [hit.doc_id for hit in result.candidates["q0"]] == ["d1", "d2"]
