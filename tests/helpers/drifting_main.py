"""A main branch that drifts merge by merge, each merge passing its own gate."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.helpers.cli import run_cli
from tests.helpers.git import git

QUERIES = 600
STEPS = [14, 16, 14, 16, 14, 16, 14, 16]
"""Queries each merge breaks: 14 or 16 of 600, about 1.3 or 1.5 pt of ndcg@10 each."""
BUDGET = 3.0
"""gate.drift.max_drop in points."""
RETRIEVER = """\
def search(query, k, metadata, broken=0):
    # The relevant doc of query n is d<n>; the first `broken` queries of a fixed permutation
    # rank it 7th instead of 1st.
    n = int(metadata["n"])
    docs = [f"d{(n + j) % @COUNT@}" for j in range(1, k)]
    docs.insert(6 if (n * 7919) % @COUNT@ < broken else 0, f"d{n}")
    return docs[:k]
"""
CONFIG = """\
version: 1
name: drifting
dataset: {{queries: queries.jsonl}}
retriever: {{type: python, target: "drifting_search:search", kwargs: {{broken: {broken}}}}}
k: 10
metrics:
  ndcg@10: {{max_drop: 2pt}}
  recall@10: {{max_drop: 5pt}}
gate:
  resamples: 2000
  drift: {{{drift}}}
baseline: .retrieval-gate/baseline.json
"""


def write_set(root: Path, extra: dict[int, dict[str, int]] | None = None, text: str = "") -> None:
    """QUERIES queries, query n judging d<n> 2 and d<n+7> 1; `extra` adds judgments."""
    with (root / "queries.jsonl").open("w", encoding="utf-8") as handle:
        for n in range(QUERIES):
            qrels = {f"d{n}": 2, f"d{(n + 7) % QUERIES}": 1, **(extra or {}).get(n, {})}
            row = {"id": f"q{n:03d}", "text": f"query {n}{text}", "n": n, "qrels": qrels}
            handle.write(json.dumps(row) + "\n")


def write_config(root: Path, broken: int, drift: str) -> Path:
    path = root / "gate.yaml"
    path.write_text(CONFIG.format(broken=broken, drift=drift), encoding="utf-8")
    return path


class Main:
    """A repository whose main branch the Action's history steps follow, merge by merge."""

    def __init__(self, root: Path, drift: str) -> None:
        self.root = root
        self.remote = root / "remote.git"
        self.work = root / "work"
        self.drift = drift
        self.broken = 0
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(self.remote)], check=True)
        self.work.mkdir()
        git(self.work, "init", "-q", "-b", "main")
        write_set(self.work)
        (self.work / "drifting_search.py").write_text(
            RETRIEVER.replace("@COUNT@", str(QUERIES)), encoding="utf-8"
        )
        (self.work / ".gitignore").write_text(".retrieval-gate/\n__pycache__/\n", "utf-8")
        self.config = write_config(self.work, 0, drift)
        git(self.work, "add", "-A")
        git(self.work, "commit", "-qm", "The search service")
        git(self.work, "tag", "v1")
        git(self.work, "remote", "add", "origin", str(self.remote))
        git(self.work, "push", "-q", "origin", "main")

    def gate(self) -> tuple[int, dict[str, Any]]:
        """`check` against the baseline (the predecessor's record): a pull request's gate."""
        out = self.root / "result.json"
        code, _, err = run_cli(
            "check", "-c", str(self.config), "--quiet", "--no-cache", "--json", str(out)
        )
        assert code in (0, 1), err
        return code, json.loads(out.read_text(encoding="utf-8"))

    def record(self, *, refresh: bool = True) -> tuple[int, str]:
        """What the Action does on a push to main: check, append, drift; then the baseline is
        refreshed (the blind spot the drift budget covers) unless `refresh` is false."""
        if not (self.work / ".retrieval-gate" / "baseline.json").exists():
            self.refresh()
        self.gate()
        result = str(self.root / "result.json")
        history = ["--repo", str(self.work)]
        code, _, err = run_cli("history", "append", "--result", result, *history, "--push")
        assert code == 0, err
        code, out, err = run_cli("history", "drift", "-c", str(self.config), *history)
        assert code in (0, 1), err
        if refresh:
            self.refresh()
        return code, out

    def refresh(self) -> None:
        code, _, err = run_cli("baseline", "-c", str(self.config), "--quiet", "--force")
        assert code == 0, err

    def merge(self, number: int, broken: int, message: str = "") -> None:
        self.broken = broken
        self.config = write_config(self.work, broken, self.drift)
        git(
            self.work,
            "commit",
            "-qam",
            message or f"Merge pull request #{number} from dev/{number}",
        )
