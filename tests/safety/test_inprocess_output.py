"""What a retriever run in this process prints reaches the log inert and redacted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

RETRIEVER = """\
import sys

def search(query, k, token=""):
    print("::error title=forged::from the retriever " + token)
    print("##[warning]old form " + token, file=sys.stderr)
    return ["d1"]
"""


@pytest.mark.parametrize("command", ["run", "check"])
def test_a_python_retriever_prints_no_workflow_command_and_no_secret(
    tmp_path: Path, command: str
) -> None:
    (tmp_path / "noisy_search.py").write_text(RETRIEVER)
    (tmp_path / "queries.jsonl").write_text(
        json.dumps({"id": "q1", "text": "a", "qrels": {"d1": 1}}) + "\n"
    )
    (tmp_path / "gate.yaml").write_text(
        "version: 1\nname: noisy\ndataset: {queries: queries.jsonl}\n"
        'retriever: {type: python, target: "noisy_search:search", kwargs: {token: "${TOKEN}"}}\n'
        "k: 10\nmetrics:\n  ndcg@10: {}\n"
    )
    secret = "s3cret-value-42"
    env = {**os.environ, "TOKEN": secret, "PYTHONPATH": os.pathsep.join(sys.path)}
    if command == "check":
        made = subprocess.run(
            [sys.executable, "-m", "retrieval_gate", "baseline", "-c", "gate.yaml", "--quiet"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert made.returncode == 0, made.stderr
    shown = subprocess.run(
        [sys.executable, "-m", "retrieval_gate", command, "-c", "gate.yaml", "--no-cache"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    both = shown.stdout + shown.stderr
    assert "from the retriever" in both  # relayed, not swallowed
    assert "old form" in both
    assert secret not in both
    for line in both.splitlines():
        assert not line.lstrip().startswith(("::", "##[")), line
