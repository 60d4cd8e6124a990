"""The pre-commit hooks (`.pre-commit-hooks.yaml`, `retrieval_gate/cli/precommit.py`).

pre-commit would install a `language: python` hook from a clone of this repository, which
needs the network for the dependencies; so the tests declare the same hooks as `repo: local`,
`language: system` (entry, files and flags read from `.pre-commit-hooks.yaml`), with this
interpreter first on PATH, in a git repository they build holding a copy of `configs/tiny`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from retrieval_gate.cli import precommit
from tests.helpers.paths import REPO

HOOKS = REPO / ".pre-commit-hooks.yaml"
TINY = REPO / "configs" / "tiny"

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _env(tmp_path: Path) -> dict[str, str]:
    """This interpreter's bin first on PATH; pre-commit's cache and git's config in tmp_path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PRE_COMMIT"))}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PRE_COMMIT_HOME"] = str(tmp_path / "pre-commit-home")
    env["HOME"] = str(tmp_path / "home")
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    env["GIT_AUTHOR_NAME"] = env["GIT_COMMITTER_NAME"] = "test"
    env["GIT_AUTHOR_EMAIL"] = env["GIT_COMMITTER_EMAIL"] = "test@example.com"
    return env


def _git(repo: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def _local_hooks() -> list[dict[str, object]]:
    """The published hooks as `repo: local` hooks run by the current environment."""
    hooks = yaml.safe_load(HOOKS.read_text(encoding="utf-8"))
    local = []
    for hook in hooks:
        assert hook["language"] == "python"
        local.append({**hook, "language": "system"})
    return local


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A git repository with the tiny gate in gate/, an unrelated YAML file and notes."""
    env = _env(tmp_path)
    (tmp_path / "home").mkdir()
    repo = tmp_path / "repo"
    shutil.copytree(TINY, repo / "gate")
    (repo / "workflow.yml").write_text("on: push\njobs: {}\n")
    (repo / "notes.txt").write_text("not a labelled set\n")
    config = {"repos": [{"repo": "local", "hooks": _local_hooks()}]}
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    _git(repo, env, "init", "-q")
    _git(repo, env, "add", "-A")
    return repo, env


def _pre_commit(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("pre_commit", reason="pre-commit is not installed")
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--color", "never", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_manifest_is_valid_for_pre_commit() -> None:
    pytest.importorskip("pre_commit", reason="pre-commit is not installed")
    done = subprocess.run(
        [sys.executable, "-m", "pre_commit", "validate-manifest", str(HOOKS)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    ids = [hook["id"] for hook in yaml.safe_load(HOOKS.read_text(encoding="utf-8"))]
    assert ids == ["retrieval-gate-validate", "retrieval-gate-lint"]


@needs_git
def test_a_valid_config_passes_both_hooks(repo: tuple[Path, dict[str, str]]) -> None:
    path, env = repo
    done = _pre_commit(path, env, "--all-files")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "retrieval-gate config validate" in done.stdout
    assert "retrieval-gate lint" in done.stdout
    assert "Failed" not in done.stdout


@needs_git
def test_an_unknown_key_fails_validate_with_the_line(repo: tuple[Path, dict[str, str]]) -> None:
    path, env = repo
    config = path / "gate" / "retrieval-gate.yaml"
    config.write_text(config.read_text().replace("k: 10\n", "k: 10\nbogus: 1\n"))
    _git(path, env, "add", "-A")
    done = _pre_commit(path, env, "retrieval-gate-validate", "--files", "gate/retrieval-gate.yaml")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Failed" in done.stdout
    line = 1 + config.read_text().splitlines().index("bogus: 1")
    assert f"gate/retrieval-gate.yaml:{line}: bogus: unknown key" in done.stdout


@needs_git
def test_a_duplicate_judgment_fails_lint(repo: tuple[Path, dict[str, str]]) -> None:
    path, env = repo
    with (path / "gate" / "qrels.txt").open("a") as qrels:
        qrels.write("reset-password 0 kb-101 2\n")
    _git(path, env, "add", "-A")
    # Only the qrels file changed: validate has nothing to do, lint finds the config using it.
    done = _pre_commit(path, env, "--files", "gate/qrels.txt")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "duplicate-judgment" in done.stdout
    assert "retrieval-gate config validate" in done.stdout  # reported as skipped
    # A change elsewhere does not concern the config: lint passes without reading the set.
    done = _pre_commit(path, env, "--files", "notes.txt", "workflow.yml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "duplicate-judgment" not in done.stdout


def test_gate_configs_are_told_by_their_top_level_keys(tmp_path: Path) -> None:
    (tmp_path / "gate.yaml").write_text("version: 1\ndataset: {path: data}\n")
    (tmp_path / "other.yml").write_text("version: 2\nservices: {}\n")
    (tmp_path / "list.yaml").write_text("- version\n- dataset\n")
    (tmp_path / "broken.yaml").write_text("version: 1\ndataset:\n  path: [unclosed\n")
    (tmp_path / "broken-other.yaml").write_text("a: [unclosed\n")
    (tmp_path / "gate.json").write_text('{"version": 1, "dataset": {}}')
    assert precommit.is_gate_config(tmp_path / "gate.yaml")
    assert precommit.is_gate_config(tmp_path / "broken.yaml")  # so validate reports the error
    for name in ("other.yml", "list.yaml", "broken-other.yaml", "gate.json", "missing.yaml"):
        assert not precommit.is_gate_config(tmp_path / name), name


def test_a_change_concerns_a_config_through_its_files_and_dataset_folder() -> None:
    files = {"queries": "data/q.jsonl", "qrels": "../shared/qrels.txt", "corpus": "c.jsonl"}
    config = Path("gates/a.yaml")
    document = {"version": 1, "dataset": files, "baseline": "base/line.json"}

    def concerned(*changed: str) -> bool:
        return precommit.concerns(config, document, [Path(name) for name in changed])

    assert concerned("gates/a.yaml")
    assert concerned("gates/data/q.jsonl")
    assert concerned("shared/qrels.txt")
    assert concerned("gates/base/line.json")
    assert not concerned("gates/data/other.jsonl", "gates/b.yaml", "README.md")
    folder = {"version": 1, "dataset": {"path": "../data/beir"}}
    assert precommit.concerns(config, folder, [Path("data/beir/qrels/test.tsv")])
    assert not precommit.concerns(config, folder, [Path("data/other/qrels.tsv")])


def test_a_usage_error_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert precommit.main([]) == 2
    assert precommit.main(["check"]) == 2
    assert "usage" in capsys.readouterr().err


def test_validate_skips_files_that_are_not_gate_configs(tmp_path: Path) -> None:
    (tmp_path / "other.yaml").write_text("name: x\n")
    assert precommit.validate([str(tmp_path / "other.yaml")]) == 0
