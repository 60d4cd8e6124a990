"""GitHub Actions: the event's pull request, the step summary, annotations, the sticky comment,
the ratchet's pull request."""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from retrieval_gate.core.version import __version__
from retrieval_gate.core.wording import console_text, excerpt, visible_controls
from retrieval_gate.errors import InputError

if TYPE_CHECKING:
    import httpx

COMMENT_LIMIT = 65_536  # GitHub's maximum comment body length in characters

DEFAULT_API_URL = "https://api.github.com"
API_VERSION = "2022-11-28"
PER_PAGE = 100  # GitHub's largest page: fewest requests on a busy pull request
MARKER_PREFIX = "<!-- retrieval-gate: "
MARKER_SUFFIX = " -->"
REPOSITORY = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
MESSAGE_LIMIT = 200
"""Characters of GitHub's error message kept in a one-line warning."""


@dataclass(frozen=True)
class GitHubEnvironment:
    """Where and as whom to report: read from the Actions environment or given explicitly."""

    api_url: str
    repository: str | None
    pr_number: int | None
    step_summary: Path | None
    token: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class CommentOutcome:
    """What `upsert_comment` did; `warning` is one line, meant for a ::warning command."""

    action: Literal["created", "updated", "skipped"]
    url: str | None
    warning: str | None


