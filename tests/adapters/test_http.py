"""The http adapter against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from retrieval_gate.adapters import HttpConfig, Query, RetrieverError, fingerprint
from retrieval_gate.adapters.http import MAX_RETRY_AFTER, HttpRetriever, retry_after_seconds
from retrieval_gate.core.model import Hit
from retrieval_gate.errors import GateError
from tests.helpers.waiting import GUARD

SECRET = "Bearer s3cr3t-t0ken"


@dataclass
class Seen:
    """What the server received, and its scripted failures."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    failures: list[int] = field(default_factory=lambda: [500, 429])
    release: threading.Event = field(default_factory=threading.Event)
    retry_after: list[str] = field(default_factory=list)
    times: list[float] = field(default_factory=list)


class Handler(BaseHTTPRequestHandler):
    seen: Seen

    def do_GET(self) -> None:
        self.route()

    def do_POST(self) -> None:
        self.route()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output quiet

    def route(self) -> None:
        url = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body: Any = json.loads(raw) if raw else None
        request = {
            "method": self.command,
            "path": url.path,
            "query": parse_qs(url.query),
            "headers": dict(self.headers),
            "body": body,
        }
        self.seen.requests.append(request)
        if url.path == "/search":
            k = body.get("top_k", body.get("k"))
            hits = [{"id": f"d{i}", "score": 1.0 - i / 10} for i in range(k)]
            self.reply(200, {"hits": hits})
        elif url.path == "/es":
            hits = [{"_source": {"doc_id": "g1"}, "_score": 2.5}, {"_source": {"doc_id": 7}}]
            self.reply(200, {"data": {"results": hits}})
        elif url.path == "/with-text":
            hits = [
                {"id": "a", "body": "Red shoes\n::error::x"},
                {"id": "b"},
                {"id": "c", "body": 3},
            ]
            self.reply(200, {"hits": hits})
        elif url.path == "/ids":
            self.reply(200, {"hits": ["a", "b", "a", "c"]})
        elif url.path == "/batch":
            lists = [[{"id": f"{q['id']}-{i}"} for i in range(body["k"])] for q in body["queries"]]
            self.reply(200, {"results": lists})
        elif url.path == "/flaky":
            status = self.seen.failures.pop(0) if self.seen.failures else 200
            self.reply(status, {"hits": [{"id": "ok"}]} if status == 200 else "busy, try later")
        elif url.path == "/limited":  # 429 with the scripted Retry-After values, then 200
            self.seen.times.append(time.monotonic())
            if self.seen.retry_after:
                header = {"Retry-After": self.seen.retry_after.pop(0)}
                self.reply(429, "slow down", headers=header)
            else:
                self.reply(200, {"hits": [{"id": "ok"}]})
        elif url.path == "/slow":
            self.seen.release.wait(GUARD)  # the fixture releases it on teardown
            self.reply(200, {"hits": []})
        elif url.path == "/malformed":
            self.reply(200, "<html>not json", raw=True)
        elif url.path == "/missing":
            self.reply(200, {"results": []})
        else:
            self.reply(404, {"error": "no such route"})

    def reply(
        self, status: int, payload: Any, *, raw: bool = False, headers: dict[str, str] | None = None
    ) -> None:
        data = (payload if raw else json.dumps(payload)).encode()
        try:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass  # the client gave up (the timeout test)


@pytest.fixture
def server() -> Iterator[tuple[str, Seen]]:
    seen = Seen()
    handler = type("BoundHandler", (Handler,), {"seen": seen})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    finally:
        seen.release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


@pytest.fixture(params=["aiohttp", "httpx"])
def make(request: pytest.FixtureRequest) -> Iterator[Any]:
    """Builds retrievers on each HTTP client the adapter may use: they must behave alike."""
    built: list[HttpRetriever] = []

    def build(**settings: Any) -> HttpRetriever:
        retriever = HttpRetriever(HttpConfig(**settings), client=request.param)
        built.append(retriever)
        return retriever

    yield build
    for retriever in built:
        retriever.close()


QUERY = Query("q1", "red shoes", {"intent": "shop", "tags": ["a", "b"]})


def test_post_sends_templated_body_and_headers(server: tuple[str, Seen], make: Any) -> None:
    url, seen = server
    retriever = make(
        url=f"{url}/search",
        headers={"Authorization": SECRET, "X-Intent": "{metadata.intent}"},
        body={
            "q": "{query}",
            "top_k": "{k}",
            "qid": "{id}",
            "tags": "{metadata.tags}",
            "note": "k={k} for {query}",
        },
    )
    hits = retriever.search(QUERY, 3)
    assert hits == [Hit("d0", 1.0), Hit("d1", 0.9), Hit("d2", 0.8)]
    request = seen.requests[-1]
    assert request["method"] == "POST"
    assert request["headers"]["Authorization"] == SECRET
    assert request["headers"]["X-Intent"] == "shop"
    assert request["body"] == {
        "q": "red shoes",
        "top_k": 3,
        "qid": "q1",
        "tags": ["a", "b"],
        "note": "k=3 for red shoes",
    }


