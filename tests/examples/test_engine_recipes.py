"""The Elasticsearch, OpenSearch and Vespa recipes in configs/adapters/ against local servers
that answer in each engine's documented shapes, over real HTTP on 127.0.0.1.

The shapes, as the engines document them:
- Elasticsearch search API (OpenSearch keeps it): `{"took": 5, "timed_out": false,
  "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0}, "hits": {"total":
  {"value": 20, "relation": "eq"}, "max_score": 1.38, "hits": [{"_index": "my-index-000001",
  "_id": "0", "_score": 1.38, "_source": {...}}]}}`; an error: `{"error": {"root_cause":
  [{"type": "index_not_found_exception", "reason": "no such index [...]", ...}], "type":
  ..., "reason": ...}, "status": 404}`; a failed shard: a 200 whose `_shards` has `failed`
  > 0 and `failures: [{"shard", "index", "node", "reason": {"type", "reason"}}]`.
- Vespa default JSON result format (docs.vespa.ai/en/reference/default-result-format.html):
  `root` is mandatory; `root.children` (the hits, each with `id`, `relevance`, `source`,
  `fields`) and `root.errors` (each with `code`, `summary`, `message`) are optional, so a
  query that matched nothing has no `children`; document ids read
  `id:<namespace>:<document-type>:<key/value-pair>:<user-specified>`.
"""

from __future__ import annotations

import base64
import importlib.util
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

import pytest

from retrieval_gate.adapters.http import HttpRetriever
from retrieval_gate.config.loader import load
from retrieval_gate.core.model import Query
from retrieval_gate.errors import RetrieverError
from retrieval_gate.pipeline.execute import execute
from tests.helpers.cli import run_cli
from tests.helpers.local_server import Answer, serving
from tests.helpers.paths import CONFIGS

ADAPTERS = CONFIGS / "adapters"
API_KEY = "es-k3y-VnVhQ2ZHY0JDZGJrUW0tZTVhT3g6dWkybHAyYXhUTm1zeWFrdzl0dk5udw"
BASIC = base64.b64encode(b"gate:0pen-s3same-pw").decode()
TOKEN = "vespa_cloud_t0ken_Zm9vYmFy"
HOSTILE = 'how do I "reset"\\ my password"}}, "size": 10000, "x": {"y": "\n::error::pwned'
Engine = Callable[[str, str, Mapping[str, str], bytes], Answer]


