"""The embedding block: a real Python callable, a real local OpenAI-compatible endpoint over
HTTP, and wordllama's bundled weights loaded with the network out of reach."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import TypeAdapter, ValidationError

from retrieval_gate.adapters.stores.embeddings import EmbeddingConfig, embedder
from retrieval_gate.core import redaction
from retrieval_gate.errors import GateError, RetrieverError
from tests.helpers.local_server import Answer, free_port, serving
from tests.helpers.paths import REPO

_OPEN: list[Any] = []
"""The embedders a test made: closed after it (each holds a keep-alive connection)."""


def _embedder(config: EmbeddingConfig, root: Path) -> Any:
    made = embedder(config, root)
    _OPEN.append(made)
    return made


@pytest.fixture(autouse=True)
def _close_embedders() -> Iterator[None]:
    yield
    while _OPEN:
        _OPEN.pop().close()


CONFIG: TypeAdapter[Any] = TypeAdapter(EmbeddingConfig)


def parsed(value: Any) -> Any:
    return CONFIG.validate_python(value)


@pytest.fixture
def functions(tmp_path: Path) -> Path:
    module = f"rg_embed_{abs(hash(tmp_path)) % 10**8}"
    (tmp_path / f"{module}.py").write_text(
        textwrap.dedent(
            """
            calls = []

            def good(texts):
                calls.append(len(texts))
                return [[float(len(t)), 1.0, 0.0] for t in texts]

            def ragged(texts):
                return [[1.0] * (i + 1) for i, _ in enumerate(texts)]

            def too_few(texts):
                return [[1.0, 2.0]]

            def flat(texts):
                return [1.0 for _ in texts]

            def nan(texts):
                return [[float("nan"), 1.0] for _ in texts]

            def widening(texts):
                calls.append(len(texts))
                return [[1.0] * (len(calls) + 1) for _ in texts]

            def broken(texts):
                raise ConnectionError("embedding service down")

            not_callable = 3
            """
        )
    )
    return tmp_path / f"{module}.py"


def test_python_callable_is_batched_and_returns_float32_rows(functions: Path) -> None:
    config = parsed({"python": f"{functions.stem}:good", "batch": 2})
    embed = _embedder(config, functions.parent)
    vectors = embed(["a", "bb", "ccc", "dddd", "eeeee"])
    assert vectors.dtype == np.float32
    assert vectors.shape == (5, 3)
    assert vectors[:, 0].tolist() == [1, 2, 3, 4, 5]
    assert sys.modules[functions.stem].calls == [2, 2, 1]
    assert embed.dimension() == 3
    assert embed.describe() == {"python": f"{functions.stem}:good"}
    assert embed([]).shape == (0, 3)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("ragged", "not one vector per text"),
        ("too_few", "shape (1, 2) for 2 texts"),
        ("flat", "shape (2,) for 2 texts"),
        ("nan", "NaN or infinite"),
        ("broken", "raised ConnectionError: embedding service down"),
    ],
)
def test_a_callable_with_the_wrong_shape_is_a_clear_error(
    functions: Path, name: str, message: str
) -> None:
    embed = _embedder(parsed({"python": f"{functions.stem}:{name}"}), functions.parent)
    with pytest.raises(RetrieverError, match=r"retriever\.embedding") as error:
        embed(["one", "two"])
    assert message in str(error.value)


def test_a_width_that_changes_between_calls_is_an_error(functions: Path) -> None:
    embed = _embedder(
        parsed({"python": f"{functions.stem}:widening", "batch": 1}), functions.parent
    )
    with pytest.raises(RetrieverError, match="width 3, expected 2"):
        embed(["one", "two"])


def test_a_target_that_is_not_callable_is_a_gate_error(functions: Path) -> None:
    with pytest.raises(GateError, match="not a callable"):
        _embedder(parsed({"python": f"{functions.stem}:not_callable"}), functions.parent)


@pytest.mark.parametrize(
    "value",
    [{}, {"python": "m:f", "wordllama": {}}, {"wordllama": {"dim": 512}}, {"openai": {"url": "x"}}],
)
def test_the_block_names_exactly_one_source(value: Any) -> None:
    with pytest.raises(ValidationError):
        parsed(value)


class Endpoint:
    """An OpenAI-compatible embeddings server's behaviour, and the requests it saw."""

    def __init__(self, width: int = 4, status: int = 200, body: bytes | None = None) -> None:
        self.width, self.status, self.body = width, status, body
        self.requests: list[tuple[str, Mapping[str, str], Any]] = []

    def __call__(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Answer:
        request = json.loads(body)
        self.requests.append((path, headers, request))
        if self.body is not None or self.status != 200:
            return self.status, {}, self.body or b'{"error": "no"}'
        width = request.get("dimensions") or self.width
        data = [
            {"object": "embedding", "index": i, "embedding": [float(len(t))] + [0.5] * (width - 1)}
            for i, t in enumerate(request["input"])
        ]
        data.reverse()  # the index, not the order, says which text a vector is for
        payload = {"object": "list", "data": data, "model": request["model"]}
        return 200, {"Content-Type": "application/json"}, json.dumps(payload).encode()


def openai(url: str, **extra: Any) -> Any:
    return parsed({"openai": {"url": f"{url}/v1", "model": "embed-small", **extra}})


def test_openai_endpoint_over_real_http(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RG_TEST_EMBED_KEY", "sk-test-embedding-key")
    endpoint = Endpoint()
    with serving(endpoint) as url:
        embed = _embedder(openai(url, batch=2, api_key_env="RG_TEST_EMBED_KEY"), Path("."))
        vectors = embed(["a", "bb", "ccc"])
        embed.close()
    assert vectors.shape == (3, 4)
    assert vectors[:, 0].tolist() == [1, 2, 3]
    assert [path for path, _, _ in endpoint.requests] == ["/v1/embeddings"] * 2
    assert [request["input"] for _, _, request in endpoint.requests] == [["a", "bb"], ["ccc"]]
    assert endpoint.requests[0][1]["Authorization"] == "Bearer sk-test-embedding-key"
    assert "sk-test" not in json.dumps(embed.describe())


def test_openai_dimensions_are_asked_for_and_checked() -> None:
    with serving(Endpoint()) as url:
        assert _embedder(openai(url, dimensions=8), Path("."))(["x"]).shape == (1, 8)
        assert _embedder(openai(url, dimensions=8), Path(".")).dimension() == 8
    narrow = Endpoint(body=json.dumps({"data": [{"index": 0, "embedding": [1.0]}]}).encode())
    with serving(narrow) as url, pytest.raises(RetrieverError, match="width 1, expected 8"):
        _embedder(openai(url, dimensions=8), Path("."))(["x"])


def test_a_failing_endpoint_is_an_error_with_the_key_redacted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = "sk-leaky-key-0123456789"
    monkeypatch.setenv("RG_TEST_EMBED_KEY", key)
    body = f"invalid key {key}\n::error::forged".encode()
    try:
        with serving(Endpoint(status=401, body=body)) as url:
            embed = _embedder(openai(url, api_key_env="RG_TEST_EMBED_KEY"), Path("."))
            with pytest.raises(RetrieverError) as error:
                embed(["x"])
        message = str(error.value)
        assert key not in message
        assert "<redacted>" in message
        assert "api_key_env" in message
        assert "\n" not in message
        assert not error.value.retryable
        with serving(Endpoint(status=503)) as url, pytest.raises(RetrieverError) as error:
            _embedder(openai(url), Path("."))(["x"])
        assert error.value.retryable
        with (
            serving(Endpoint(body=b"<html>not json</html>")) as url,
            pytest.raises(RetrieverError, match="no data"),
        ):
            _embedder(openai(url), Path("."))(["x"])
        with pytest.raises(RetrieverError, match="ConnectError") as error:
            _embedder(openai(f"http://user:{key}@127.0.0.1:{free_port()}"), Path("."))(["x"])
        assert key not in str(error.value)
    finally:
        redaction.forget()


def test_an_unset_key_variable_is_a_gate_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RG_TEST_EMBED_UNSET", raising=False)
    with pytest.raises(GateError, match="RG_TEST_EMBED_UNSET, which is not set"):
        _embedder(openai("http://127.0.0.1:1", api_key_env="RG_TEST_EMBED_UNSET"), Path("."))


def test_wordllama_vectors_are_unit_length_and_truncate() -> None:
    root = logging.getLogger()
    before = (list(root.handlers), root.level)
    embed = _embedder(parsed({"wordllama": {"dim": 128}}), Path("."))
    assert (list(root.handlers), root.level) == before  # its import-time basicConfig undone
    vectors = embed(["reset my password", "reset my password", "export invoices to csv"])
    assert vectors.shape == (3, 128)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vectors[0], vectors[1])
    assert embed.describe()["wordllama"]["dim"] == 128
    full = _embedder(parsed({"wordllama": {}}), Path("."))
    assert full.dimension() == 256


GUARD = textwrap.dedent(
    """
    import socket, sys
    attempts = []
    real_connect = socket.socket.connect

    def guarded(self, address):
        if isinstance(address, tuple) and address[0] not in ("127.0.0.1", "::1", "localhost"):
            attempts.append(address)
            raise OSError(f"network is out of reach in this test: {address}")
        return real_connect(self, address)

    socket.socket.connect = guarded
    real_getaddrinfo = socket.getaddrinfo

    def no_lookup(host, *args, **kwargs):
        if host not in ("127.0.0.1", "::1", "localhost"):
            attempts.append(host)
            raise OSError(f"no name lookups in this test: {host}")
        return real_getaddrinfo(host, *args, **kwargs)

    socket.getaddrinfo = no_lookup
    from pathlib import Path
    from retrieval_gate.adapters.stores.embeddings import WordLlamaEmbedding, embedder
    vectors = embedder(WordLlamaEmbedding(), Path("."))(["how do I export my data"])
    print(vectors.shape, "attempts:", attempts)
    """
)


def test_wordllama_loads_with_no_network(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "HOME": str(tmp_path),  # no ~/.cache/wordllama copy to fall back on
        "HF_HUB_OFFLINE": "1",
        "HTTP_PROXY": dead,
        "HTTPS_PROXY": dead,
        "http_proxy": dead,
        "https_proxy": dead,
    }
    done = subprocess.run(
        [sys.executable, "-c", GUARD],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(1, 256) attempts: []"
    assert not (tmp_path / ".cache").exists()