def test_default_post_body(server: tuple[str, Seen], make: Any) -> None:
    url, seen = server
    make(url=f"{url}/search").search(QUERY, 2)
    assert seen.requests[-1]["body"] == {"query": "red shoes", "k": 2}


def test_get_with_params_and_nested_paths(server: tuple[str, Seen], make: Any) -> None:
    url, seen = server
    retriever = make(
        url=f"{url}/es?q={{query}}",
        method="GET",
        params={"size": "{k}", "intent": "{metadata.intent}"},
        results="data.results[*]",
        id="_source.doc_id",
        score=None,
    )
    assert retriever.search(QUERY, 5) == [Hit("g1"), Hit("7")]
    request = seen.requests[-1]
    assert request["method"] == "GET"
    assert request["body"] is None
    assert request["query"] == {"q": ["red shoes"], "size": ["5"], "intent": ["shop"]}


def test_score_paths_and_bare_id_hits(server: tuple[str, Seen], make: Any) -> None:
    url, _ = server
    es = make(url=f"{url}/es", results="data.results", id="_source.doc_id", score="_score")
    assert es.search(QUERY, 5) == [Hit("g1", 2.5), Hit("7")]  # a hit without a score
    not_a_number = make(
        url=f"{url}/es", results="data.results", id="_source.doc_id", score="_source"
    )
    with pytest.raises(RetrieverError, match=r"hit 1: score \{'doc_id': 'g1'\} is not a number"):
        not_a_number.search(QUERY, 5)
    assert make(url=f"{url}/ids", score=None).search(QUERY, 10) == [Hit("a"), Hit("b"), Hit("c")]


def test_a_text_path_carries_the_documents_text(server: tuple[str, Seen], make: Any) -> None:
    url, _ = server
    plain = make(url=f"{url}/with-text", score=None)
    assert [hit.text for hit in plain.search(QUERY, 5)] == [None, None, None]
    with_text = make(url=f"{url}/with-text", score=None, text="body")
    # A hit without text, or with a number there, has none: the judge reads the corpus.
    assert with_text.search(QUERY, 5) == [
        Hit("a", None, "Red shoes\n::error::x"),
        Hit("b"),
        Hit("c"),
    ]
    assert with_text.describe()["text"] == "body"
    assert "text" not in plain.describe()  # fingerprints of configs without it are unchanged


def test_500_then_429_are_retryable_then_success(server: tuple[str, Seen], make: Any) -> None:
    url, _ = server
    retriever = make(url=f"{url}/flaky")
    for status in (500, 429):
        with pytest.raises(RetrieverError, match=f'HTTP {status}: "busy') as caught:
            retriever.search(QUERY, 3)
        assert caught.value.retryable is True
    assert retriever.search(QUERY, 3) == [Hit("ok")]


def test_timeout_is_retryable(server: tuple[str, Seen], make: Any) -> None:
    url, _ = server
    with pytest.raises(RetrieverError, match=r"no answer within 0.2s") as caught:
        make(url=f"{url}/slow", timeout=0.2).search(QUERY, 3)
    assert caught.value.retryable is True


def test_connection_refused_is_retryable(make: Any) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(RetrieverError, match=r"Connect\w*Error") as caught:
        make(url=f"http://127.0.0.1:{port}/search").search(QUERY, 3)
    assert caught.value.retryable is True


def test_client_errors_and_bad_bodies_are_not_retryable(
    server: tuple[str, Seen], make: Any
) -> None:
    url, _ = server
    cases = [
        ("/nope", r"HTTP 404: \{\"error\": \"no such route\"\}"),
        ("/malformed", r"response is not JSON: <html>not json"),
        ("/missing", r"response has no 'hits' at path hits\[\*\]"),
    ]
    for path, message in cases:
        with pytest.raises(RetrieverError, match=message) as caught:
            make(url=f"{url}{path}").search(QUERY, 3)
        assert caught.value.retryable is False


def test_missing_metadata_field_is_named(server: tuple[str, Seen], make: Any) -> None:
    url, _ = server
    retriever = make(
        url=f"{url}/search", body={"query": "{query}", "k": "{k}", "s": "{metadata.seg}"}
    )
    with pytest.raises(RetrieverError, match="query 'q1' has no metadata field 'seg'"):
        retriever.search(QUERY, 3)


def test_batches_send_queries_and_read_lists(server: tuple[str, Seen], make: Any) -> None:
    url, seen = server
    retriever = make(url=f"{url}/batch", batch_size=2, results="results[*]")
    assert retriever.batch_size() == 2
    results = retriever.search_batch([QUERY, Query("q2", "blue")], 2)
    assert results == [[Hit("q1-0"), Hit("q1-1")], [Hit("q2-0"), Hit("q2-1")]]
    assert seen.requests[-1]["body"] == {
        "queries": [{"id": "q1", "text": "red shoes"}, {"id": "q2", "text": "blue"}],
        "k": 2,
    }
    with pytest.raises(GateError, match=r"needs a retriever\.body that uses"):
        make(url=f"{url}/batch", batch_size=2, body={"q": "{query}"})