def _keyword_search() -> ModuleType:
    """configs/adapters/my_retriever.py, the keyword search every local engine answers with."""
    spec = importlib.util.spec_from_file_location(
        "recipes_my_retriever", ADAPTERS / "my_retriever.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SEARCH = _keyword_search()


def _json(status: int, payload: Any) -> Answer:
    return status, {"Content-Type": "application/json"}, json.dumps(payload).encode()


def _es_error(status: int, kind: str, reason: str) -> Answer:
    cause = {"type": kind, "reason": reason}
    return _json(status, {"error": {"root_cause": [cause], **cause}, "status": status})


def search_engine(authorization: str, seen: list[Any], shard_failure: bool = False) -> Engine:
    """Elasticsearch's (and OpenSearch's) `POST /<index>/_search` over the tiny corpus."""

    def respond(method: str, path: str, headers: Mapping[str, str], body: bytes) -> Answer:
        if headers.get("Authorization") != authorization:
            # A proxy in front that echoes what it was sent: the gate must not repeat it.
            return _es_error(401, "security_exception", f"bad credentials {headers}")
        if method != "POST" or urlsplit(path).path != "/help-centre/_search":
            return _es_error(404, "index_not_found_exception", f"no such index [{path}]")
        request = json.loads(body)
        seen.append(request)
        match = request["query"]["multi_match"]
        if not isinstance(request["size"], int) or not isinstance(match["query"], str):
            return _es_error(400, "parsing_exception", "[size] must be a number")
        found = SEARCH.search(match["query"], request["size"], {})
        hits = [{"_index": "help-centre", "_id": doc, "_score": score} for doc, score in found]
        shards = {"total": 2, "successful": 2, "skipped": 0, "failed": 0}
        if shard_failure:
            failure = {"type": "node_not_connected_exception", "reason": "[node-2] not connected"}
            shards = {**shards, "successful": 1, "failed": 1}
            shards["failures"] = [{"shard": 1, "index": "help-centre", "reason": failure}]
        top = max((score for _, score in found), default=None)
        total = {"value": len(found), "relation": "eq"}
        return _json(
            200,
            {
                "took": 3,
                "timed_out": False,
                "_shards": shards,
                "hits": {"total": total, "max_score": top, "hits": hits},
            },
        )

    return respond


def vespa(seen: list[Any], partial: bool = False) -> Engine:
    """Vespa's `POST /search/` with a JSON query over the tiny corpus."""

    def respond(method: str, path: str, headers: Mapping[str, str], body: bytes) -> Answer:
        if headers.get("Authorization") != f"Bearer {TOKEN}":
            return _json(401, {"message": f"token {headers.get('Authorization')} not valid"})
        request = json.loads(body)
        seen.append(request)
        if "userQuery()" not in request.get("yql", "") or not isinstance(request["hits"], int):
            error = {"code": 4, "summary": "Invalid query parameter", "message": "bad yql"}
            root = {"id": "toplevel", "relevance": 1.0, "fields": {"totalCount": 0}}
            return _json(400, {"root": {**root, "errors": [error]}})
        found = SEARCH.search(request["query"], request["hits"], {})
        root = {"id": "toplevel", "relevance": 1.0, "fields": {"totalCount": len(found)}}
        root["coverage"] = {"coverage": 100, "documents": 12, "full": True, "nodes": 1}
        if found:  # Vespa leaves out children when nothing matched
            root["children"] = [
                {
                    "id": f"id:help:doc::{doc}",
                    "relevance": score,
                    "source": "content",
                    "fields": {"sddocname": "doc", "documentid": f"id:help:doc::{doc}"},
                }
                for doc, score in found
            ]
        if partial:
            message = "Connection failure on nodes with distribution-keys: 1"
            root["errors"] = [
                {"code": 10, "summary": "Backend communication error", "message": message}
            ]
        return _json(200, {"root": root})

    return respond


@pytest.fixture
def expected() -> dict[str, list[str]]:
    """Each tiny query's ids as the keyword search ranks them: what every recipe must read."""
    config = load(ADAPTERS / "elasticsearch.yaml", environ={})
    lines = config.resolve(config.dataset.queries or "").read_text().splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    return {row["_id"]: [doc for doc, _ in SEARCH.search(row["text"], 10, {})] for row in rows}


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> Callable[[str, str], None]:
    def point(url_variable: str, url: str) -> None:
        monkeypatch.setenv(url_variable, url)
        monkeypatch.setenv("ES_API_KEY", API_KEY)
        monkeypatch.setenv("OPENSEARCH_AUTH", BASIC)
        monkeypatch.setenv("VESPA_TOKEN", TOKEN)

    return point


def ranks_as(config: Path, expected: dict[str, list[str]]) -> None:
    """The config's run has no failure and ranks every labelled query as `expected`."""
    result = execute(config, cache=False)
    assert not result.run.failures
    found = {query: [hit.doc_id for hit in hits] for query, hits in result.run.hits.items()}
    assert len(found) >= 5
    assert found == {query: expected[query] for query in found}


@pytest.mark.parametrize(
    ("recipe", "variable", "authorization"),
    [
        ("elasticsearch", "ES_URL", f"ApiKey {API_KEY}"),
        ("opensearch", "OPENSEARCH_URL", f"Basic {BASIC}"),
    ],
)
def test_search_api_recipes_read_ids_and_scores(
    recipe: str, variable: str, authorization: str, environment: Any, expected: Any
) -> None:
    seen: list[Any] = []
    with serving(search_engine(authorization, seen)) as url:
        environment(variable, f"{url}/help-centre/_search")
        ranks_as(ADAPTERS / f"{recipe}.yaml", expected)
    assert {request["size"] for request in seen} == {10}
    assert seen[0]["query"]["multi_match"]["fields"] == ["title^2", "text"]


def test_vespa_recipe_reads_ids_inside_document_ids(environment: Any, expected: Any) -> None:
    seen: list[Any] = []
    with serving(vespa(seen)) as url:
        environment("VESPA_URL", f"{url}/search/")
        ranks_as(ADAPTERS / "vespa.yaml", expected)
        retriever = _retriever("vespa")
        try:  # no word in common: Vespa's answer has no children at all
            assert retriever.search(Query("none", "zzzz qqqq"), 10) == []
        finally:
            retriever.close()
    assert seen[0]["yql"] == "select * from sources * where userQuery()"
    assert seen[0]["hits"] == 10


def _retriever(recipe: str) -> HttpRetriever:
    config = load(ADAPTERS / f"{recipe}.yaml")
    return HttpRetriever(config.retriever)  # type: ignore[arg-type]


@pytest.mark.parametrize("recipe", ["elasticsearch", "vespa"])
def test_hostile_query_text_is_one_json_string(recipe: str, environment: Any) -> None:
    """Quotes, backslashes and braces in a query stay inside the query string: they cannot
    add keys to the request (a bigger size, another query)."""
    seen: list[Any] = []
    engine = search_engine(f"ApiKey {API_KEY}", seen) if recipe == "elasticsearch" else vespa(seen)
    with serving(engine) as url:
        environment("ES_URL", f"{url}/help-centre/_search")
        environment("VESPA_URL", f"{url}/search/")
        retriever = _retriever(recipe)
        try:
            hits = retriever.search(Query("hostile", HOSTILE), 3)
        finally:
            retriever.close()
    if recipe == "elasticsearch":
        assert seen == [
            {
                "size": 3,
                "_source": False,
                "query": {"multi_match": {"query": HOSTILE, "fields": ["title^2", "text"]}},
            }
        ]
    else:
        assert (seen[0]["query"], seen[0]["hits"], "x" in seen[0]) == (HOSTILE, 3, False)
    assert [hit.doc_id for hit in hits] == [doc for doc, _ in SEARCH.search(HOSTILE, 3, {})]


def test_engine_errors_surface_named_and_redacted(
    environment: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A missing index, rejected credentials that the engine echoes back, a failed shard:
    each a clear error naming what the engine said, and never the key."""
    seen: list[Any] = []
    recipe = ("run", "-c", ADAPTERS / "elasticsearch.yaml", "--no-cache")  # no cache in configs/
    with serving(search_engine(f"ApiKey {API_KEY}", seen)) as url:
        environment("ES_URL", f"{url}/no-such-index/_search")
        code, out, err = run_cli(*recipe)
        assert code == 2
        assert "HTTP 404" in err, err
        assert "index_not_found_exception" in err
        environment("ES_URL", f"{url}/help-centre/_search")
        wrong = "wr0ng-" + API_KEY[::-1]
        monkeypatch.setenv("ES_API_KEY", wrong)
        code, out, err = run_cli(*recipe)
    assert code == 2
    assert "HTTP 401: {" in err, err
    assert "security_exception" in err
    assert "<redacted>" in err
    assert wrong[:20] not in out + err
    with serving(search_engine(f"ApiKey {API_KEY}", seen, shard_failure=True)) as url:
        environment("ES_URL", f"{url}/help-centre/_search")
        retriever = _retriever("elasticsearch")
        try:
            with pytest.raises(RetrieverError, match="node_not_connected_exception") as raised:
                retriever.search(Query("q", "reset password"), 10)
        finally:
            retriever.close()
    assert "reports errors at _shards.failures" in str(raised.value)
    assert raised.value.retryable


def test_vespa_errors_fail_the_query(environment: Any) -> None:
    seen: list[Any] = []
    with serving(vespa(seen, partial=True)) as url:
        environment("VESPA_URL", f"{url}/search/")
        retriever = _retriever("vespa")
        try:
            with pytest.raises(RetrieverError, match="Backend communication error") as raised:
                retriever.search(Query("q", "reset password"), 10)
        finally:
            retriever.close()
        assert raised.value.retryable  # beside partial hits: a node may answer next time
        config = load(ADAPTERS / "vespa.yaml").retriever
        broken = config.model_copy(update={"body": {"yql": "select *", "query": "{query}"}})  # type: ignore[union-attr]
        retriever = HttpRetriever(broken)  # type: ignore[arg-type]
        try:
            with pytest.raises(RetrieverError) as raised:
                retriever.search(Query("q", "reset password"), 10)
        finally:
            retriever.close()
    # The HTTP error shows root.errors, not the body around them.
    assert str(raised.value).endswith(
        'HTTP 400: [{"code": 4, "summary": "Invalid query parameter", "message": "bad yql"}]'
    )
    assert not raised.value.retryable
