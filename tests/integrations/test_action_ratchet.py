"""action.yml's ratchet step, run as a runner would: an improved push opens one pull request."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from retrieval_gate.integrations.github.environment import GitHubEnvironment
from retrieval_gate.integrations.github.pulls import (
    PULL_LIMIT,
    PULL_TITLE,
    ratchet_body,
    upsert_pull_request,
)
from tests.helpers.action_runner import (
    CONFIG,
    PR,
    SLUG,
    TOKEN,
    ActionRun,
    HistoryRunner,
    make_worse,
    tiny_repository,
)
from tests.helpers.cli import run_cli
from tests.helpers.fake_github import FakeGitHub
from tests.helpers.git import git
from tests.helpers.paths import REPO

BRANCH = "retrieval-gate/ratchet"
BASELINE = "configs/tiny/.retrieval-gate/baseline.json"
BOT = "github-actions[bot] <41898282+github-actions[bot]@users.noreply.github.com>"
ON = {"config": CONFIG, "ratchet": "true", "comment": "false"}


class RatchetRunner(HistoryRunner):
    """A HistoryRunner whose event may say the repository is a fork."""

    fork: bool = False

    def _environment(self) -> dict[str, str]:
        env = super()._environment()
        event: dict[str, Any] = json.loads(Path(env["GITHUB_EVENT_PATH"]).read_text("utf-8"))
        event["repository"]["fork"] = self.fork
        Path(env["GITHUB_EVENT_PATH"]).write_text(json.dumps(event), encoding="utf-8")
        return env


def _worse_run(tmp_path: Path) -> Path:
    """A run file that ranks no relevant document first: a baseline made from it is beaten."""
    scratch = tmp_path / "scratch"
    shutil.copytree(
        REPO / "configs" / "tiny",
        scratch / "configs" / "tiny",
        ignore=shutil.ignore_patterns("cache.sqlite*"),
    )
    make_worse(scratch)
    return scratch / "configs" / "tiny" / "worse.trec"


@pytest.fixture
def repo(
    python_bin: Path,
    action_path: Path,
    tmp_path: Path,
) -> Callable[..., tuple[RatchetRunner, Path]]:
    """A workspace that is a git repository pushed to a bare remote, and a runner in it. Its
    committed baseline was made by a worse retriever unless the test says `improvable=False`."""
    made: dict[str, Path] = {}
    counter = iter(range(1000))

    def setup(improvable: bool) -> Path:
        def worse_baseline(workspace: Path) -> None:
            run = str(_worse_run(tmp_path))
            code, _, err = run_cli("baseline", "-c", str(workspace / CONFIG), "--run", run)
            assert code == 0, err

        workspace, remote = tiny_repository(
            tmp_path, "A gate with a baseline", worse_baseline if improvable else None
        )
        made["workspace"], made["remote"] = workspace, remote
        return workspace

    def make(
        api_url: str, event_name: str = "push", *, improvable: bool = True
    ) -> tuple[RatchetRunner, Path]:
        workspace = made.get("workspace") or setup(improvable)
        temp = tmp_path / f"runner_temp_{next(counter)}"
        temp.mkdir()
        runner = RatchetRunner(action_path, python_bin, workspace, temp, event_name, api_url)
        return runner, made["remote"]

    return make


def _branch_exists(remote: Path) -> bool:
    found = subprocess.run(
        ["git", "-C", str(remote), "rev-parse", "--verify", "--quiet", f"refs/heads/{BRANCH}"],
        capture_output=True,
        check=False,
    )
    return found.returncode == 0


def _pull_requests(gh: FakeGitHub) -> list[dict[str, Any]]:
    return list(gh.pulls.get(SLUG, []))


def _pull_calls(gh: FakeGitHub) -> list[str]:
    return [request.method for request in gh.requests if "/pulls" in request.path]


def _assert_checkout_untouched(run: ActionRun, workspace: Path, head: str, before: bytes) -> None:
    assert git(workspace, "rev-parse", "HEAD").strip() == head, run.log
    assert git(workspace, "symbolic-ref", "--short", "HEAD").strip() == "main"
    assert git(workspace, "status", "--porcelain", "--untracked-files=no") == "", run.log
    assert (workspace / BASELINE).read_bytes() == before


def test_an_improved_push_opens_one_pull_request_and_the_next_updates_it(
    repo: Callable[..., tuple[RatchetRunner, Path]],
) -> None:
    with FakeGitHub(token=TOKEN, repos={SLUG: [PR]}) as gh:
        runner, remote = repo(gh.url)
        workspace = runner.workspace
        head = git(workspace, "rev-parse", "HEAD").strip()
        before = (workspace / BASELINE).read_bytes()
        first = runner.run(ON)
        assert not first.failed, first.log
        step = first.step("Ratchet the baseline")
        assert step.conclusion == "success", first.log
        assert "wrote " in step.stdout
        assert "improved (" in step.stdout
        assert "created the ratchet pull request" in step.stdout
        _assert_checkout_untouched(first, workspace, head, before)
        # One commit on the branch, on top of the push, holding the baseline's change only.
        assert git(remote, "rev-parse", f"{BRANCH}~1").strip() == head
        changed = git(remote, "diff", "--name-only", "main", BRANCH).split()
        assert changed == [BASELINE]
        assert git(remote, "log", "-1", "--format=%an <%ae>|%cn <%ce>", BRANCH).strip() == (
            f"{BOT}|{BOT}"
        )
        message = git(remote, "log", "-1", "--format=%B", BRANCH)
        assert message.startswith(f"{PULL_TITLE}\n\n"), message
        assert "improved (" in message
        committed = json.loads(git(remote, "show", f"{BRANCH}:{BASELINE}"))
        assert committed["scores"] != json.loads(before)["scores"]
        pulls = _pull_requests(gh)
        assert len(pulls) == 1, pulls
        pull = pulls[0]
        assert (pull["head"]["ref"], pull["base"]["ref"], pull["title"]) == (
            BRANCH,
            "main",
            PULL_TITLE,
        )
        assert "improved (" in pull["body"]
        assert first.outputs["ratchet-pr"] == pull["html_url"]
        created = next(r for r in gh.requests if r.method == "GET" and r.path.endswith("/pulls"))
        assert created.query == {"head": f"octo:{BRANCH}", "state": "open", "per_page": "100"}

        # A later push that is still better than the committed baseline: the same pull request.
        (workspace / "NOTES.md").write_text("a later change\n", encoding="utf-8")
        git(workspace, "add", "NOTES.md")
        git(workspace, "commit", "-qm", "A later change (#8)")
        git(workspace, "push", "-q", "origin", "main")
        later_head = git(workspace, "rev-parse", "HEAD").strip()
        again, _ = repo(gh.url)
        second = again.run(ON)
        assert not second.failed, second.log
        assert "updated the ratchet pull request" in second.step("Ratchet the baseline").stdout
        _assert_checkout_untouched(second, workspace, later_head, before)
        assert git(remote, "rev-parse", f"{BRANCH}~1").strip() == later_head
        assert git(remote, "diff", "--name-only", "main", BRANCH).split() == [BASELINE]
        pulls = _pull_requests(gh)
        assert [p["number"] for p in pulls] == [pull["number"]]
        assert later_head[:12] in pulls[0]["body"]
        assert second.outputs["ratchet-pr"] == pull["html_url"]
        assert _pull_calls(gh) == ["GET", "POST", "GET", "PATCH"]


def test_a_push_that_improves_nothing_keeps_the_baseline(
    repo: Callable[..., tuple[RatchetRunner, Path]],
) -> None:
    with FakeGitHub(token=TOKEN, repos={SLUG: [PR]}) as gh:
        runner, remote = repo(gh.url, improvable=False)
        head = git(runner.workspace, "rev-parse", "HEAD").strip()
        before = (runner.workspace / BASELINE).read_bytes()
        run = runner.run(ON)
        assert not run.failed, run.log
        step = run.step("Ratchet the baseline")
        assert step.conclusion == "success", run.log
        assert "kept " in step.stdout
        assert "no gated check improved" in step.stdout
        assert "the baseline is unchanged; no pull request" in step.stdout
        assert _pull_calls(gh) == []
    assert not _branch_exists(remote)
    assert run.outputs["ratchet-pr"] == ""
    _assert_checkout_untouched(run, runner.workspace, head, before)


@pytest.mark.parametrize(
    ("event_name", "ref", "fork", "said"),
    [
        ("pull_request", "refs/heads/main", False, "not a push"),
        ("push", "refs/heads/feature", False, "not a push to the default branch"),
        ("push", "refs/heads/main", True, "not a push to the default branch"),
    ],
    ids=["pull-request", "other-branch", "fork"],
)
def test_only_the_repository_own_pushes_to_the_default_branch_ratchet(
    repo: Callable[..., tuple[RatchetRunner, Path]],
    event_name: str,
    ref: str,
    fork: bool,
    said: str,
) -> None:
    with FakeGitHub(token=TOKEN, repos={SLUG: [PR]}) as gh:
        runner, remote = repo(gh.url, event_name)
        runner.ref, runner.fork = ref, fork
        run = runner.run(ON)
        assert not run.failed, run.log
        step = run.step("Ratchet the baseline")
        assert step.conclusion == "success", run.log
        assert said in step.stdout
        assert "retrieval-gate baseline" not in step.stdout + step.stderr
        assert "wrote " not in step.stdout
        assert _pull_calls(gh) == []
    assert not _branch_exists(remote)
    assert run.outputs["ratchet-pr"] == ""


def test_the_ratchet_is_off_by_default_and_waits_for_a_pass(
    repo: Callable[..., tuple[RatchetRunner, Path]],
) -> None:
    with FakeGitHub(token=TOKEN, repos={SLUG: [PR]}) as gh:
        runner, remote = repo(gh.url, improvable=False)
        off = runner.run({"config": CONFIG, "comment": "false"})
        assert not off.failed, off.log
        assert off.step("Ratchet the baseline").conclusion == "skipped"
        make_worse(runner.workspace)  # the gate fails: nothing is ratcheted
        failed, _ = repo(gh.url)
        run = failed.run({**ON, "fail-on-regression": "false"})
        assert run.outputs["verdict"] == "fail", run.log
        assert run.step("Ratchet the baseline").conclusion == "skipped"
        assert _pull_calls(gh) == []
    assert not _branch_exists(remote)


@pytest.mark.parametrize(
    ("inputs", "complaint"),
    [
        ({"ratchet": "yes"}, 'input ratchet must be "true" or "false"'),
        ({"ratchet-branch": "bad..name"}, "input ratchet-branch must be a valid git branch name"),
        ({"ratchet-branch": "-x"}, "input ratchet-branch must be a valid git branch name"),
        ({"ratchet-branch": ""}, "input ratchet-branch must be a valid git branch name"),
        ({"ratchet-branch": "a b"}, "input ratchet-branch must be a valid git branch name"),
    ],
)
def test_ratchet_inputs_are_checked(
    repo: Callable[..., tuple[RatchetRunner, Path]], inputs: dict[str, str], complaint: str
) -> None:
    runner, _ = repo("http://127.0.0.1:9", improvable=False)
    run = runner.run({**ON, **inputs})
    checked = run.step("Check the inputs")
    assert checked.returncode == 2, run.log
    assert complaint in checked.stdout
    assert run.step("Ratchet the baseline").conclusion == "skipped"


HOSTILE = "::error::forged\n\x1b[31mred\x07\n```\n</details> @octo t0ken\n"


def _shim(tmp_path: Path, python_bin: Path) -> str:
    """A PATH on which `retrieval-gate baseline` also prints hostile text after its own."""
    shim = tmp_path / "shim"
    shim.mkdir()
    script = shim / "retrieval-gate"
    script.write_text(
        "#!/usr/bin/env bash\n"
        "set -euo pipefail\n"
        f'"{python_bin / "retrieval-gate"}" "$@"\n'
        'if [ "$1" = baseline ]; then printf \'%s\' "$HOSTILE"; fi\n',
        encoding="utf-8",
    )
    script.chmod(0o755)
    return os.pathsep.join([str(shim), str(python_bin), os.environ.get("PATH", os.defpath)])


def test_hostile_output_is_inert_in_the_pull_request_and_the_token_never_shows(
    repo: Callable[..., tuple[RatchetRunner, Path]],
    python_bin: Path,
    tmp_path: Path,
) -> None:
    with FakeGitHub(token=TOKEN, repos={SLUG: [PR]}) as gh:
        runner, remote = repo(gh.url)
        runner.extra_env = {"PATH": _shim(tmp_path, python_bin), "HOSTILE": HOSTILE}
        run = runner.run(ON)
        assert not run.failed, run.log
        assert "::error::forged" in run.step("Ratchet the baseline").stdout  # the shim ran
        pulls = _pull_requests(gh)
    assert len(pulls) == 1, run.log
    body = pulls[0]["body"]
    assert TOKEN not in body
    assert "***" in body
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f]", body)
    assert not re.search(r"^\s*::", body, re.MULTILINE)
    # The output sits in one code block whose fence no line of it can close.
    fence = re.search(r"^(`{3,})text$", body, re.MULTILINE)
    assert fence is not None, body
    assert len(fence.group(1)) > 3
    inside = body[fence.end() :]
    assert inside.rstrip("\n").endswith(fence.group(1))
    assert inside.count(fence.group(1)) == 1
    assert "</details> @octo" in inside
    message = git(remote, "log", "-1", "--format=%B", BRANCH)
    assert TOKEN not in message
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f]", message)


def test_a_token_that_may_not_open_pull_requests_is_a_warning(
    repo: Callable[..., tuple[RatchetRunner, Path]],
) -> None:
    with FakeGitHub(token=TOKEN, repos={SLUG: [PR]}, read_only=True) as gh:
        runner, remote = repo(gh.url)
        run = runner.run(ON)
        assert not run.failed, run.log
        step = run.step("Ratchet the baseline")
        warnings = [line for line in step.stdout.splitlines() if line.startswith("::warning")]
        assert len(warnings) == 1, run.log
        assert "cannot open the ratchet pull request" in warnings[0]
        assert "pull-requests: write" in warnings[0]
        assert TOKEN not in step.stdout + step.stderr
        assert _pull_requests(gh) == []
    assert _branch_exists(remote)
    assert run.outputs["ratchet-pr"] == ""


# ---------------------------------------------------------------------------------------------
# The pull request function itself, against the fake GitHub.


def _environment(api_url: str, token: str | None = TOKEN) -> GitHubEnvironment:
    return GitHubEnvironment(api_url, SLUG, None, None, token)


def test_the_body_fence_outlasts_any_run_of_backticks_and_a_long_output_is_cut() -> None:
    body = ratchet_body("a ``````` b\n" + "x" * (PULL_LIMIT * 2), token=TOKEN)
    assert len(body) <= PULL_LIMIT
    assert "\n````````text\n" in body
    assert body.endswith("\n... (cut)\n````````\n")


def test_a_transient_failure_is_tried_again_and_a_refusal_is_a_scrubbed_warning() -> None:
    with FakeGitHub(token=TOKEN, repos={SLUG: [PR]}) as gh:
        gh.fail_next("POST", 502)
        env = _environment(gh.url)
        done = upsert_pull_request(
            env, head=BRANCH, base="main", title=PULL_TITLE, body="b", backoff=0
        )
        assert (done.action, done.warning) == ("created", None)
        assert [p["number"] for p in _pull_requests(gh)] == [done.number]
        same = upsert_pull_request(env, head=BRANCH, base="main", title=PULL_TITLE, body="b")
        assert (same.action, same.number) == ("updated", done.number)
        assert _pull_calls(gh) == ["GET", "POST", "GET", "POST", "GET"]  # unchanged: no PATCH
        gh.fail_next("GET", 401, body={"message": f"Bad credentials {TOKEN}"})
        refused = upsert_pull_request(env, head=BRANCH, base="main", title=PULL_TITLE, body="c")
    assert refused.action == "skipped"
    assert refused.warning is not None
    assert "GitHub rejected the token" in refused.warning
    assert TOKEN not in refused.warning
    missing = upsert_pull_request(
        _environment("http://127.0.0.1:9", None), head=BRANCH, base="main", title="t", body="b"
    )
    assert missing.action == "skipped"
    assert missing.warning is not None
    assert "no token" in missing.warning
