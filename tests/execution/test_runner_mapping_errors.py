"""A response the config cannot read stops the run early and is called a mapping error."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from tests.helpers.cli import run_cli
from tests.helpers.local_server import Answer, serving

QUERIES = 200


def write_gate(root: Path, url: str) -> Path:
    lines = [
        json.dumps({"id": f"q{i}", "text": f"text {i}", "qrels": {"d1": 1}}) for i in range(QUERIES)
    ]
    (root / "queries.jsonl").write_text("\n".join(lines) + "\n")
    config = root / "gate.yaml"
    config.write_text(
        "version: 1\nname: mapping\ndataset: {queries: queries.jsonl}\n"
        f'retriever: {{type: http, url: "{url}/search", results: "hits[*]", id: doc}}\n'
        "k: 10\nmetrics:\n  ndcg@10: {}\n"
    )
    return config


def test_a_mapping_error_echoing_each_query_stops_after_the_first_ten(tmp_path: Path) -> None:
    # Each response names its query, so no two failures read the same: the stop after ten
    # identical failures never fired, and all 200 queries were sent.
    calls: list[str] = []

    def respond(method: str, path: str, headers: Mapping[str, str], body: bytes) -> Answer:
        query = json.loads(body)["query"]
        calls.append(query)
        payload = json.dumps({"query": query, "results": [{"doc": "d1"}]}).encode()
        return 200, {"Content-Type": "application/json"}, payload

    with serving(respond) as url:
        code, _, err = run_cli("run", "-c", str(write_gate(tmp_path, url)), "--no-cache")
    assert code == 2
    assert len(calls) == 10
    assert "the first 10 queries all failed the same way" in err
    assert "response has no 'hits' at path hits[*]" in err


def test_a_mapping_error_past_the_budget_asks_for_the_mapping_not_a_budget(
    tmp_path: Path,
) -> None:
    def respond(method: str, path: str, headers: Mapping[str, str], body: bytes) -> Answer:
        query = json.loads(body)["query"]
        number = int(query.split()[1])
        # Every third answer lacks the id field: a mapping error among answers that work.
        hit = {"doc": "d1"} if number % 3 else {"title": query}
        payload = json.dumps({"hits": [hit]}).encode()
        return 200, {"Content-Type": "application/json"}, payload

    with serving(respond) as url:
        code, _, err = run_cli("run", "-c", str(write_gate(tmp_path, url)), "--no-cache")
    assert code == 2
    assert "more than the error budget" in err
    assert "do not match retriever.results, id or score: fix that mapping" in err
    assert "raise the error budget if" not in err
