"""GitHub integration against FakeGitHub, a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval_gate.core.version import __version__
from retrieval_gate.errors import InputError
from retrieval_gate.integrations.github.comments import (
    COMMENT_LIMIT,
    CommentOutcome,
    comment_marker,
    upsert_comment,
)
from retrieval_gate.integrations.github.environment import GitHubEnvironment, read_environment
from retrieval_gate.integrations.github.workflow import append_step_summary, workflow_command
from tests.helpers.fake_github import FakeGitHub

TOKEN = "ghs_Xq7Zz9SecretTokenForTests"
REPO = "octo/app"
PR = 7
FAST: dict[str, Any] = {"timeout": 5.0, "backoff": 0.0}


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with FakeGitHub(token=TOKEN, repos={REPO: [PR]}) as server:
        yield server


def environment(gh: FakeGitHub, **changes: Any) -> GitHubEnvironment:
    env = GitHubEnvironment(
        api_url=gh.url, repository=REPO, pr_number=PR, step_summary=None, token=TOKEN
    )
    return replace(env, **changes)


def bodies(gh: FakeGitHub) -> list[str]:
    return [comment["body"] for comment in gh.comments.get((REPO, PR), [])]


def write_event(tmp_path: Path, event: Any) -> dict[str, str]:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event), encoding="utf-8")
    return {"GITHUB_EVENT_PATH": str(path), "GITHUB_REPOSITORY": REPO}


# read_environment


def test_reads_a_pull_request_event(tmp_path: Path) -> None:
    environ = write_event(tmp_path, {"action": "opened", "pull_request": {"number": 42}})
    environ |= {
        "GITHUB_API_URL": "https://ghe.example.com/api/v3/",
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "GITHUB_TOKEN": TOKEN,
    }
    env = read_environment(environ)
    assert env == GitHubEnvironment(
        api_url="https://ghe.example.com/api/v3",
        repository=REPO,
        pr_number=42,
        step_summary=tmp_path / "summary.md",
        token=TOKEN,
    )
    assert TOKEN not in repr(env)
    assert TOKEN not in str(env)


@pytest.mark.parametrize(
    ("event", "number"),
    [
        ({"issue": {"number": 5, "pull_request": {"url": "https://x"}}, "comment": {}}, 5),
        ({"issue": {"number": 5}, "comment": {}}, None),  # a comment on a plain issue
        ({"workflow_run": {"pull_requests": [{"number": 9}, {"number": 3}]}}, 9),
        ({"workflow_run": {"pull_requests": []}}, None),  # what a fork's pull request gives
        ({"ref": "refs/heads/main", "head_commit": {"id": "abc"}}, None),  # push
        ({"pull_request": {"number": True}}, None),
    ],
)
def test_pr_number_from_other_events(
    tmp_path: Path, event: dict[str, Any], number: int | None
) -> None:
    assert read_environment(write_event(tmp_path, event)).pr_number == number


def test_defaults_without_actions_variables() -> None:
    env = read_environment({"GITHUB_TOKEN": ""})
    assert env == GitHubEnvironment("https://api.github.com", None, None, None, None)


@pytest.mark.parametrize("text", ["{not json", "[" * 100_000 + "]" * 100_000])
def test_an_event_file_that_is_not_json_is_named(tmp_path: Path, text: str) -> None:
    path = tmp_path / "event.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match="not JSON") as caught:
        read_environment({"GITHUB_EVENT_PATH": str(path)})
    assert caught.value.source == str(path)
    assert str(path) in str(caught.value)


def test_a_missing_event_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "missing.json"
    with pytest.raises(InputError, match="cannot read the GitHub event file") as caught:
        read_environment({"GITHUB_EVENT_PATH": str(path)})
    assert caught.value.source == str(path)


def test_explicit_arguments_win(tmp_path: Path) -> None:
    environ = write_event(tmp_path, {"pull_request": {"number": 42}})
    env = read_environment(environ, pr_number=3, repository="other/repo")
    assert (env.repository, env.pr_number) == ("other/repo", 3)
    # With --pr the event file is not needed, so a broken one does not matter.
    Path(environ["GITHUB_EVENT_PATH"]).write_text("garbage", encoding="utf-8")
    assert read_environment(environ, pr_number=3).pr_number == 3


@pytest.mark.parametrize("repository", ["octo", "octo/app/extra", "octo/a pp", "octo/..", "/app"])
def test_repository_must_look_like_owner_name(repository: str) -> None:
    with pytest.raises(InputError, match="owner/name"):
        read_environment({}, repository=repository)
    with pytest.raises(InputError, match="owner/name") as caught:
        read_environment({"GITHUB_REPOSITORY": repository})
    assert caught.value.source == "GITHUB_REPOSITORY"


def test_pr_number_must_be_positive() -> None:
    with pytest.raises(InputError, match="positive"):
        read_environment({}, pr_number=0)


# step summary and workflow commands


def test_step_summary_appends(tmp_path: Path) -> None:
    path = tmp_path / "summary.md"
    path.write_text("## an earlier step\n", encoding="utf-8")
    append_step_summary(path, "## retrieval-gate ✓")
    append_step_summary(path, "second\n")
    assert path.read_text(encoding="utf-8") == "## an earlier step\n## retrieval-gate ✓\nsecond\n"


def test_step_summary_in_a_missing_folder_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "no" / "summary.md"
    with pytest.raises(InputError) as caught:
        append_step_summary(path, "x")
    assert caught.value.source == str(path)


def test_workflow_command_escaping() -> None:
    assert (
        workflow_command("error", "ndcg@10 fell 3.1pt", title="retrieval-gate tiny")
        == "::error title=retrieval-gate tiny::ndcg@10 fell 3.1pt"
    )
    assert (
        workflow_command("warning", "50% down\r\nsee: a, b", title="gate: a,b 100%\n")
        == "::warning title=gate%3A a%2Cb 100%25%0A::50%25 down%0D%0Asee: a, b"
    )
    assert workflow_command("notice", "plain") == "::notice::plain"


# comment_marker


def test_marker_for_a_plain_name() -> None:
    assert comment_marker("tiny") == "<!-- retrieval-gate: tiny -->"
    assert comment_marker("my-bench_v2.1") == "<!-- retrieval-gate: my-bench_v2.1 -->"


@pytest.mark.parametrize("name", ["-->", "x-->y", "--!>", "a\n-->\n", "<!--", "---", "a--"])
def test_a_name_cannot_close_the_comment(name: str) -> None:
    marker = comment_marker(name)
    inner = marker.removeprefix("<!-- ").removesuffix(" -->")
    assert "--" not in inner
    assert ">" not in inner
    assert "<" not in inner
    assert "\n" not in marker
    assert marker.count("-->") == 1


def test_marker_distinct_names_stay_distinct() -> None:
    names = ["a-b", "a%2Db", "a--b", "a-%2Db", "a>b", "a%3Eb", "a\nb", "a%0Ab", "a b", ""]
    assert len({comment_marker(name) for name in names}) == len(names)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_marker_decodes_back_to_the_name(name: str) -> None:
    marker = comment_marker(name)
    inner = marker.removeprefix("<!-- retrieval-gate: ").removesuffix(" -->")
    assert unquote(inner, errors="strict") == name
    assert "--" not in inner
    assert ">" not in inner
    assert marker.isprintable()


# upsert_comment: the happy paths


def test_creates_then_updates_the_same_comment(gh: FakeGitHub) -> None:
    gh.add_comment(REPO, PR, "a human's review")
    first = upsert_comment(environment(gh), "report one", "tiny", **FAST)
    assert first.action == "created"
    assert first.warning is None
    second = upsert_comment(environment(gh), "report two", "tiny", **FAST)
    assert second == CommentOutcome("updated", first.url, None)
    assert bodies(gh) == ["a human's review", f"{comment_marker('tiny')}\nreport two"]
    assert first.url == gh.comments[(REPO, PR)][1]["html_url"]
    assert [(r.method, r.path) for r in gh.requests] == [
        ("GET", f"/repos/{REPO}/issues/{PR}/comments"),
        ("POST", f"/repos/{REPO}/issues/{PR}/comments"),
        ("GET", f"/repos/{REPO}/issues/{PR}/comments"),
        ("PATCH", f"/repos/{REPO}/issues/comments/2"),
    ]
    assert gh.requests[0].query == {"per_page": "100"}
    assert gh.requests[1].body == {"body": f"{comment_marker('tiny')}\nreport one"}
    headers = gh.requests[0].headers
    assert headers["accept"] == "application/vnd.github+json"
    assert headers["x-github-api-version"] == "2022-11-28"
    assert headers["user-agent"] == f"retrieval-gate/{__version__}"


def test_an_identical_body_is_not_patched(gh: FakeGitHub) -> None:
    created = upsert_comment(environment(gh), "same", "tiny", **FAST)
    again = upsert_comment(environment(gh), "same", "tiny", **FAST)
    assert again == CommentOutcome("updated", created.url, None)
    assert [r.method for r in gh.requests] == ["GET", "POST", "GET"]


def test_two_names_keep_two_comments(gh: FakeGitHub) -> None:
    for round_ in (1, 2):
        for name in ("tiny", "tiny-2"):
            upsert_comment(environment(gh), f"{name} round {round_}", name, **FAST)
    assert bodies(gh) == [
        f"{comment_marker('tiny')}\ntiny round 2",
        f"{comment_marker('tiny-2')}\ntiny-2 round 2",
    ]


def test_only_a_first_line_that_is_exactly_the_marker_counts(gh: FakeGitHub) -> None:
    marker = comment_marker("tiny")
    gh.add_comment(REPO, PR, f"> {marker}\nquoted by a reviewer")
    gh.add_comment(REPO, PR, f"{marker}extra\nnot ours")
    gh.add_comment(REPO, PR, f"{marker}\r\nedited in the browser")
    outcome = upsert_comment(environment(gh), "fresh", "tiny", **FAST)
    assert outcome.action == "updated"
    assert bodies(gh)[:2] == [f"> {marker}\nquoted by a reviewer", f"{marker}extra\nnot ours"]
    assert bodies(gh)[2] == f"{marker}\nfresh"


def test_the_marker_on_page_three_is_found(gh: FakeGitHub) -> None:
    gh.per_page_max = 2
    for i in range(5):
        gh.add_comment(REPO, PR, f"other {i}")
    ours = gh.add_comment(REPO, PR, f"{comment_marker('tiny')}\nold")
    outcome = upsert_comment(environment(gh), "new", "tiny", **FAST)
    assert outcome == CommentOutcome("updated", ours["html_url"], None)
    assert len(bodies(gh)) == 6
    assert ours["body"] == f"{comment_marker('tiny')}\nnew"
    gets = [r for r in gh.requests if r.method == "GET"]
    assert [r.query.get("page") for r in gets] == [None, "2", "3"]
    assert gh.requests[-1].method == "PATCH"
    assert gh.requests[-1].path == f"/repos/{REPO}/issues/comments/{ours['id']}"


def test_every_page_is_read_before_creating(gh: FakeGitHub) -> None:
    gh.per_page_max = 2
    for i in range(5):
        gh.add_comment(REPO, PR, f"other {i}")
    assert upsert_comment(environment(gh), "new", "tiny", **FAST).action == "created"
    assert [r.method for r in gh.requests] == ["GET", "GET", "GET", "POST"]


def test_a_next_link_to_another_host_is_not_followed(gh: FakeGitHub) -> None:
    with FakeGitHub(token=TOKEN, repos={REPO: [PR]}) as elsewhere:
        link = f'<{elsewhere.url}/repos/{REPO}/issues/{PR}/comments?page=2>; rel="next"'
        gh.fail_next("GET", 200, headers={"Link": link}, body=[])
        outcome = upsert_comment(environment(gh), "x", "tiny", **FAST)
        assert elsewhere.requests == []
    assert outcome.action == "skipped"
    assert "another host" in (outcome.warning or "")
    assert bodies(gh) == []


def test_a_body_at_the_limit_is_posted_and_one_more_character_is_refused(
    gh: FakeGitHub,
) -> None:
    room = COMMENT_LIMIT - len(comment_marker("tiny")) - 1
    assert upsert_comment(environment(gh), "x" * room, "tiny", **FAST).action == "created"
    requests = len(gh.requests)
    with pytest.raises(ValueError, match="65536"):
        upsert_comment(environment(gh), "x" * (room + 1), "tiny", **FAST)
    assert len(gh.requests) == requests


# upsert_comment: failures never raise


def test_a_read_only_token_gets_the_fork_warning(gh: FakeGitHub, tmp_path: Path) -> None:
    gh.read_only = True
    env = environment(gh, step_summary=tmp_path / "summary.md")
    outcome = upsert_comment(env, "report", "tiny", **FAST)
    assert outcome.action == "skipped"
    assert outcome.url is None
    warning = outcome.warning or ""
    assert "#7" in warning
    assert "fork" in warning
    assert "read-only" in warning
    assert "step summary still has the report" in warning
    assert "docs/github-action.md" in warning
    assert "\n" not in warning
    assert bodies(gh) == []


def test_a_read_only_token_cannot_update_either(gh: FakeGitHub) -> None:
    gh.add_comment(REPO, PR, f"{comment_marker('tiny')}\nold")
    gh.read_only = True
    outcome = upsert_comment(environment(gh), "new", "tiny", **FAST)
    assert outcome.action == "skipped"
    assert "fork" in (outcome.warning or "")
    assert bodies(gh) == [f"{comment_marker('tiny')}\nold"]


@pytest.mark.parametrize(
    ("status", "headers", "expected"),
    [
        (
            403,
            {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1700000000"},
            "resets at 2023-11-14T22:13:20Z",
        ),
        (429, {"retry-after": "60"}, "retry after 60 seconds"),
        (403, {"retry-after": "5"}, "retry after 5 seconds"),
        (429, {}, "rate limit"),
    ],
)
def test_rate_limits_say_when_to_retry(
    gh: FakeGitHub, status: int, headers: dict[str, str], expected: str
) -> None:
    gh.fail_next("*", status, headers=headers, body={"message": "API rate limit exceeded"})
    outcome = upsert_comment(environment(gh), "x", "tiny", **FAST)
    assert outcome.action == "skipped"
    warning = outcome.warning or ""
    assert "rate limit" in warning
    assert expected in warning
    assert "fork" not in warning
    assert len(gh.requests) == 1  # a rate limit is not retried


def test_a_missing_pull_request_is_a_404_warning(gh: FakeGitHub) -> None:
    outcome = upsert_comment(environment(gh, pr_number=8), "x", "tiny", **FAST)
    assert outcome.action == "skipped"
    warning = outcome.warning or ""
    assert "#8" in warning
    assert "404" in warning
    assert "not found" in warning
    assert "cannot see it" in warning


def test_a_rejected_token_is_a_401_warning(gh: FakeGitHub) -> None:
    outcome = upsert_comment(environment(gh, token="ghs_wrong"), "x", "tiny", **FAST)
    assert outcome.action == "skipped"
    assert "401" in (outcome.warning or "")
    assert "Bad credentials" in (outcome.warning or "")


def test_another_4xx_carries_githubs_message(gh: FakeGitHub) -> None:
    gh.fail_next("POST", 422, body={"message": "Validation Failed\n\nbody is too long"})
    outcome = upsert_comment(environment(gh), "x", "tiny", **FAST)
    assert outcome.action == "skipped"
    assert outcome.warning == (
        "cannot comment on pull request #7 in octo/app: "
        "GitHub answered HTTP 422: Validation Failed body is too long."
    )


def test_500_twice_then_success_is_retried(gh: FakeGitHub) -> None:
    gh.fail_next("GET", 500, times=2)
    outcome = upsert_comment(environment(gh), "x", "tiny", **FAST)
    assert outcome.action == "created"
    assert [r.method for r in gh.requests] == ["GET", "GET", "GET", "POST"]
    assert len(bodies(gh)) == 1


def test_a_failed_post_is_retried_without_a_duplicate(gh: FakeGitHub) -> None:
    gh.fail_next("POST", 502)
    assert upsert_comment(environment(gh), "x", "tiny", **FAST).action == "created"
    assert [r.method for r in gh.requests] == ["GET", "POST", "GET", "POST"]
    assert len(bodies(gh)) == 1


def test_500_forever_gives_up_with_a_warning(gh: FakeGitHub) -> None:
    gh.fail_next("*", 500, times=100)
    outcome = upsert_comment(environment(gh), "x", "tiny", retries=2, **FAST)
    assert outcome.action == "skipped"
    assert outcome.warning == (
        "cannot comment on pull request #7 in octo/app: GitHub answered HTTP 500 on 3 attempts."
    )
    assert len(gh.requests) == 3


def test_no_server_is_a_warning() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = GitHubEnvironment(f"http://127.0.0.1:{port}", REPO, PR, None, TOKEN)
    outcome = upsert_comment(env, "x", "tiny", retries=1, timeout=2.0, backoff=0.0)
    assert outcome.action == "skipped"
    assert "cannot reach" in (outcome.warning or "")
    assert "on 2 attempts" in (outcome.warning or "")


def test_a_silent_server_times_out() -> None:
    # A listening socket that never accepts: the kernel completes the connection, nobody answers.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        env = GitHubEnvironment(f"http://127.0.0.1:{port}", REPO, PR, None, TOKEN)
        outcome = upsert_comment(env, "x", "tiny", retries=0, timeout=0.2, backoff=0.0)
    assert outcome.action == "skipped"
    assert "did not answer within 0.2s once" in (outcome.warning or "")


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"pr_number": None}, "no pull request in this event"),
        ({"repository": None}, "GITHUB_REPOSITORY"),
        ({"token": None}, "GITHUB_TOKEN"),
    ],
)
def test_missing_settings_skip_without_a_request(
    gh: FakeGitHub, changes: dict[str, Any], expected: str
) -> None:
    outcome = upsert_comment(environment(gh, **changes), "x", "tiny", **FAST)
    assert outcome.action == "skipped"
    assert outcome.url is None
    assert expected in (outcome.warning or "")
    assert "\n" not in (outcome.warning or "")
    assert gh.requests == []


def test_all_missing_settings_are_named_together(gh: FakeGitHub) -> None:
    env = environment(gh, pr_number=None, repository=None, token=None)
    warning = upsert_comment(env, "x", "tiny", **FAST).warning or ""
    assert "--pr" in warning
    assert "--repo" in warning
    assert "GITHUB_TOKEN" in warning


def test_the_token_never_leaks(gh: FakeGitHub, tmp_path: Path) -> None:
    outcomes = [upsert_comment(environment(gh), "x", "tiny", **FAST)]
    gh.fail_next("*", 418, body={"message": f"echoing {TOKEN} back"})
    outcomes.append(upsert_comment(environment(gh), "y", "tiny", **FAST))
    gh.fail_next("*", 500, times=3, body={"message": f"{TOKEN}"})
    outcomes.append(upsert_comment(environment(gh), "z", "tiny", **FAST))
    gh.read_only = True
    outcomes.append(upsert_comment(environment(gh), "w", "tiny", **FAST))
    outcomes.append(upsert_comment(environment(gh, pr_number=99), "v", "tiny", **FAST))
    outcomes.append(upsert_comment(environment(gh, pr_number=None), "u", "tiny", **FAST))
    assert [o.action for o in outcomes] == ["created", *["skipped"] * 5]
    assert outcomes[1].warning is not None
    assert "echoing *** back" in outcomes[1].warning
    for outcome in outcomes:
        assert TOKEN not in repr(outcome)
    assert TOKEN not in repr(environment(gh))
    assert gh.requests
    for request in gh.requests:
        assert "authorization" not in request.headers
        assert all(TOKEN not in value for value in request.headers.values())
        assert TOKEN not in request.path
        assert TOKEN not in json.dumps(request.query)
        assert TOKEN not in json.dumps(request.body)


def test_a_token_that_no_header_can_carry_is_skipped(gh: FakeGitHub) -> None:
    outcome = upsert_comment(environment(gh, token=f"{TOKEN}\nX-Evil: 1"), "x", "tiny", **FAST)
    assert outcome.action == "skipped"
    assert TOKEN not in repr(outcome)
    assert gh.requests == []


def test_the_fake_rejects_requests_without_the_token(gh: FakeGitHub) -> None:
    outcome = upsert_comment(environment(gh, token="token-of-someone-else"), "x", "tiny", **FAST)
    assert outcome.action == "skipped"
    assert gh.requests[0].headers.get("authorization") is None
    assert bodies(gh) == []
