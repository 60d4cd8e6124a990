"""action.yml's judge inputs: the key reaches the endpoint and nothing else, a budget, a fork."""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from retrieval_gate.datasets.llm_layer import layer_line, read_layer
from tests.helpers.action_runner import PR, SLUG, STEPS, TOKEN, ActionRun, Runner
from tests.helpers.cli import run_cli
from tests.helpers.fake_github import FakeGitHub
from tests.helpers.fake_llm import FakeLlm, fake_llm
from tests.helpers.git import git
from tests.helpers.judged_example import assisted_config, judge_example

KEY_ENV = "RG_ACTION_JUDGE_KEY"
KEY = "sk-live-7f3a9c2e5b18d4"
CONFIG = "assisted-example-regressed.yaml"


@dataclass
class Judged:
    """A workspace whose main layer the judge graded for the example's retriever; the pull
    request's config (the regressed retriever) brings new pairs up."""

    workspace: Path
    llm: FakeLlm
    gh: FakeGitHub
    layer: Path
    runners: Iterator[int]
    python_bin: Path
    action_path: Path

    def run(
        self, inputs: dict[str, str], head: str | None = None
    ) -> tuple[ActionRun, list[dict[str, str]]]:
        """The action run with `inputs` (on a pull request from the branch `head` of this
        repository, when given); the headers of the calls it made to the endpoint."""
        temp = self.workspace.parent / f"runner_temp_{next(self.runners)}"
        temp.mkdir()
        before = len(self.llm.headers)
        kind = Runner if head is None else _branch_runner(head)
        runner = kind(
            self.action_path, self.python_bin, self.workspace, temp, "pull_request", self.gh.url
        )
        run = runner.run({"config": CONFIG, **inputs})
        return run, self.llm.headers[before:]


def _branch_runner(head: str) -> type[Runner]:
    class BranchRunner(Runner):
        """A Runner whose event names the pull request's branch, as GitHub's payload does."""

        def _environment(self) -> dict[str, str]:
            env = super()._environment()
            event = json.loads(Path(env["GITHUB_EVENT_PATH"]).read_text("utf-8"))
            event["pull_request"]["head"]["ref"] = head
            Path(env["GITHUB_EVENT_PATH"]).write_text(json.dumps(event), encoding="utf-8")
            return env

    return BranchRunner


@dataclass(frozen=True)
class Graded:
    """main's workspace with its layer graded, built once per module: each test copies it."""

    workspace: Path
    llm: FakeLlm
    layer: Path


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Graded]:
    # Grading main's layer runs `judge` over the whole pool (2 CPU s a test); the copies are
    # the same files, and the stand-in serves them all (each test reads its own calls).
    workspace = tmp_path_factory.mktemp("graded") / "workspace"
    with fake_llm(api_key=KEY) as llm, pytest.MonkeyPatch.context() as patched:
        example = judge_example(workspace, llm.base_url, held_back=0.7)
        llm.judge = example.fake_judge(over_grade=0.3)
        main, _ = (
            assisted_config(
                workspace, name, base_url=llm.base_url, model="judge-1", output=None,
                api_key_env=KEY_ENV,
            )
            for name in ("example.yaml", "example-regressed.yaml")
        )  # fmt: skip
        patched.setenv(KEY_ENV, KEY)  # main's layer, graded with the key
        assert run_cli("judge", "-c", main, "--quiet").ret == 0
        patched.undo()
        yield Graded(workspace, llm, example.layer)


@pytest.fixture
def judged(
    graded: Graded,
    tmp_path: Path,
    python_bin: Path,
    action_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Judged]:
    workspace = tmp_path / "workspace"
    shutil.copytree(graded.workspace, workspace, symlinks=True)
    layer = workspace / graded.layer.relative_to(graded.workspace)
    monkeypatch.delenv(KEY_ENV, raising=False)  # the runner knows no key of its own
    with FakeGitHub(token=TOKEN, repos={SLUG: [PR]}) as gh:
        yield Judged(workspace, graded.llm, gh, layer, iter(range(100)), python_bin, action_path)


