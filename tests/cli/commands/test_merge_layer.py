"""`merge-layer` as git runs it: two branches' layers merged in a real repository."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval_gate.datasets.llm_layer import LlmJudgment, layer_line, read_layer
from tests.helpers.cli import run_cli
from tests.helpers.git import IDENTITY, git
from tests.helpers.paths import REPO

LAYER = "qrels/test.llm.jsonl"


def _line(query: str, doc: str, grade: int = 1, time: str = "2026-11-26T09:00:00Z") -> str:
    return layer_line(LlmJudgment(query, doc, grade, "judge-1", "ab" * 32, str(grade), time))


@pytest.fixture
def shell_env(tmp_path: Path) -> dict[str, str]:
    """The environment git runs the driver in: `retrieval-gate` on PATH is this checkout's."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "retrieval-gate"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m retrieval_gate "$@"\n', "utf-8")
    shim.chmod(0o755)
    return {
        **os.environ,
        "PATH": os.pathsep.join([str(bin_dir), os.environ["PATH"]]),
        "PYTHONPATH": str(REPO),
    }


def _repository(root: Path) -> Path:
    """main with a layer of two rows, a branch `pr` that adds q2/d1 and main that adds q2/d2:
    adjacent in sort order, so a line-based merge conflicts."""
    repo = root / "repo"
    (repo / "qrels").mkdir(parents=True)
    layer = repo / LAYER
    layer.write_text(_line("q1", "d1") + _line("q3", "d1"), encoding="utf-8")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "main's labels")
    git(repo, "checkout", "-qb", "pr")
    layer.write_text(_line("q1", "d1") + _line("q2", "d1", 0) + _line("q3", "d1"), "utf-8")
    git(repo, "commit", "-qam", "the labels the PR paid for")
    git(repo, "checkout", "-q", "main")
    layer.write_text(_line("q1", "d1") + _line("q2", "d2", 3) + _line("q3", "d1"), "utf-8")
    git(repo, "commit", "-qam", "labels another PR paid for")
    return repo


def _merge(repo: Path, env: dict[str, str], branch: str = "pr") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(repo), *IDENTITY, "merge", "--no-edit", branch],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def _install(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repo / "qrels")  # anywhere in the repository
    found = run_cli("merge-layer", "--install")
    assert found.ret == 0, found.err
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-qm", "merge layers with retrieval-gate")


def test_without_the_driver_two_branches_adding_adjacent_rows_conflict(
    tmp_path: Path, shell_env: dict[str, str]
) -> None:
    repo = _repository(tmp_path)
    merged = _merge(repo, shell_env)
    assert merged.returncode != 0
    assert f"CONFLICT (content): Merge conflict in {LAYER}" in merged.stdout


def test_with_the_driver_they_merge_into_the_union(
    tmp_path: Path, shell_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repository(tmp_path)
    _install(repo, monkeypatch)
    assert (repo / ".gitattributes").read_text() == "*.llm.jsonl merge=retrieval-gate-layer\n"
    driver = git(repo, "config", "--get", "merge.retrieval-gate-layer.driver").strip()
    assert driver == "retrieval-gate merge-layer %O %A %B %P"
    merged = _merge(repo, shell_env)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert f"merge-layer: {LAYER}: 4 rows, 1 from theirs" in merged.stderr
    assert git(repo, "status", "--porcelain") == ""
    held = [(row.query, row.doc, row.grade) for row in read_layer(repo / LAYER)]
    assert held == [("q1", "d1", 1), ("q2", "d1", 0), ("q2", "d2", 3), ("q3", "d1", 1)]


def test_a_malformed_row_leaves_a_conflict_and_names_its_line(
    tmp_path: Path, shell_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repository(tmp_path)
    _install(repo, monkeypatch)
    git(repo, "checkout", "-q", "pr")
    with (repo / LAYER).open("a", encoding="utf-8") as handle:
        handle.write('{"query": "q4", "doc": "d1", "grade": "three"}\n')
    git(repo, "commit", "-qam", "a hand-edited row")
    git(repo, "checkout", "-q", "main")
    ours = (repo / LAYER).read_bytes()
    merged = _merge(repo, shell_env)
    assert merged.returncode != 0
    assert f"{LAYER} [theirs]:4: a judgment layer row needs" in merged.stderr
    assert "CONFLICT" in merged.stdout
    assert (repo / LAYER).read_bytes() == ours  # this branch's file, untouched


def test_install_twice_adds_one_line_and_keeps_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / ".gitattributes").write_text("*.png binary", encoding="utf-8")
    monkeypatch.chdir(repo)
    first = run_cli("merge-layer", "--install")
    second = run_cli("merge-layer", "--install", "--pattern", "*.llm.jsonl")
    assert first.ret == second.ret == 0
    text = (repo / ".gitattributes").read_text(encoding="utf-8")
    assert text == "*.png binary\n*.llm.jsonl merge=retrieval-gate-layer\n"
    assert "already has" in second.out


def test_install_outside_a_repository_and_bad_usage_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    outside = run_cli("merge-layer", "--install")
    assert outside.ret == 2
    assert "not inside a git repository" in outside.err
    assert not (tmp_path / ".gitattributes").exists()
    missing = run_cli("merge-layer", "base.jsonl")
    assert missing.ret == 2
    assert "needs BASE OURS THEIRS" in missing.err
    absent = run_cli("merge-layer", "a", "b", "c")
    assert absent.ret == 2
    assert "a [base]: file not found" in absent.err
