"""action.yml's history steps run as the runner would: pushes record, pull requests fetch."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.action_runner import (
    CONFIG,
    PR,
    SLUG,
    TOKEN,
    HistoryRunner,
    make_worse,
    tiny_repository,
)
from tests.helpers.fake_github import FakeGitHub
from tests.helpers.git import git

BRANCH = "retrieval-gate-history"


@pytest.fixture
def repo(
    python_bin: Path,
    action_path: Path,
    tmp_path: Path,
) -> Callable[..., tuple[HistoryRunner, Path]]:
    """A workspace that is a git repository pushed to a bare remote, and a runner in it."""
    workspace, remote = tiny_repository(tmp_path, "Merge pull request #5 from octo/gate")
    counter = iter(range(1000))

    def make(api_url: str, event_name: str = "push") -> tuple[HistoryRunner, Path]:
        temp = tmp_path / f"runner_temp_{next(counter)}"
        temp.mkdir()
        runner = HistoryRunner(action_path, python_bin, workspace, temp, event_name, api_url)
        return runner, remote

    return make


def _lines(remote: Path) -> list[dict[str, Any]]:
    text = git(remote, "show", f"{BRANCH}:tiny.jsonl")
    return [json.loads(line) for line in text.splitlines()]


def test_a_push_to_main_appends_once_and_checks_the_drift(
    repo: Callable[..., tuple[HistoryRunner, Path]],
) -> None:
    with FakeGitHub(token=TOKEN, repos={SLUG: [PR]}) as gh:
        runner, remote = repo(gh.url)
        first = runner.run({"config": CONFIG, "history": "true"})
        assert not first.failed, first.log
        record = first.step("Record the history")
        assert record.conclusion == "success", first.log
        assert "appended tiny #5" in record.stdout
        assert "no drift budget" in record.stdout
        lines = _lines(remote)
        assert [(line["kind"], line["pr"]) for line in lines] == [("result", 5)]
        assert lines[0]["commit"] == git(runner.workspace, "rev-parse", "HEAD").strip()
        # A re-run of the same push adds nothing.
        again, _ = repo(gh.url)
        second = again.run({"config": CONFIG, "history": "true"})
        assert not second.failed, second.log
        assert "already in" in second.step("Record the history").stdout
        assert len(_lines(remote)) == 1
        # The checkout is as actions/checkout left it: only untracked gate files.
        status = git(runner.workspace, "status", "--porcelain", "--untracked-files=no")
        assert status == ""


def test_a_drift_past_the_budget_fails_the_job_though_the_gate_passed(
    repo: Callable[..., tuple[HistoryRunner, Path]],
) -> None:
    with FakeGitHub(token=TOKEN, repos={SLUG: [PR]}) as gh:
        runner, remote = repo(gh.url)
        assert not runner.run({"config": CONFIG, "history": "true"}).failed
        workspace = runner.workspace
        make_worse(workspace)
        # Each pull request may lose everything; the main branch may lose nothing over time.
        path = workspace / CONFIG
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
        config["metrics"] = {name: {"max_drop": "100pt"} for name in config["metrics"]}
        config["gate"]["drift"] = {"max_drop": "0pt"}
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        git(workspace, "add", "-A")
        git(workspace, "commit", "-qm", "A cheaper retriever (#6)")
        git(workspace, "push", "-q", "origin", "main")
        later, _ = repo(gh.url)
        run = later.run({"config": CONFIG, "history": "true"})
    assert run.outputs["verdict"] == "pass", run.log
    record = run.step("Record the history")
    assert "FAIL drift of tiny" in record.stdout, run.log
    assert "over 1 merge: #6 -" in record.stdout
    final = run.step("Decide")
    assert (final.conclusion, final.returncode) == ("failure", 1), run.log
    assert "drifted past gate.drift's budget" in final.stdout
    assert [line["pr"] for line in _lines(remote)] == [5, 6]


def test_other_branches_and_events_record_nothing(
    repo: Callable[..., tuple[HistoryRunner, Path]],
) -> None:
    with FakeGitHub(token=TOKEN, repos={SLUG: [PR]}) as gh:
        runner, remote = repo(gh.url)
        runner.ref = "refs/heads/feature"
        run = runner.run({"config": CONFIG, "history": "true"})
        assert not run.failed, run.log
        assert "not a push to the default branch" in run.step("Record the history").stdout
        off, _ = repo(gh.url)
        run = off.run({"config": CONFIG})
        assert run.step("Record the history").conclusion == "skipped"
        assert run.step("Fetch the history").conclusion == "skipped"
    missing = subprocess.run(
        ["git", "-C", str(remote), "rev-parse", "--verify", "--quiet", BRANCH],
        capture_output=True,
        check=False,
    )
    assert missing.returncode != 0


def test_a_pull_request_fetches_the_history_read_only(
    repo: Callable[..., tuple[HistoryRunner, Path]],
) -> None:
    with FakeGitHub(token=TOKEN, repos={SLUG: [PR]}) as gh:
        runner, remote = repo(gh.url, "pull_request")
        before = runner.run({"config": CONFIG, "history": "true", "comment": "false"})
        assert not before.failed, before.log
        assert "no history branch" in before.step("Fetch the history").stdout
        pusher, _ = repo(gh.url)
        assert not pusher.run({"config": CONFIG, "history": "true"}).failed
        tip = git(remote, "rev-parse", BRANCH)
        git(runner.workspace, "update-ref", "-d", f"refs/heads/{BRANCH}")
        reader, _ = repo(gh.url, "pull_request")
        run = reader.run({"config": CONFIG, "history": "true", "comment": "false"})
    assert not run.failed, run.log
    fetch = run.step("Fetch the history")
    assert f"fetched the history branch {BRANCH}" in fetch.stdout
    assert git(runner.workspace, "rev-parse", f"origin/{BRANCH}") == tip
    assert "Record the history" in [step.name for step in run.steps]
    assert run.step("Record the history").stdout == ""
    assert git(remote, "rev-parse", BRANCH) == tip


@pytest.mark.parametrize(
    ("inputs", "complaint"),
    [
        ({"history": "yes"}, 'input history must be "true" or "false"'),
        ({"history": "true", "history-branch": "bad..name"}, "input history-branch must be"),
        ({"history": "true", "history-branch": "-x"}, "input history-branch must be"),
    ],
)
def test_history_inputs_are_checked(
    repo: Callable[..., tuple[HistoryRunner, Path]], inputs: dict[str, str], complaint: str
) -> None:
    runner, _ = repo("http://127.0.0.1:9")
    run = runner.run({"config": CONFIG, **inputs})
    checked = run.step("Check the inputs")
    assert checked.returncode == 2, run.log
    assert complaint in checked.stdout