def _everything_printed(run: ActionRun, gh: FakeGitHub) -> str:
    comments = [comment["body"] for comment in gh.comments.get((SLUG, PR), [])]
    names = ("result-path", "report-path", "html-path")
    written = [Path(run.outputs[name]).read_text("utf-8") for name in names if run.outputs[name]]
    return "\n".join([run.log, run.summary, *comments, *written])


def _judging(run: ActionRun) -> dict[str, Any]:
    result = json.loads(Path(run.outputs["result-path"]).read_text(encoding="utf-8"))
    judging: dict[str, Any] = result["labels"]["judging"]
    return judging


def test_the_key_reaches_the_endpoint_as_a_bearer_token_and_nowhere_else(
    judged: Judged,
) -> None:
    rows_before = len(judged.layer.read_text(encoding="utf-8").splitlines())
    run, calls = judged.run({"judge-api-key": KEY})
    judging = _judging(run)
    assert judging["skipped"] == "", run.log
    assert 0 < judging["needed"] == judging["graded"] == judging["calls"] == len(calls)
    assert {call["authorization"] for call in calls} == {f"Bearer {KEY}"}
    assert KEY not in _everything_printed(run, judged.gh)
    assert run.outputs["layer-path"] == str(judged.layer)
    grown = len(judged.layer.read_text(encoding="utf-8").splitlines())
    assert grown == rows_before + len(calls)


@pytest.mark.parametrize(
    ("inputs", "why"),
    [
        ({"judge-api-key": ""}, f"judge.api_key_env names {KEY_ENV}, which is not set"),
        ({"judge-api-key": KEY, "judge": "false"}, "--no-judge"),
    ],
    ids=["fork without the key", "judge false"],
)
def test_without_the_key_nothing_is_called_and_the_result_says_why(
    judged: Judged, inputs: dict[str, str], why: str
) -> None:
    run, calls = judged.run(inputs)
    assert calls == []
    judging = _judging(run)
    assert judging["skipped"].startswith(why), judging
    assert judging["graded"] == 0 < judging["needed"]
    # Checks that depend on the pairs are inconclusive and fail the gate: the step fails.
    assert run.outputs["exit-code"] == "1", run.log
    assert run.step("Decide").conclusion == "failure"
    assert KEY not in _everything_printed(run, judged.gh)


def test_the_call_budget_is_passed_on(judged: Judged) -> None:
    run, calls = judged.run({"judge-api-key": KEY, "judge-max-calls": "3"})
    assert len(calls) == 3
    judging = _judging(run)
    assert judging["calls"] == 3 < judging["needed"]
    assert "budget" in judging["skipped"]


def test_the_cost_budget_is_passed_on(judged: Judged) -> None:
    config = judged.workspace / CONFIG
    document = yaml.safe_load(config.read_text(encoding="utf-8"))
    document["judge"]["prices"] = {"input": 1000.0, "output": 1000.0}  # per million tokens
    config.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    run, calls = judged.run({"judge-api-key": KEY, "judge-max-cost": "2.5"})
    judging = _judging(run)
    assert 0 < len(calls) == judging["calls"] < judging["needed"], run.log
    assert judging["cost"] <= 2.5
    assert "budget" in judging["skipped"]


def test_a_key_the_config_has_no_variable_for_is_not_used(judged: Judged) -> None:
    config = judged.workspace / CONFIG
    config.write_text(
        config.read_text(encoding="utf-8").replace(f"api_key_env: {KEY_ENV}\n", ""), "utf-8"
    )
    run, calls = judged.run({"judge-api-key": KEY})
    assert "judge.api_key_env names no variable" in run.step("Run the gate").stdout
    assert {call.get("authorization") for call in calls} <= {None}
    assert KEY not in _everything_printed(run, judged.gh)