def test_bad_urls_and_paths_fail_at_build(make: Any) -> None:
    with pytest.raises(GateError, match="must start with http"):
        make(url="localhost:8080/search")
    with pytest.raises(GateError, match=r"retriever.results: cannot read path 'hits\.\.x'"):
        make(url="http://localhost/search", results="hits..x")


def test_description_hides_header_values_and_secret_params() -> None:
    config = HttpConfig(
        url="http://h/search?api_key=k3y-value&lang=en",
        headers={"Authorization": SECRET, "X-Api-Key": "another-secret"},
        params={"token": "t0k3n", "index": "v1"},
    )
    retriever = HttpRetriever(config)
    try:
        text = json.dumps(retriever.describe())
    finally:
        retriever.close()
    for secret in (SECRET, "s3cr3t", "another-secret", "k3y-value", "t0k3n"):
        assert secret not in text
    assert "Authorization" in text
    assert "index" in text


def test_fingerprint_follows_url_params_and_body() -> None:
    def print_of(**settings: Any) -> str:
        retriever = HttpRetriever(HttpConfig(**{"url": "http://h/search", **settings}))
        try:
            return fingerprint(retriever.describe())
        finally:
            retriever.close()

    base = print_of()
    assert print_of(concurrency=2, timeout=5, headers={"Authorization": "x"}) != base
    assert print_of(concurrency=2, timeout=5) == base
    assert print_of(url="http://h/v2/search") != base
    assert print_of(params={"index": "v2"}) != base
    assert print_of(body={"q": "{query}"}) != base


def test_retry_after_seconds_is_waited_for_before_the_next_request(
    server: tuple[str, Seen], make: Any
) -> None:
    url, seen = server
    seen.retry_after = ["1"]
    retriever = make(url=f"{url}/limited")
    with pytest.raises(
        RetrieverError, match=r"HTTP 429 \(Retry-After: the next request waits 1s\)"
    ):
        retriever.search(QUERY, 3)
    started = time.monotonic()
    assert retriever.search(QUERY, 3) == [Hit("ok")]
    assert time.monotonic() - started >= 0.9
    assert seen.times[1] - seen.times[0] >= 0.9


def test_the_runner_retry_honours_retry_after(server: tuple[str, Seen], make: Any) -> None:
    from retrieval_gate.execution.runner import RunSettings, run_queries

    url, seen = server
    seen.retry_after = ["1"]
    retriever = make(url=f"{url}/limited")
    started = time.monotonic()
    result = run_queries(retriever, [QUERY], 3, RunSettings(retries=2, timeout=10.0))
    elapsed = time.monotonic() - started
    assert not result.failures
    assert [hit.doc_id for hit in result.hits["q1"]] == ["ok"]
    assert len(seen.times) == 2  # one 429, then one request after the wait: no early retries
    assert seen.times[1] - seen.times[0] >= 0.9
    assert elapsed >= 0.9  # waited; the cap is the message's figure, not a wall-clock limit


def test_retry_after_as_an_http_date_and_its_bounds(server: tuple[str, Seen], make: Any) -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=timezone.utc)
    date = format_datetime(now + timedelta(seconds=7), usegmt=True)
    assert retry_after_seconds(date, now) == 7.0
    assert retry_after_seconds(format_datetime(now - timedelta(hours=1), usegmt=True), now) == 0
    assert retry_after_seconds("120", now) == 120.0
    assert retry_after_seconds("soon", now) is None
    assert retry_after_seconds(None, now) is None
    assert MAX_RETRY_AFTER == 30.0
    url, seen = server
    seen.retry_after = ["3600"]  # an hour: cut to 30 s, whatever the timeout
    retriever = make(url=f"{url}/limited", timeout=1.0)
    sent = time.monotonic()
    with pytest.raises(RetrieverError, match=r"the next request waits 30s"):
        retriever.search(QUERY, 3)
    assert sent + 30 <= retriever.resume_at() <= time.monotonic() + 30  # 30 s from the answer


def test_the_runner_waits_a_retry_after_longer_than_the_timeout(
    server: tuple[str, Seen], make: Any
) -> None:
    # The timeout bounds one request, not the wait between two: a 1 s timeout used to cut a
    # 2 s Retry-After to 0.5 s, hammering a rate-limited service twice a second.
    from retrieval_gate.execution.runner import RunSettings, run_queries

    url, seen = server
    seen.retry_after = ["2"]
    retriever = make(url=f"{url}/limited", timeout=1.0)
    result = run_queries(retriever, [QUERY], 3, RunSettings(retries=2, timeout=1.0))
    assert not result.failures
    assert len(seen.times) == 2
    assert seen.times[1] - seen.times[0] >= 1.9
