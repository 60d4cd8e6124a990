"""A bare remote and a clone of configs/tiny, with the results and commits the history records."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from retrieval_gate.history import store
from retrieval_gate.history.record import ResultEntry, result_entry
from tests.helpers.cli import run_cli
from tests.helpers.git import git
from tests.helpers.paths import CONFIGS

TINY = CONFIGS / "tiny"
BRANCH = "retrieval-gate-history"


def make_repo(root: Path) -> tuple[Path, Path]:
    """A bare remote and a clone of it on `main` holding configs/tiny's labelled set and
    config (reports and baseline git-ignored), pushed."""
    remote, work = root / "remote.git", root / "work"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    for name in ("corpus.jsonl", "qrels.txt", "queries.jsonl", "retrieval-gate.yaml"):
        shutil.copy2(TINY / name, work / name)
    (work / ".gitignore").write_text(".retrieval-gate/\n", encoding="utf-8")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "Add the gate (#1)")
    git(work, "remote", "add", "origin", str(remote))
    git(work, "push", "-q", "origin", "main")
    return work, remote


def check_result(work: Path, out: Path) -> dict[str, Any]:
    """A `check` JSON result of the checked-out commit (a baseline made first)."""
    config = str(work / "retrieval-gate.yaml")
    code, _, err = run_cli("baseline", "-c", config, "--quiet", "--force")
    assert code == 0, err
    code, _, err = run_cli("check", "-c", config, "--quiet", "--no-cache", "--json", str(out))
    assert code == 0, err
    document: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return document


def result_at(document: dict[str, Any], commit: str, path: Path) -> Path:
    """`document` as if `check` had run at `commit` (the scores are the same)."""
    moved = json.loads(json.dumps(document))
    moved["current"]["git_commit"] = commit
    path.write_text(json.dumps(moved), encoding="utf-8")
    return path


def commits(work: Path, count: int, subject: str = "Merge pull request #{n} from a/b") -> list[str]:
    """`count` new empty commits on main, pushed; their shas, oldest first."""
    made = []
    for n in range(count):
        git(work, "commit", "-q", "--allow-empty", "-m", subject.format(n=100 + n))
        made.append(git(work, "rev-parse", "HEAD").strip())
    git(work, "push", "-q", "origin", "main")
    return made


def entry_at(document: dict[str, Any], repo: Path, sha: str, path: Path) -> ResultEntry:
    """The history's entry for `document` as if `check` had run at commit `sha` of `repo`."""
    info = store.commit_info(repo, sha)
    moved = json.loads(result_at(document, sha, path).read_text(encoding="utf-8"))
    return result_entry(
        moved, str(path), commit=info.sha, time=info.time, ref="refs/heads/main",
        subject=info.message,
    )  # fmt: skip
