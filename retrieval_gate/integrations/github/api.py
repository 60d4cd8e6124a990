"""GitHub's REST API: one authenticated client per task, its retries, and one-line warnings
(token scrubbed) for answers that end it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, TypeVar

from retrieval_gate.core.version import __version__
from retrieval_gate.core.wording import excerpt
from retrieval_gate.execution.retry import RetryPolicy

if TYPE_CHECKING:
    import httpx

API_VERSION = "2022-11-28"
PER_PAGE = 100  # GitHub's largest page: fewest requests on a busy pull request
MESSAGE_LIMIT = 200
"""Characters of GitHub's error message kept in a one-line warning."""

NO_TOKEN = (
    "no token: set GITHUB_TOKEN (e.g. `env: GITHUB_TOKEN: ${{ github.token }}` with "
    "`permissions: pull-requests: write`)"
)
UNSAFE_TOKEN = "GITHUB_TOKEN holds characters no HTTP header can carry"


@dataclass(frozen=True)
class Target:
    """What one task asks of the API, and the words its warnings use."""

    api_url: str
    repository: str
    number: int
    timeout: float
    summary: bool  # whether a step summary exists to point readers at
    doing: str  # what a warning says cannot be done: "comment on pull request #7"
    forbidden: str  # why a 403 may happen
    advice: str  # what to do about a 403
    missing: str  # what a 404 may mean


class GiveUpError(Exception):
    """A request that failed for good; the message is the one-line warning."""


class TransientError(Exception):
    """A 5xx, timeout or connection error: worth another attempt."""


def header_safe(token: str) -> bool:
    """Whether `token` can go into an Authorization header as it is."""
    return token.isascii() and token.isprintable() and " " not in token


_Done = TypeVar("_Done")


def with_retries(
    token: str,
    target: Target,
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
    policy = RetryPolicy(retries, backoff)
    try:
        with httpx.Client(headers=headers, timeout=target.timeout, follow_redirects=True) as client:
            # Each attempt starts over from the listing: a POST whose answer was lost may have
            # created the comment (or pull request), and the next attempt then finds and
            # updates it.
            return policy.call(lambda: once(client), TransientError)
    except TransientError as error:
        problem = str(error)
    except GiveUpError as error:
        return scrub(str(error), token)
    except httpx.InvalidURL as error:
        return scrub(f"{doing}: invalid GitHub API URL: {error}", token)
    tries = "once" if policy.attempts == 1 else f"on {policy.attempts} attempts"
    warning = f"{cannot(target)}: {problem} {tries}{summary_note(target)}."
    return scrub(warning, token)


def scrub(text: str, token: str) -> str:
    """`text` with every copy of `token` shown as ***."""
    return text.replace(token, "***")


def cannot(target: Target) -> str:
    """The start of a warning: what cannot be done, and where."""
    return f"cannot {target.doing} in {target.repository}"


def summary_note(target: Target) -> str:
    """A warning's pointer to the step summary, when there is one."""
    return "; the step summary still has the report" if target.summary else ""


def send(
    client: httpx.Client,
    target: Target,
    method: str,
    url: str,
    payload: dict[str, str] | None = None,
) -> httpx.Response:
    """GitHub's 2xx answer to one request; a TransientError or GiveUpError otherwise."""
    import httpx

    try:
        response = client.request(method, url, json=payload)
    except httpx.TimeoutException:
        raise TransientError(f"GitHub did not answer within {target.timeout:g}s") from None
    except httpx.TransportError as error:
        raise TransientError(f"cannot reach {target.api_url} ({type(error).__name__})") from None
    status = response.status_code
    if 200 <= status < 300:
        return response
    if status >= 500:
        raise TransientError(f"GitHub answered HTTP {status}")
    raise GiveUpError(_describe(response, target))


def _describe(response: httpx.Response, target: Target) -> str:
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
            f"{cannot(target)}: GitHub's API rate limit is exhausted ({said}){timing}"
            f"{summary_note(target)}."
        )
    if status == 401:
        return (
            f"{cannot(target)}: GitHub rejected the token ({said}); check GITHUB_TOKEN"
            f"{summary_note(target)}."
        )
    if status == 403:
        return (
            f"{cannot(target)}: the token may not write to it ({said}; {target.forbidden})"
            f"{summary_note(target)}. {target.advice}"
        )
    if status == 404:
        return f"{cannot(target)}: not found ({said}): {target.missing}."
    return f"{cannot(target)}: GitHub answered {said}."


def _message(response: httpx.Response) -> str:
    data = json_or_none(response)
    message = data.get("message") if isinstance(data, dict) else None
    if not isinstance(message, str):
        return ""
    return excerpt(message, MESSAGE_LIMIT)


def json_or_none(response: httpx.Response) -> Any:
    """The answer's JSON, or None when it is not JSON."""
    try:
        return response.json()
    except ValueError:
        return None


def html_url(item: object) -> str | None:
    """The `html_url` of a comment or pull request object, or None."""
    url = item.get("html_url") if isinstance(item, dict) else None
    return url if isinstance(url, str) else None
