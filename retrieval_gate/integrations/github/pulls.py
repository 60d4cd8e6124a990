"""The ratchet's pull request: its body, and opening or updating the one open from its
branch."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from retrieval_gate.core.wording import console_text
from retrieval_gate.integrations.github.api import (
    NO_TOKEN,
    PER_PAGE,
    UNSAFE_TOKEN,
    GiveUpError,
    Target,
    cannot,
    header_safe,
    html_url,
    json_or_none,
    scrub,
    send,
    with_retries,
)
from retrieval_gate.integrations.github.environment import number_of

if TYPE_CHECKING:
    import httpx

    from retrieval_gate.integrations.github.environment import GitHubEnvironment

PULL_TITLE = "Ratchet the retrieval-gate baseline"
"""The ratchet pull request's title, and its commit's subject line."""
PULL_LIMIT = 65_536  # GitHub's maximum pull request body length in characters
OUTPUT_ROOM = PULL_LIMIT - 1_000  # what the command's output may fill; the rest is prose


@dataclass(frozen=True)
class PullRequestOutcome:
    """What `upsert_pull_request` did; `warning` is one line, meant for a ::warning command."""

    action: Literal["created", "updated", "skipped"]
    url: str | None
    number: int | None
    warning: str | None


def ratchet_body(output: str, *, token: str | None = None) -> str:
    """The ratchet pull request's Markdown: what it is, then `output` (the baseline command's)
    made inert: console-safe (`wording.console_text`), `token` scrubbed, cut to fit, in a code
    block whose fence is longer than any run of backticks in it, so nothing can close it."""
    text = console_text(output)
    if token:
        text = scrub(text, token)
    text = text.rstrip("\n")
    if len(text) > OUTPUT_ROOM:
        text = text[:OUTPUT_ROOM] + "\n... (cut)"
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return (
        "retrieval-gate's ratchet (`retrieval-gate baseline --if-improved`) found the retriever "
        "on the default branch significantly better than the committed baseline on a gated "
        "check, with no gated check failing or inconclusive. Merging this pull request makes "
        "the current run the baseline that later pull requests are compared with.\n\n"
        f"{fence}text\n{text}\n{fence}\n"
    )


def upsert_pull_request(
    env: GitHubEnvironment,
    *,
    head: str,
    base: str,
    title: str,
    body: str,
    timeout: float = 30.0,
    retries: int = 2,
    backoff: float = 1.0,
) -> PullRequestOutcome:
    """Opens a pull request from branch `head` (of this repository) to `base`, or updates the
    title and body of the open one from `head`; returns what happened."""
    if len(body) > PULL_LIMIT:
        raise ValueError(f"body is {len(body)} characters; GitHub allows at most {PULL_LIMIT}")
    missing = []
    if env.repository is None:
        missing.append("no repository: GITHUB_REPOSITORY is not set")
    if env.token is None:
        missing.append(NO_TOKEN)
    if env.repository is None or env.token is None:
        return _pull_skipped("not opening the ratchet pull request: " + "; ".join(missing))
    if not header_safe(env.token):
        return _pull_skipped(f"not opening the ratchet pull request: {UNSAFE_TOKEN}")
    target = Target(
        env.api_url,
        env.repository,
        0,
        timeout,
        summary=False,
        doing=f"open the ratchet pull request from {head}",
        forbidden="the job needs `pull-requests: write`, and the repository must allow GitHub "
        "Actions to create pull requests",
        advice="See 'The ratchet as a pull request' in docs/github-action.md.",
        missing="the repository or a branch does not exist, or the token cannot see it",
    )
    done = with_retries(
        env.token,
        target,
        lambda client: _upsert_pull_once(client, target, head, base, title, body),
        retries=retries,
        backoff=backoff,
        doing="not opening the ratchet pull request",
    )
    return _pull_skipped(done) if isinstance(done, str) else done


def _pull_skipped(warning: str) -> PullRequestOutcome:
    return PullRequestOutcome("skipped", None, None, " ".join(warning.split()))


def _upsert_pull_once(
    client: httpx.Client, target: Target, head: str, base: str, title: str, body: str
) -> PullRequestOutcome:
    import httpx

    pulls = f"{target.api_url}/repos/{target.repository}/pulls"
    owner = target.repository.split("/")[0]
    # GitHub filters by "owner:branch"; at most one pull request is open from a branch to
    # one base, and the ratchet's branch is its own, so the first page holds it.
    query = {"head": f"{owner}:{head}", "state": "open", "per_page": str(PER_PAGE)}
    response = send(client, target, "GET", str(httpx.URL(pulls, params=query)))
    page = json_or_none(response)
    if not isinstance(page, list):
        raise GiveUpError(f"{cannot(target)}: GitHub's pull request list is not a JSON list")
    existing = next((pull for pull in page if _is_from(pull, head)), None)
    if existing is None:
        payload = {"title": title, "head": head, "base": base, "body": body}
        created = json_or_none(send(client, target, "POST", pulls, payload))
        return PullRequestOutcome("created", html_url(created), _pull_number(created), None)
    number = existing["number"]
    if existing.get("title") == title and existing.get("body") == body:
        return PullRequestOutcome("updated", html_url(existing), number, None)
    payload = {"title": title, "body": body}
    updated = json_or_none(send(client, target, "PATCH", f"{pulls}/{number}", payload))
    return PullRequestOutcome("updated", html_url(updated), number, None)


def _is_from(pull: object, head: str) -> bool:
    """Whether `pull` is a listed pull request, with a number, from branch `head`."""
    if not isinstance(pull, dict) or _pull_number(pull) is None:
        return False
    source = pull.get("head")
    return isinstance(source, dict) and source.get("ref") == head


def _pull_number(pull: object) -> int | None:
    return number_of(pull) if isinstance(pull, dict) else None
