"""`check` reads cached answers only when it can prove them current: a real HTTP service whose
answers get worse behind the same URL."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.local_server import Answer, serving
from tests.helpers.paths import REPO


@pytest.fixture
def service() -> Iterator[tuple[str, dict[str, Any]]]:
    """A search service on 127.0.0.1: the judged relevant documents of each query while
    `state["good"]`, off-topic ones after."""
    folder = REPO / "configs" / "tiny"
    text = {
        row["text"]: row["_id"]
        for row in map(json.loads, (folder / "queries.jsonl").read_text().splitlines())
    }
    relevant: dict[str, list[str]] = {}
    for line in (folder / "qrels.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            query, _, doc, grade = line.split()
            if int(grade) > 0:
                relevant.setdefault(query, []).append(doc)
    state: dict[str, Any] = {"good": True, "calls": 0, "index": 1}

    def respond(method: str, path: str, headers: Mapping[str, str], body: bytes) -> Answer:
        if path == "/version":
            return 200, {"Content-Type": "text/plain"}, f"index-{state['index']}\n".encode()
        state["calls"] += 1
        query = text.get(json.loads(body)["query"], "")
        docs = relevant.get(query, []) if state["good"] else ["kb-999", "kb-998"]
        hits = [{"id": d, "score": 10 - i} for i, d in enumerate(docs)]
        return 200, {"Content-Type": "application/json"}, json.dumps({"hits": hits}).encode()

    with serving(respond) as url:
        yield f"{url}/search", state


def gate(tmp_path: Path, url: str, version: str | None = None) -> Path:
    """The tiny gate over the service at `url`, with `version` (YAML) when given."""
    folder = tmp_path / "tiny"
    if not (folder / "queries.jsonl").exists():
        shutil.copytree(REPO / "configs" / "tiny", folder, dirs_exist_ok=True)
    config = folder / "retrieval-gate.yaml"
    text = (REPO / "configs" / "tiny" / "retrieval-gate.yaml").read_text()
    retriever = f"type: http\n  url: {url}\n  concurrency: 1"
    if version is not None:
        retriever += f"\n  version: {version}"
    # The noise probe calls the service again past the cache on purpose; these tests count
    # the calls the cache saves, so it is off.
    text = text.replace("gate:\n", "gate:\n  noise_probe: false\n")
    config.write_text(text.replace("type: bm25", retriever))
    return config


def test_a_worse_service_behind_the_same_url_is_caught_not_read_from_cache(
    tmp_path: Path, service: tuple[str, dict[str, Any]]
) -> None:
    url, state = service
    config = gate(tmp_path, url)
    code, _, err = run_cli("baseline", "-c", str(config), "--quiet")
    assert code == 0, err
    assert state["calls"] == 5  # answers cached on the way
    state["good"] = False
    # --cache: the old answers are used, and every report says they were not proven current.
    result = tmp_path / "result.json"
    code, out, err = run_cli(
        "check", "-c", str(config), "--quiet", "--cache", "--json", str(result)
    )
    assert state["calls"] == 5
    assert code == 0, out + err  # the stale pass the default refuses to give
    assert "5 queries of 5 answered from the cache, not proven current" in err
    warnings = json.loads(result.read_text())["warnings"]
    assert any("answered from the cache, not proven current" in w for w in warnings)
    code, out, err = run_cli("check", "-c", str(config), "--quiet")
    assert code == 1, out + err
    assert state["calls"] == 10  # called again: nothing proves the cache current
    assert "declares no retriever.version" in err
    assert "called it for every query" in err


def test_a_declared_version_keys_the_cache(
    tmp_path: Path, service: tuple[str, dict[str, Any]]
) -> None:
    url, state = service
    config = gate(tmp_path, url, version="index-2026-11-01")
    assert run_cli("baseline", "-c", str(config), "--quiet")[0] == 0
    code, _, err = run_cli("check", "-c", str(config), "--quiet")
    assert code == 0, err
    assert state["calls"] == 5  # proven by the declared version: read from the cache
    assert "retriever.version" not in err
    state["good"] = False
    config = gate(tmp_path, url, version="index-2026-11-23")  # the index was rebuilt
    code, out, err = run_cli("check", "-c", str(config), "--quiet")
    assert state["calls"] == 10  # another version, another key
    assert code == 1, out + err


@pytest.mark.parametrize("source", ["url", "command"])
def test_a_version_read_from_a_url_or_a_command_keys_the_cache(
    tmp_path: Path, service: tuple[str, dict[str, Any]], source: str
) -> None:
    url, state = service
    if source == "url":
        version = "{url: " + url.replace("/search", "/version") + "}"
    else:
        (tmp_path / "index_id.txt").write_text("index-1\n")
        version = "{command: [cat, " + str(tmp_path / "index_id.txt") + "]}"
    config = gate(tmp_path, url, version=version)
    assert run_cli("baseline", "-c", str(config), "--quiet")[0] == 0
    assert run_cli("check", "-c", str(config), "--quiet")[0] == 0
    assert state["calls"] == 5  # the version answered the same: the cache is current
    state["good"], state["index"] = False, 2  # a rebuilt, worse index
    (tmp_path / "index_id.txt").write_text("index-2\n")
    code, out, err = run_cli("check", "-c", str(config), "--quiet")
    assert state["calls"] == 10
    assert code == 1, out + err


def test_a_version_source_that_fails_is_exit_2_naming_it(
    tmp_path: Path, service: tuple[str, dict[str, Any]]
) -> None:
    url, _ = service
    config = gate(tmp_path, url, version='{command: ["false"]}')
    code, _, err = run_cli("check", "-c", str(config), "--quiet")
    assert code == 2
    assert "retriever.version.command exited 1" in err


def test_a_hostile_version_answer_is_cut_and_inert(
    tmp_path: Path, service: tuple[str, dict[str, Any]]
) -> None:
    url, _ = service
    (tmp_path / "tiny").mkdir()
    script = tmp_path / "tiny" / "version.py"
    script.write_text("print('v1\\x1b[2J\\n::error::forged\\x9b' + 'x' * 100000)\n")
    config = gate(tmp_path, url, version='{command: ["' + sys.executable + '", version.py]}')
    code, _, err = run_cli("baseline", "-c", str(config), "--quiet")
    assert code == 0, err
    baseline = (tmp_path / "tiny" / ".retrieval-gate" / "baseline.json").read_text()
    version = json.loads(baseline)["retriever"]["version"]
    assert version.startswith("v1\x1b[2J\n::error::forged\x9b")
    assert len(version) == 200  # a build id, not a page
    assert "\x1b" not in baseline
    assert "\x9b" not in baseline
    code, out, err = run_cli("check", "-c", str(config), "--quiet")
    assert code == 0, err
    assert not any(line.lstrip().startswith("::") for line in (out + err).splitlines())
    assert "\x1b" not in out + err
