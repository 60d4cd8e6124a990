"""The dense example: wordllama in Qdrant's local mode on the bundled set, offline, passing
against its committed baseline, which a fresh run reproduces."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.paths import CONFIGS

BASELINE = Path(".retrieval-gate") / "example-dense" / "baseline.json"
LOCAL = ("127.0.0.1", "::1", "localhost")


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every connection or name lookup beyond this machine fails, and is listed."""
    attempts: list[Any] = []
    connect, lookup = socket.socket.connect, socket.getaddrinfo

    def guarded_connect(self: socket.socket, address: Any) -> None:
        if isinstance(address, tuple) and address[0] not in LOCAL:
            attempts.append(address)
            raise OSError(f"offline test: no connection to {address}")
        connect(self, address)

    def guarded_lookup(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host not in LOCAL:
            attempts.append(host)
            raise OSError(f"offline test: no lookup of {host}")
        return lookup(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket, "getaddrinfo", guarded_lookup)
    return attempts


@pytest.fixture
def configs(tmp_path: Path) -> Path:
    """The dense example, its labelled set and its committed baseline in a new folder."""
    target = tmp_path / "configs"
    target.mkdir()
    shutil.copy(CONFIGS / "example-dense.yaml", target / "example-dense.yaml")
    shutil.copytree(
        CONFIGS / "example", target / "example", ignore=shutil.ignore_patterns("__pycache__")
    )
    (target / BASELINE).parent.mkdir(parents=True)
    shutil.copy(CONFIGS / BASELINE, target / BASELINE)
    return target


def test_the_dense_example_passes_offline(configs: Path, offline: list[Any]) -> None:
    code, out, err = run_cli("check", "-c", configs / "example-dense.yaml", "--no-cache")
    assert code == 0, err + out
    assert "example-dense: PASS" in out
    assert offline == []
    assert len(list((configs / ".retrieval-gate" / "index").glob("qdrant-*"))) == 1


def test_the_committed_baseline_is_what_a_fresh_run_records(
    configs: Path, offline: list[Any]
) -> None:
    fresh = configs / "fresh.json"
    code, _, err = run_cli(
        "baseline", "-c", configs / "example-dense.yaml", "-o", fresh, "--no-cache", "--quiet"
    )
    assert code == 0, err
    committed = json.loads((CONFIGS / BASELINE).read_text(encoding="utf-8"))
    made = json.loads(fresh.read_text(encoding="utf-8"))
    for key in ("fingerprints", "retriever", "query_ids", "scores", "top_k"):
        assert made[key] == committed[key], key
    assert committed["retriever"]["embedding"]["wordllama"]["dim"] == 256
    assert offline == []
