"""The GitHub Actions environment: API URL, repository, token, step summary and the event's
pull request."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from retrieval_gate.core.json_parse import parsed_json
from retrieval_gate.errors import InputError

DEFAULT_API_URL = "https://api.github.com"
REPOSITORY = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class GitHubEnvironment:
    """Where and as whom to report: read from the Actions environment or given explicitly."""

    api_url: str
    repository: str | None
    pr_number: int | None
    step_summary: Path | None
    token: str | None = field(default=None, repr=False)


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
        event = parsed_json(text)
    except (ValueError, RecursionError) as error:
        raise InputError(f"the GitHub event file is not JSON: {error}", source=str(path)) from None
    if not isinstance(event, dict):
        raise InputError("the GitHub event file is not a JSON object", source=str(path))
    pull_request = event.get("pull_request")
    if isinstance(pull_request, dict) and (number := number_of(pull_request)) is not None:
        return number
    # issue_comment events carry the pull request as an issue with a `pull_request` link.
    issue = event.get("issue")
    if isinstance(issue, dict) and isinstance(issue.get("pull_request"), dict):
        number = number_of(issue)
        if number is not None:
            return number
    # GitHub leaves workflow_run.pull_requests empty for pull requests from forks.
    run = event.get("workflow_run")
    if isinstance(run, dict):
        pulls = run.get("pull_requests")
        if isinstance(pulls, list) and pulls and isinstance(pulls[0], dict):
            return number_of(pulls[0])
    return None


def number_of(item: dict[str, Any]) -> int | None:
    """The positive integer `number` of an issue or pull request object, or None."""
    value = item.get("number")
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None
