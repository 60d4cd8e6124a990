"""The http retriever's two HTTP clients send the same request and read answers alike."""

from __future__ import annotations

import base64
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from retrieval_gate.adapters import HttpConfig, Query, RetrieverError, http_client
from retrieval_gate.adapters.http import HttpRetriever
from retrieval_gate.adapters.http_client import UnansweredError, json_body, open_client
from retrieval_gate.errors import GateError

QUERY = Query("q1", 'caf\u00e9 \u2603 "quoted"\n::error::x', {"n": 1})


class Recorder(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list[tuple[str, str, dict[str, str], bytes]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {name.lower(): value for name, value in self.headers.items()}
        self.seen.append((self.command, self.path, headers, body))
        if self.path.startswith("/moved"):
            self.send_response(302)
            self.send_header("Location", "http://elsewhere.invalid/")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = json.dumps({"hits": [{"id": "d1", "score": 1}]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, list[tuple[str, str, dict[str, str], bytes]]]]:
    seen: list[tuple[str, str, dict[str, str], bytes]] = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), type("R", (Recorder,), {"seen": seen}))
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    finally:
        httpd.shutdown()
        thread.join()
        httpd.server_close()


def test_both_clients_send_the_same_request(server: Any) -> None:
    url, seen = server
    config = HttpConfig(
        url=f"{url}/s?q={{query}}&fixed=1",
        params={"id": "{id}"},
        headers={"X-Api-Key": "k3y-v4lue", "X-N": "{metadata.n}"},
        body={"q": "{query}", "k": "{k}", "nested": ["{id}", {"n": "{metadata.n}"}]},
    )
    for client in ("aiohttp", "httpx"):
        retriever = HttpRetriever(config, client=client)
        try:
            assert [hit.doc_id for hit in retriever.search(QUERY, 3)] == ["d1"]
        finally:
            retriever.close()
    (m1, path1, h1, body1), (m2, path2, h2, body2) = seen
    assert (m1, path1, body1) == (m2, path2, body2)
    assert body1 == json_body({"q": QUERY.text, "k": 3, "nested": ["q1", {"n": 1}]})
    for name in ("content-type", "x-api-key", "x-n", "content-length", "host"):
        assert h1[name] == h2[name], name
    assert h1["content-type"] == "application/json"
    assert path1.startswith("/s?q=caf%C3%A9")
    assert "&fixed=1" in path1
    assert path1.endswith("&id=q1")


def test_a_content_type_of_the_config_is_kept(server: Any) -> None:
    url, seen = server
    config = HttpConfig(url=f"{url}/s", headers={"content-type": "application/x-ndjson"})
    for client in ("aiohttp", "httpx"):
        retriever = HttpRetriever(config, client=client)
        try:
            retriever.search(QUERY, 3)
        finally:
            retriever.close()
    assert [headers["content-type"] for _, _, headers, _ in seen] == ["application/x-ndjson"] * 2


@pytest.mark.parametrize("client", ["aiohttp", "httpx"])
def test_redirects_are_not_followed(server: Any, client: Any) -> None:
    url, seen = server
    retriever = HttpRetriever(HttpConfig(url=f"{url}/moved"), client=client)
    try:
        with pytest.raises(RetrieverError, match="redirects are not followed"):
            retriever.search(QUERY, 3)
    finally:
        retriever.close()
    assert len(seen) == 1


@pytest.mark.parametrize("client", ["aiohttp", "httpx"])
def test_a_refused_connection_hides_the_urls_password(client: Any) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    retriever = HttpRetriever(
        HttpConfig(url=f"http://user:pa55-w0rd@127.0.0.1:{port}/s"), client=client
    )
    try:
        with pytest.raises(RetrieverError) as caught:
            retriever.search(QUERY, 3)
    finally:
        retriever.close()
    assert caught.value.retryable is True
    assert "pa55-w0rd" not in str(caught.value)


@pytest.mark.parametrize("client", ["aiohttp", "httpx"])
def test_close_is_idempotent_and_a_closed_client_answers_nothing(client: Any) -> None:
    opened = open_client(client, 2, 1.0)
    opened.close()
    opened.close()
    with pytest.raises((UnansweredError, RuntimeError)):  # httpx: RuntimeError
        opened.send("GET", "http://127.0.0.1:9/", {}, None)


def test_aiohttp_is_the_default_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("aiohttp")
    assert http_client.default_client() == "aiohttp"
    monkeypatch.setattr(http_client.importlib.util, "find_spec", lambda name: None)
    assert http_client.default_client() == "httpx"
    opened = open_client(None, 1, 1.0)
    opened.close()
    assert opened.name == "httpx"


def test_the_urls_user_info_is_basic_auth_over_any_authorization_header(server: Any) -> None:
    url, seen = server
    config = HttpConfig(
        url=url.replace("http://", "http://us%40er:p%3Ass@") + "/s",
        headers={"authorization": "Bearer replaced"},
    )
    for client in ("aiohttp", "httpx"):
        retriever = HttpRetriever(config, client=client)
        try:
            retriever.search(QUERY, 3)
        finally:
            retriever.close()
    expected = "Basic " + base64.b64encode(b"us@er:p:ss").decode()
    assert [headers["authorization"] for _, _, headers, _ in seen] == [expected] * 2


@pytest.mark.parametrize("chosen", ["httpx", "aiohttp", " HTTPX "])
def test_the_environment_names_the_client_over_the_default(
    chosen: str, server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    if "aiohttp" in chosen:
        pytest.importorskip("aiohttp")
    monkeypatch.setenv("RETRIEVAL_GATE_HTTP_CLIENT", chosen)
    url, seen = server
    retriever = HttpRetriever(HttpConfig(url=f"{url}/s"))
    try:
        assert retriever.search(QUERY, 3)[0].doc_id == "d1"
        assert retriever._client.name == chosen.strip().lower()
    finally:
        retriever.close()
    assert len(seen) == 1
    # An explicit client still wins over the environment.
    monkeypatch.setenv("RETRIEVAL_GATE_HTTP_CLIENT", "httpx")
    opened = open_client("httpx", 1, 1.0)
    opened.close()
    assert opened.name == "httpx"


@pytest.mark.parametrize("chosen", ["curl", "httpx\n::error::forged", "\x1b[31mred" * 50])
def test_an_unknown_client_in_the_environment_is_a_clear_error(
    chosen: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RETRIEVAL_GATE_HTTP_CLIENT", chosen)
    with pytest.raises(GateError) as caught:
        open_client(None, 1, 1.0)
    message = str(caught.value)
    assert message.startswith("RETRIEVAL_GATE_HTTP_CLIENT is ")
    assert "set it to httpx or aiohttp" in message
    assert "\n" not in message
    assert "\x1b" not in message
    assert len(message) < 200


def test_aiohttp_named_but_not_installed_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(http_client.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(GateError, match=r"aiohttp, which is not installed: pip install"):
        http_client.default_client({"RETRIEVAL_GATE_HTTP_CLIENT": "aiohttp"})
    assert http_client.default_client({}) == "httpx"
