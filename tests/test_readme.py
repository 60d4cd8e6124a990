"""The README's two fresh-machine commands: CI runs the test one verbatim, the example works."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from retrieval_gate.cli import main

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```bash\n(.+?)\n```", text, flags=re.S)[:2]


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    _, test_command = readme_commands()
    assert "pytest" in test_command
    assert test_command in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_readme_example_command_succeeds(monkeypatch: pytest.MonkeyPatch) -> None:
    example, _ = readme_commands()
    argv = shlex.split(example.split("&&")[-1])
    assert argv[0] == "retrieval-gate"
    monkeypatch.chdir(ROOT)
    assert main(argv[1:]) == 0


def test_readme_config_example_is_a_valid_config(tmp_path: Path) -> None:
    from retrieval_gate.config import load

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    example = re.findall(r"### The config\n\n```yaml\n(.+?)\n```", text, flags=re.S)[0]
    path = tmp_path / "retrieval-gate.yaml"
    path.write_text(example, encoding="utf-8")
    config = load(path, environ={"SEARCH_URL": "http://127.0.0.1:9", "SEARCH_TOKEN": "t"})
    assert config.retriever.type == "http"
    assert [str(m) for m in config.metrics] == ["ndcg@10", "recall@10", "mrr@10"]