def read_environment(
    environ: Mapping[str, str],
    *,
    pr_number: int | None = None,
    repository: str | None = None,
) -> GitHubEnvironment:
    """Returns the GitHub environment from Actions variables; explicit arguments win."""
    api_url = (environ.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/")
    if not api_url.startswith(("http://", "https://")):
        raise InputError(
            f"must start with http:// or https://, not {api_url!r}", source="GITHUB_API_URL"
        )
    if repository is None:
        repository = environ.get("GITHUB_REPOSITORY") or None
        source: str | None = "GITHUB_REPOSITORY"
    else:
        source = None
    if repository is not None and (
        REPOSITORY.fullmatch(repository) is None or repository.split("/")[1] in (".", "..")
    ):
        raise InputError(f"repository must look like owner/name, not {repository!r}", source=source)
    if pr_number is not None:
        if isinstance(pr_number, bool) or pr_number < 1:
            raise InputError(f"a pull request number must be a positive integer, not {pr_number}")
    elif environ.get("GITHUB_EVENT_PATH"):
        pr_number = _event_pr_number(Path(environ["GITHUB_EVENT_PATH"]))
    summary = environ.get("GITHUB_STEP_SUMMARY")
    # A token pasted from a file often carries a trailing newline, which no header can hold.
    token = (environ.get("GITHUB_TOKEN") or "").strip() or None
    return GitHubEnvironment(
        api_url=api_url,
        repository=repository,
        pr_number=pr_number,
        step_summary=Path(summary) if summary else None,
        token=token,
    )


def _event_pr_number(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError("the GitHub event file is not UTF-8 text", source=str(path)) from None
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise InputError(f"cannot read the GitHub event file: {reason}", source=str(path)) from None
    try:
        event = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise InputError(f"the GitHub event file is not JSON: {error}", source=str(path)) from None
    if not isinstance(event, dict):
        raise InputError("the GitHub event file is not a JSON object", source=str(path))
    pull_request = event.get("pull_request")
    if isinstance(pull_request, dict) and (number := _number(pull_request)) is not None:
        return number
    # issue_comment events carry the pull request as an issue with a `pull_request` link.
    issue = event.get("issue")
    if isinstance(issue, dict) and isinstance(issue.get("pull_request"), dict):
        number = _number(issue)
        if number is not None:
            return number
    # GitHub leaves workflow_run.pull_requests empty for pull requests from forks.
    run = event.get("workflow_run")
    if isinstance(run, dict):
        pulls = run.get("pull_requests")
        if isinstance(pulls, list) and pulls and isinstance(pulls[0], dict):
            return _number(pulls[0])
    return None


def _number(item: dict[str, Any]) -> int | None:
    value = item.get("number")
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def append_step_summary(path: Path, markdown: str) -> None:
    """Appends Markdown to the job's step summary file (shared by every step); returns None."""
    text = markdown if markdown.endswith("\n") else markdown + "\n"
    try:
        with path.open("a", encoding="utf-8", newline="") as summary:
            summary.write(text)
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise InputError(f"cannot write the step summary: {reason}", source=str(path)) from None


def workflow_command(
    level: Literal["error", "warning", "notice"], message: str, title: str | None = None
) -> str:
    """Returns a `::level title=...::message` workflow command line, escaped as @actions/core."""
    properties = f" title={_escape_property(title)}" if title else ""
    return f"::{level}{properties}::{_escape_data(message)}"


def fenced(text: str) -> str:
    """Free text as lines the runner reads no workflow command from: console-safe
    (`wording.console_text`) and between `::stop-commands::TOKEN` and `::TOKEN::`, GitHub's
    documented fence, with a token no text printed before could have guessed."""
    token = secrets.token_hex(16)
    body = console_text(text)
    body = body if body.endswith("\n") else body + "\n"
    return f"::stop-commands::{token}\n{body}::{token}::\n"


def _escape_data(text: str) -> str:
    # Line breaks are encoded; any other control character is shown as `?`: an escape
    # sequence is no more welcome in an annotation than in the log.
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return visible_controls(text)


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


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


@dataclass(frozen=True)
class _Target:
    api_url: str
    repository: str
    number: int
    timeout: float
    summary: bool  # whether a step summary exists to point readers at
    doing: str  # what a warning says cannot be done: "comment on pull request #7"
    forbidden: str  # why a 403 may happen
    advice: str  # what to do about a 403
    missing: str  # what a 404 may mean


class _GiveUpError(Exception):
    """A request that failed for good; the message is the one-line warning."""


class _TransientError(Exception):
    """A 5xx, timeout or connection error: worth another attempt."""


_NO_TOKEN = (
    "no token: set GITHUB_TOKEN (e.g. `env: GITHUB_TOKEN: ${{ github.token }}` with "
    "`permissions: pull-requests: write`)"
)
_UNSAFE_TOKEN = "GITHUB_TOKEN holds characters no HTTP header can carry"


def _header_safe(token: str) -> bool:
    """Whether `token` can go into an Authorization header as it is."""
    return token.isascii() and token.isprintable() and " " not in token


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
        missing.append(_NO_TOKEN)
    if env.pr_number is None or env.repository is None or env.token is None:
        return _skipped("not commenting: " + "; ".join(missing))
    if not _header_safe(env.token):
        return _skipped(f"not commenting: {_UNSAFE_TOKEN}")
    target = _Target(
        env.api_url,
        env.repository,
        env.pr_number,
        timeout,
        env.step_summary is not None,
        doing=f"comment on pull request #{env.pr_number}",
        forbidden="a pull request from a fork gets a read-only token",
        advice="See the fork-safe workflow in the README.",
        missing="the repository or pull request does not exist, or the token cannot see it",
    )
    done = _with_retries(
        env.token,
        target,
        lambda client: _upsert_once(client, target, marker, posted),
        retries=retries,
        backoff=backoff,
        doing="not commenting",
    )
    return _skipped(done) if isinstance(done, str) else done


_Done = TypeVar("_Done")


def _with_retries(
    token: str,
    target: _Target,
    once: Callable[[httpx.Client], _Done],
    *,
    retries: int,
    backoff: float,
    doing: str,
) -> _Done | str:
    """What `once` returned, or the warning (token scrubbed) when it failed for good.

    `once` is tried again, from the start, after a transient failure."""
    import httpx

    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": API_VERSION,
        "User-Agent": f"retrieval-gate/{__version__}",
    }
    attempts = max(retries, 0) + 1
    problem = ""
    try:
        with httpx.Client(headers=headers, timeout=target.timeout, follow_redirects=True) as client:
            for attempt in range(attempts):
                if attempt and backoff > 0:
                    time.sleep(backoff * 2 ** (attempt - 1))
                # Each attempt starts over from the listing: a POST whose answer was lost may
                # have created the comment (or pull request), and the next attempt then finds
                # and updates it.
                try:
                    return once(client)
                except _TransientError as error:
                    problem = str(error)
    except _GiveUpError as error:
        return _scrub(str(error), token)
    except httpx.InvalidURL as error:
        return _scrub(f"{doing}: invalid GitHub API URL: {error}", token)
    tries = "once" if attempts == 1 else f"on {attempts} attempts"
    warning = f"{_cannot(target)}: {problem} {tries}{_summary_note(target)}."
    return _scrub(warning, token)


def _skipped(warning: str) -> CommentOutcome:
    return CommentOutcome(action="skipped", url=None, warning=" ".join(warning.split()))


def _scrub(text: str, token: str) -> str:
    return text.replace(token, "***")


def _cannot(target: _Target) -> str:
    return f"cannot {target.doing} in {target.repository}"


def _summary_note(target: _Target) -> str:
    return "; the step summary still has the report" if target.summary else ""


def _upsert_once(client: httpx.Client, target: _Target, marker: str, posted: str) -> CommentOutcome:
    existing = _find_comment(client, target, marker)
    issue = f"{target.api_url}/repos/{target.repository}/issues"
    if existing is None:
        response = _send(
            client, target, "POST", f"{issue}/{target.number}/comments", {"body": posted}
        )
        return CommentOutcome("created", _html_url(_json_or_none(response)), None)
    if existing.get("body") == posted:
        return CommentOutcome("updated", _html_url(existing), None)
    response = _send(
        client, target, "PATCH", f"{issue}/comments/{existing['id']}", {"body": posted}
    )
    return CommentOutcome("updated", _html_url(_json_or_none(response)), None)


def _find_comment(client: httpx.Client, target: _Target, marker: str) -> dict[str, Any] | None:
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
        response = _send(client, target, "GET", url)
        page = _json_or_none(response)
        if not isinstance(page, list):
            raise _GiveUpError(f"{_cannot(target)}: GitHub's comment list is not a JSON list")
        for comment in page:
            if isinstance(comment, dict) and _is_marked(comment.get("body"), marker):
                if not isinstance(comment.get("id"), int):
                    raise _GiveUpError(f"{_cannot(target)}: GitHub's comment has no numeric id")
                return comment
        url = response.links.get("next", {}).get("url")
        if url is None or url in seen:
            return None
        following = httpx.URL(url)
        # The token goes with every request: never follow a link to another server.
        if (following.scheme, following.host, following.port) != (api.scheme, api.host, api.port):
            raise _GiveUpError(
                f"{_cannot(target)}: GitHub's next-page link leads to another host "
                f"({following.host}); not following it"
            )
    return None


def _is_marked(body: object, marker: str) -> bool:
    if not isinstance(body, str) or not body.startswith(marker):
        return False
    rest = body[len(marker) :]
    # Comments edited in GitHub's web editor come back with CRLF line ends.
    return rest == "" or rest.startswith(("\n", "\r\n"))


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
        text = _scrub(text, token)
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
        missing.append(_NO_TOKEN)
    if env.repository is None or env.token is None:
        return _pull_skipped("not opening the ratchet pull request: " + "; ".join(missing))
    if not _header_safe(env.token):
        return _pull_skipped(f"not opening the ratchet pull request: {_UNSAFE_TOKEN}")
    target = _Target(
        env.api_url,
        env.repository,
        0,
        timeout,
        summary=False,
        doing=f"open the ratchet pull request from {head}",
        forbidden="the job needs `pull-requests: write`, and the repository must allow GitHub "
        "Actions to create pull requests",
        advice="See the ratchet paragraph in the README.",
        missing="the repository or a branch does not exist, or the token cannot see it",
    )
    done = _with_retries(
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
    client: httpx.Client, target: _Target, head: str, base: str, title: str, body: str
) -> PullRequestOutcome:
    import httpx

    pulls = f"{target.api_url}/repos/{target.repository}/pulls"
    owner = target.repository.split("/")[0]
    # GitHub filters by "owner:branch"; at most one pull request is open from a branch to
    # one base, and the ratchet's branch is its own, so the first page holds it.
    query = {"head": f"{owner}:{head}", "state": "open", "per_page": str(PER_PAGE)}
    response = _send(client, target, "GET", str(httpx.URL(pulls, params=query)))
    page = _json_or_none(response)
    if not isinstance(page, list):
        raise _GiveUpError(f"{_cannot(target)}: GitHub's pull request list is not a JSON list")
    existing = next((pull for pull in page if _is_from(pull, head)), None)
    if existing is None:
        payload = {"title": title, "head": head, "base": base, "body": body}
        created = _json_or_none(_send(client, target, "POST", pulls, payload))
        return PullRequestOutcome("created", _html_url(created), _pull_number(created), None)
    number = existing["number"]
    if existing.get("title") == title and existing.get("body") == body:
        return PullRequestOutcome("updated", _html_url(existing), number, None)
    payload = {"title": title, "body": body}
    updated = _json_or_none(_send(client, target, "PATCH", f"{pulls}/{number}", payload))
    return PullRequestOutcome("updated", _html_url(updated), number, None)


def _is_from(pull: object, head: str) -> bool:
    """Whether `pull` is a listed pull request, with a number, from branch `head`."""
    if not isinstance(pull, dict) or _pull_number(pull) is None:
        return False
    source = pull.get("head")
    return isinstance(source, dict) and source.get("ref") == head


def _pull_number(pull: object) -> int | None:
    return _number(pull) if isinstance(pull, dict) else None


def _send(
    client: httpx.Client,
    target: _Target,
    method: str,
    url: str,
    payload: dict[str, str] | None = None,
) -> httpx.Response:
    import httpx

    try:
        response = client.request(method, url, json=payload)
    except httpx.TimeoutException:
        raise _TransientError(f"GitHub did not answer within {target.timeout:g}s") from None
    except httpx.TransportError as error:
        raise _TransientError(f"cannot reach {target.api_url} ({type(error).__name__})") from None
    status = response.status_code
    if 200 <= status < 300:
        return response
    if status >= 500:
        raise _TransientError(f"GitHub answered HTTP {status}")
    raise _GiveUpError(_describe(response, target))


def _describe(response: httpx.Response, target: _Target) -> str:
    """The one-line warning for a 4xx (or unexpected) answer."""
    status = response.status_code
    message = _message(response)
    said = f"HTTP {status}: {message}" if message else f"HTTP {status}"
    headers = response.headers
    limited = headers.get("x-ratelimit-remaining") == "0" or "retry-after" in headers
    if status == 429 or (status == 403 and (limited or "rate limit" in message.lower())):
        when = []
        reset = headers.get("x-ratelimit-reset", "")
        if reset.isdigit():
            moment = datetime.fromtimestamp(int(reset), tz=timezone.utc)
            when.append(f"the limit resets at {moment.strftime('%Y-%m-%dT%H:%M:%SZ')}")
        retry_after = " ".join(headers.get("retry-after", "").split())
        if retry_after:
            unit = " seconds" if retry_after.isdigit() else ""
            when.append(f"retry after {retry_after}{unit}")
        timing = f"; {' and '.join(when)}" if when else ""
        return (
            f"{_cannot(target)}: GitHub's API rate limit is exhausted ({said}){timing}"
            f"{_summary_note(target)}."
        )
    if status == 401:
        return (
            f"{_cannot(target)}: GitHub rejected the token ({said}); check GITHUB_TOKEN"
            f"{_summary_note(target)}."
        )
    if status == 403:
        return (
            f"{_cannot(target)}: the token may not write to it ({said}; {target.forbidden})"
            f"{_summary_note(target)}. {target.advice}"
        )
    if status == 404:
        return f"{_cannot(target)}: not found ({said}): {target.missing}."
    return f"{_cannot(target)}: GitHub answered {said}."


def _message(response: httpx.Response) -> str:
    data = _json_or_none(response)
    message = data.get("message") if isinstance(data, dict) else None
    if not isinstance(message, str):
        return ""
    return excerpt(message, MESSAGE_LIMIT)


def _json_or_none(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _html_url(comment: object) -> str | None:
    url = comment.get("html_url") if isinstance(comment, dict) else None
    return url if isinstance(url, str) else None


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m retrieval_gate.integrations.github ratchet-pr`, the Action's ratchet step:
    open or update the ratchet's pull request, print what happened (fenced) or a ::warning,
    and write `ratchet-pr=URL` to $GITHUB_OUTPUT. Exit 0, or 2 when the output file cannot be
    read."""
    parser = argparse.ArgumentParser(prog="python -m retrieval_gate.integrations.github")
    commands = parser.add_subparsers(dest="command", required=True)
    ratchet = commands.add_parser(
        "ratchet-pr",
        help="open or update the pull request from the ratchet's branch",
        description="The repository, API and token come from GITHUB_REPOSITORY, GITHUB_API_URL "
        "and GITHUB_TOKEN. A refusal (no permission, a rate limit) is a ::warning, exit 0.",
    )
    ratchet.add_argument("--head", required=True, help="the ratchet's branch")
    ratchet.add_argument("--base", required=True, help="the default branch")
    ratchet.add_argument("--output", required=True, help="a file: the baseline command's output")
    args = parser.parse_args(argv)
    try:
        env = read_environment(os.environ)
        output = Path(args.output).read_text(encoding="utf-8", errors="replace")
    except (InputError, OSError) as error:
        sys.stdout.write(fenced(f"retrieval-gate: error: {error}"))
        return 2
    body = ratchet_body(output, token=env.token)
    outcome = upsert_pull_request(env, head=args.head, base=args.base, title=PULL_TITLE, body=body)
    if outcome.warning:
        print(workflow_command("warning", outcome.warning, title="retrieval-gate ratchet"))
        return 0
    url = outcome.url or ""
    sys.stdout.write(fenced(f"retrieval-gate: {outcome.action} the ratchet pull request {url}"))
    target = os.environ.get("GITHUB_OUTPUT")
    # The URL is GitHub's answer: one line of printable text, or it could forge other outputs.
    if target and re.fullmatch(r"https?://[!-~]+", url):
        with open(target, "a", encoding="utf-8") as outputs:
            outputs.write(f"ratchet-pr={url}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
