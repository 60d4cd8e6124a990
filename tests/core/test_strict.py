"""What users write is strict everywhere: the gate's own keys and every retriever's."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_gate.config.loader import load
from retrieval_gate.errors import InputError

BASE = """\
version: 1
dataset: {{queries: q.jsonl, qrels: q.tsv}}
retriever: {{type: http, url: "http://127.0.0.1:9/search", {setting}}}
metrics: {{ndcg@10: {{max_drop: 2pt}}}}
"""


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("concurrency: true", "expected a number, got a boolean"),
        ("retries: on", "expected a number, got a boolean"),
        ("timeout: .inf", "finite number"),
        ("timeout: .nan", "finite number"),
        ("version: {url: x, command: [y]}", "give exactly one of command or url"),
        ("version: {command: [id], shell: true}", "shell"),
    ],
)
def test_retriever_settings_are_as_strict_as_the_gate_s(
    tmp_path: Path, setting: str, message: str
) -> None:
    path = tmp_path / "gate.yaml"
    path.write_text(BASE.format(setting=setting))
    with pytest.raises(InputError, match=message) as error:
        load(path, environ={})
    assert "retriever" in str(error.value)


def test_good_retriever_settings_still_load(tmp_path: Path) -> None:
    path = tmp_path / "gate.yaml"
    path.write_text(BASE.format(setting="concurrency: 4, timeout: 2, version: v1"))
    config = load(path, environ={})
    assert config.retriever.concurrency == 4
    assert config.retriever.timeout == 2.0


def test_a_boolean_drop_is_refused_once_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "gate.yaml"
    path.write_text(BASE.format(setting="timeout: 2").replace("max_drop: 2pt", "max_drop: yes"))
    with pytest.raises(InputError) as error:
        load(path, environ={})
    message = str(error.value)
    assert f"{path}:4: metrics.ndcg@10.max_drop: expected a number, got a boolean" in message
    assert "(got True)" not in message  # the message says what was written already
