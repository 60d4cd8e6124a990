"""What search engines put around their hits: errors inside an answer, absent hit lists, ids."""

from __future__ import annotations

import json
import re
from typing import Any

from retrieval_gate.adapters.paths import PathError, Step, select
from retrieval_gate.core.json_parse import parsed_json
from retrieval_gate.core.wording import excerpt
from retrieval_gate.errors import GateError

RESULTS_OPTIONAL = (
    "The answer may leave out the last key of `results` when nothing matched (Vespa omits "
    "root.children): read as no hits; a path wrong higher up still fails."
)
ERRORS = (
    "Path to errors an engine reports inside its answer, e.g. root.errors (Vespa), "
    "_shards.failures (Elasticsearch): when present and not empty the query fails with them "
    "(retried), and an HTTP error shows them in place of the body."
)
ID_PATTERN = (
    "A regular expression the whole id must match, whose one group is the doc id, e.g. "
    "'^id:[^:]*:[^:]*:[^:]*:(.+)$' for Vespa's id:namespace:type::ID."
)


def reported_errors(data: Any, steps: tuple[Step, ...]) -> str | None:
    """An excerpt of what the error path holds (Vespa's root.errors, Elasticsearch's
    _shards.failures), or None when it is absent or empty: engines add it only on trouble."""
    try:
        found = [value for value in select(data, steps) if value not in (None, [], {}, "", 0)]
    except PathError:
        return None
    if not found:
        return None
    return excerpt(json.dumps(found[0] if len(found) == 1 else found, ensure_ascii=False))


def error_text(body: str, steps: tuple[Step, ...] | None) -> str:
    """What an HTTP error's JSON body holds at the error path, else an excerpt of the body."""
    try:
        reported = None if steps is None else reported_errors(parsed_json(body), steps)
    except ValueError:
        reported = None
    return reported or excerpt(body)


def absent_hits(data: Any, steps: tuple[Step, ...]) -> bool:
    """Whether the path fails only because its last key is missing from objects that are
    there (Vespa leaves out root.children when nothing matched); a path that is wrong
    higher up still fails."""
    keys = [position for position, step in enumerate(steps) if isinstance(step, str)]
    if not keys or any(step is not None for step in steps[keys[-1] + 1 :]):
        return False
    last = keys[-1]
    try:
        holders = select(data, steps[:last])
    except PathError:
        return False
    return bool(holders) and all(
        isinstance(holder, dict) and steps[last] not in holder for holder in holders
    )


def id_pattern(pattern: str | None) -> re.Pattern[str] | None:
    """The compiled `retriever.id_pattern`; GateError unless it has exactly one group."""
    if pattern is None:
        return None
    try:
        compiled = re.compile(pattern)
    except re.error as error:
        raise GateError(
            f"retriever.id_pattern {pattern!r} is not a regular expression: {error}"
        ) from None
    if compiled.groups != 1:
        raise GateError(
            f"retriever.id_pattern {pattern!r} needs exactly one (group): the doc id, e.g. "
            "'^id:[^:]*:[^:]*:[^:]*:(.+)$' for Vespa's id:namespace:type::ID"
        )
    return compiled


def id_within(value: Any, pattern: re.Pattern[str]) -> str:
    """The part of an engine's document id `pattern`'s group takes; ValueError when the
    whole id does not match."""
    match = pattern.fullmatch(str(value))
    if match is None or not match[1]:
        raise ValueError(f"id {str(value)!r} that retriever.id_pattern does not match")
    return match[1]