@pytest.mark.parametrize(
    ("inputs", "complaint"),
    [
        ({"judge": "yes"}, 'input judge must be "true" or "false"'),
        ({"judge-max-calls": "ten"}, "input judge-max-calls must be a whole number"),
        ({"judge-max-calls": "0"}, "input judge-max-calls must be a whole number"),
        ({"judge-max-cost": "-1"}, "input judge-max-cost must be an amount above 0"),
        ({"judge-max-cost": "0.00"}, "input judge-max-cost must be an amount above 0"),
    ],
)
def test_judge_inputs_are_checked(
    python_bin: Path,
    action_path: Path,
    tmp_path: Path,
    inputs: dict[str, str],
    complaint: str,
) -> None:
    runner = Runner(action_path, python_bin, tmp_path, tmp_path, "pull_request", "")
    run = runner.run(inputs)
    checked = run.step("Check the inputs")
    assert checked.returncode == 2, run.log
    assert complaint in checked.stdout


def test_the_key_is_in_the_check_step_alone() -> None:
    holding = [
        step["name"]
        for step in STEPS
        if any("judge-api-key" in str(value) for value in step.get("env", {}).values())
    ]
    assert holding == ["Run the gate"]
    check = next(step for step in STEPS if step.get("id") == "check")
    assert "echo" not in " ".join(
        line for line in check["run"].splitlines() if "JUDGE_API_KEY" in line
    )


def _branch(judged: Judged) -> tuple[Path, str]:
    """The workspace as the checkout of branch `feature`, pushed to a bare remote."""
    remote = judged.workspace.parent / "remote.git"
    git(judged.workspace.parent, "init", "-q", "--bare", "-b", "main", str(remote))
    (judged.workspace / ".gitignore").write_text("*.sqlite*\n.retrieval-gate/cache*\n", "utf-8")
    git(judged.workspace, "init", "-q", "-b", "feature")
    git(judged.workspace, "add", "-A")
    git(judged.workspace, "commit", "-qm", "a pull request")
    git(judged.workspace, "remote", "add", "origin", str(remote))
    git(judged.workspace, "push", "-q", "origin", "feature")
    return remote, str(judged.layer.relative_to(judged.workspace))


def test_commit_layer_pushes_the_grades_to_the_branch_and_only_them(judged: Judged) -> None:
    remote, layer = _branch(judged)
    before = git(remote, "rev-parse", "feature").strip()
    # The branch moved since the checkout: another commit added a grade the run never saw.
    clone = judged.workspace.parent / "clone"
    git(judged.workspace.parent, "clone", "-q", "-b", "feature", str(remote), str(clone))
    extra = dataclasses.replace(read_layer(judged.layer)[0], query="zz", doc="zz")
    with (clone / layer).open("a", encoding="utf-8") as handle:
        handle.write(layer_line(extra))
    git(clone, "commit", "-qam", "a grade from elsewhere")
    git(clone, "push", "-q", "origin", "feature")
    moved = git(remote, "rev-parse", "feature").strip()

    run, calls = judged.run({"judge-api-key": KEY, "commit-layer": "true"}, head="feature")
    assert calls, run.log
    pushed = git(remote, "rev-parse", "feature").strip()
    assert run.outputs["layer-commit"] == pushed != moved != before, run.log
    assert git(remote, "rev-parse", f"{pushed}^").strip() == moved
    assert git(remote, "diff", "--name-only", moved, pushed).split() == [layer]
    held = git(remote, "show", f"{pushed}:{layer}").splitlines()
    grown = judged.layer.read_text(encoding="utf-8").splitlines()
    assert set(grown) < set(held)
    assert len(held) == len(grown) + 1  # every row of the run's, and the branch's own
    assert KEY not in git(remote, "log", "-p", "feature")

    again, _ = judged.run({"judge-api-key": KEY, "commit-layer": "true"}, head="feature")
    assert again.outputs["layer-commit"] == ""
    assert "the branch already holds every grade" in again.step("Commit the judge's grades").stdout
    assert git(remote, "rev-parse", "feature").strip() == pushed


def test_commit_layer_pushes_nothing_for_a_fork(judged: Judged) -> None:
    remote, _ = _branch(judged)
    before = git(remote, "rev-parse", "feature").strip()
    run, calls = judged.run({"judge-api-key": KEY, "commit-layer": "true"})  # no head ref
    assert calls
    assert "a pull request from a fork" in run.step("Commit the judge's grades").stdout
    assert git(remote, "rev-parse", "feature").strip() == before
