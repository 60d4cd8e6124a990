"""The sticky pull request comment: one per gate name, found by its hidden marker line and
updated in place."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

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
    send,
    with_retries,
)

if TYPE_CHECKING:
    import httpx

    from retrieval_gate.integrations.github.environment import GitHubEnvironment

COMMENT_LIMIT = 65_536  # GitHub's maximum comment body length in characters
MARKER_PREFIX = "<!-- retrieval-gate: "
MARKER_SUFFIX = " -->"


@dataclass(frozen=True)
class CommentOutcome:
    """What `upsert_comment` did; `warning` is one line, meant for a ::warning command."""

    action: Literal["created", "updated", "skipped"]
    url: str | None
    warning: str | None


def comment_marker(name: str) -> str:
    """Returns the hidden HTML comment that marks this gate's sticky comment for `name`."""
    escaped: list[str] = []
    for char in name:
        # `%` is escaped too, so decoding the name is unambiguous: two names, two markers.
        unsafe = (
            char in "%<>"
            or not char.isprintable()
            or (char == "-" and escaped and escaped[-1] == "-")
        )
        if unsafe:
            data = char.encode("utf-8", "surrogatepass")
            escaped.append("".join(f"%{byte:02X}" for byte in data))
        else:
            escaped.append(char)
    return f"{MARKER_PREFIX}{''.join(escaped)}{MARKER_SUFFIX}"


def comment_room(name: str) -> int:
    """Characters of Markdown a comment for gate `name` may carry: GitHub's limit less the
    marker line `upsert_comment` puts first."""
    return COMMENT_LIMIT - len(comment_marker(name)) - 1


def upsert_comment(
    env: GitHubEnvironment,
    body: str,
    name: str,
    *,
    timeout: float = 30.0,
    retries: int = 2,
    backoff: float = 1.0,
) -> CommentOutcome:
    """Creates or updates the pull request comment marked for `name`; returns what happened."""
    marker = comment_marker(name)
    posted = f"{marker}\n{body}"
    if len(posted) > COMMENT_LIMIT:
        raise ValueError(
            f"comment is {len(posted)} characters; GitHub allows at most {COMMENT_LIMIT}"
        )
    missing = []
    if env.pr_number is None:
        missing.append(
            "no pull request in this event: comments are posted on pull_request events; pass --pr"
        )
    if env.repository is None:
        missing.append("no repository: GITHUB_REPOSITORY is not set; pass --repo owner/name")
    if env.token is None:
        missing.append(NO_TOKEN)
    if env.pr_number is None or env.repository is None or env.token is None:
        return _skipped("not commenting: " + "; ".join(missing))
    if not header_safe(env.token):
        return _skipped(f"not commenting: {UNSAFE_TOKEN}")
    target = Target(
        env.api_url,
        env.repository,
        env.pr_number,
        timeout,
        env.step_summary is not None,
        doing=f"comment on pull request #{env.pr_number}",
        forbidden="a pull request from a fork gets a read-only token",
        advice="See 'Which workflow: branches and forks' in docs/github-action.md.",
        missing="the repository or pull request does not exist, or the token cannot see it",
    )
    done = with_retries(
        env.token,
        target,
        lambda client: _upsert_once(client, target, marker, posted),
        retries=retries,
        backoff=backoff,
        doing="not commenting",
    )
    return _skipped(done) if isinstance(done, str) else done


def _skipped(warning: str) -> CommentOutcome:
    return CommentOutcome(action="skipped", url=None, warning=" ".join(warning.split()))


def _upsert_once(client: httpx.Client, target: Target, marker: str, posted: str) -> CommentOutcome:
    existing = _find_comment(client, target, marker)
    issue = f"{target.api_url}/repos/{target.repository}/issues"
    if existing is None:
        response = send(
            client, target, "POST", f"{issue}/{target.number}/comments", {"body": posted}
        )
        return CommentOutcome("created", html_url(json_or_none(response)), None)
    if existing.get("body") == posted:
        return CommentOutcome("updated", html_url(existing), None)
    response = send(client, target, "PATCH", f"{issue}/comments/{existing['id']}", {"body": posted})
    return CommentOutcome("updated", html_url(json_or_none(response)), None)


def _find_comment(client: httpx.Client, target: Target, marker: str) -> dict[str, Any] | None:
    """The first comment whose first line is exactly the marker, across every page."""
    import httpx

    api = httpx.URL(target.api_url)
    url: str | None = (
        f"{target.api_url}/repos/{target.repository}/issues/{target.number}/comments"
        f"?per_page={PER_PAGE}"
    )
    seen: set[str] = set()
    while url is not None:
        seen.add(url)
        response = send(client, target, "GET", url)
        page = json_or_none(response)
        if not isinstance(page, list):
            raise GiveUpError(f"{cannot(target)}: GitHub's comment list is not a JSON list")
        for comment in page:
            if isinstance(comment, dict) and _is_marked(comment.get("body"), marker):
                if not isinstance(comment.get("id"), int):
                    raise GiveUpError(f"{cannot(target)}: GitHub's comment has no numeric id")
                return comment
        url = response.links.get("next", {}).get("url")
        if url is None or url in seen:
            return None
        following = httpx.URL(url)
        # The token goes with every request: never follow a link to another server.
        if (following.scheme, following.host, following.port) != (api.scheme, api.host, api.port):
            raise GiveUpError(
                f"{cannot(target)}: GitHub's next-page link leads to another host "
                f"({following.host}); not following it"
            )
    return None


def _is_marked(body: object, marker: str) -> bool:
    if not isinstance(body, str) or not body.startswith(marker):
        return False
    rest = body[len(marker) :]
    # Comments edited in GitHub's web editor come back with CRLF line ends.
    return rest == "" or rest.startswith(("\n", "\r\n"))
