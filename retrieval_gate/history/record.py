"""One history record: a result of the main branch, compact, as one JSON line."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeGuard

from retrieval_gate.core.input_files import regular_file
from retrieval_gate.core.json_parse import parsed_json
from retrieval_gate.core.names import valid_name
from retrieval_gate.core.redaction import scrubbed
from retrieval_gate.errors import InputError
from retrieval_gate.gate.baseline.document import baseline_document, record_of
from retrieval_gate.gate.baseline.record import Baseline
from retrieval_gate.gate.checks.undefined import defined_mean

HISTORY_SCHEMA_VERSION = 1
"""Version of a history line; a reader refuses a newer one rather than misread it."""
MAX_TEXT = 2000
"""Longest free text kept in a record (a reason, a commit subject): a line stays a line."""

Kind = Literal["result", "accept"]
_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
# GitHub's merge commit subject, and the "(#N)" a squash merge appends to the PR title.
_MERGE = re.compile(r"^Merge pull request #([0-9]{1,9})\b")
_SQUASH = re.compile(r"\(#([0-9]{1,9})\)\s*$")


@dataclass(frozen=True, kw_only=True)
class TrendPoint:
    """One point of a metric's trend on the main branch: the commit, the pull request that
    merged it (None when not known), the commit's time (ISO 8601 UTC) and the metric's mean."""

    commit: str
    pr: int | None
    time: str
    value: float


@dataclass(frozen=True, eq=False, kw_only=True)
class ResultEntry:
    """A `check` result of one commit of the main branch, as the history keeps it."""

    config: str
    commit: str
    time: str
    """The commit's committer time, ISO 8601 UTC (`...Z`): the same on every re-run."""
    ref: str
    pr: int | None
    subject: str
    status: str
    tool_version: str
    fingerprints: Mapping[str, str | None]
    """labelled_set (queries and judgments), queries (without judgments), config (sha256)."""
    means: Mapping[str, float]
    """Metric -> mean over every labelled query."""
    slices: Mapping[str, Mapping[str, float]]
    """Slice -> metric -> mean, the slices the result compared."""
    record: Baseline
    """Per-query scores and top k ids, in baseline form: what drift re-decides with."""
    line: int = 0
    """The line of the history file it was read from (0: not read from one)."""

    kind: Kind = "result"

    @property
    def key(self) -> tuple[str, str, str]:
        """What makes a record unique in the history: appended once, never twice."""
        return (self.kind, self.config, self.commit)

    @property
    def label(self) -> str:
        """`#41 (abc1234)`, or the short sha alone when no pull request is known."""
        return f"#{self.pr} ({self.commit[:7]})" if self.pr is not None else self.commit[:7]


@dataclass(frozen=True, kw_only=True)
class AcceptEntry:
    """An acknowledged drop: the drift's reference moves to the result of `commit`."""

    config: str
    commit: str
    time: str
    reason: str
    line: int = 0
    kind: Kind = "accept"

    @property
    def key(self) -> tuple[str, str, str]:
        """One acceptance per accepted commit."""
        return (self.kind, self.config, self.commit)


Entry = ResultEntry | AcceptEntry


def pr_number(message: str) -> int | None:
    """The pull request a main-branch commit merged: "Merge pull request #N ..." (a merge
    commit) or a subject ending in "(#N)" (a squash merge); None otherwise."""
    subject = message.strip().split("\n", 1)[0] if message.strip() else ""
    found = _MERGE.match(subject) or _SQUASH.search(subject)
    return int(found.group(1)) if found else None


def read_result(path: Path) -> Any:
    """The parsed JSON of a `check` result file; an InputError says what is wrong with it."""
    try:
        return parsed_json(regular_file(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"no result file at {path}; write one with `check --json`") from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read the result: {error}", source=str(path)) from None
    except (json.JSONDecodeError, RecursionError) as error:
        line = error.lineno if isinstance(error, json.JSONDecodeError) else None
        raise InputError(
            "not valid JSON; write the result again with `check --json`",
            source=str(path),
            line=line,
        ) from None


def result_entry(
    document: Any, source: str, *, commit: str, time: str, ref: str, subject: str
) -> ResultEntry:
    """The history record of a parsed `check` JSON result made at `commit`.

    Raises InputError (naming `source` and the field) for anything but a decided result of
    this tool's result schema.
    """
    from retrieval_gate.gate.result import RESULT_SCHEMA_VERSION

    if not isinstance(document, dict):
        raise InputError("not a `check` JSON result: expected a JSON object", source=source)
    version = document.get("schema_version")
    if version != RESULT_SCHEMA_VERSION:
        raise InputError(
            f"schema_version: {_shown(version)}, this retrieval-gate reads results of schema "
            f"{RESULT_SCHEMA_VERSION}; run `check` with this version",
            source=source,
        )
    status = document.get("status")
    if status not in ("pass", "fail"):
        raise InputError(
            f"status: {_shown(status)}; only a decided result (pass or fail) has scores to keep",
            source=source,
        )
    name = document.get("name")
    if not isinstance(name, str) or not valid_name(name):
        raise InputError(f"name: {_shown(name)} is not a gate name", source=source)
    record = record_of(document, source)  # validates `current` as a baseline would be
    config = document.get("config")
    config_sha = config.get("sha256") if isinstance(config, dict) else None
    if not isinstance(config_sha, str):
        raise InputError("config.sha256: missing; not a `check` JSON result", source=source)
    means, slices = _means(document.get("comparisons"), record, source)
    return ResultEntry(
        config=name,
        commit=commit,
        time=time,
        ref=_text(ref),
        pr=pr_number(subject),
        subject=_text(subject.strip().split("\n", 1)[0] if subject.strip() else ""),
        status=status,
        tool_version=str(document.get("tool_version", "")),
        fingerprints={
            "labelled_set": record.fingerprints.dataset,
            "queries": record.fingerprints.queries,
            "config": config_sha,
        },
        means=means,
        slices=slices,
        record=record,
    )


def _means(
    comparisons: Any, record: Baseline, source: str
) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Overall means from the record itself; slice means from the result's comparisons."""
    from retrieval_gate.gate.checks.slicing import ALL

    # A metric undefined for some queries (auc) is averaged over the others, as evaluate does.
    means = {metric: defined_mean(values) for metric, values in record.scores.items()}
    slices: dict[str, dict[str, float]] = {}
    if not isinstance(comparisons, list):
        raise InputError("comparisons: missing; not a `check` JSON result", source=source)
    for i, item in enumerate(comparisons):
        if not isinstance(item, dict):
            raise InputError(f"comparisons[{i}]: not an object", source=source)
        metric, name, mean = item.get("metric"), item.get("slice"), item.get("current_mean")
        if not (isinstance(metric, str) and isinstance(name, str) and _finite(mean)):
            raise InputError(
                f"comparisons[{i}]: needs metric, slice and a finite current_mean", source=source
            )
        if name != ALL:
            slices.setdefault(name, {})[metric] = float(mean)
    return means, {name: slices[name] for name in sorted(slices)}


def accept_entry(config: str, commit: str, time: str, reason: str) -> AcceptEntry:
    """An acceptance of the result of `commit`, with the reason given."""
    return AcceptEntry(config=config, commit=commit, time=time, reason=_text(reason))


def entry_summary(entry: Entry) -> dict[str, Any]:
    """`entry`'s fields as JSON values, without its per-query record: what `history export`
    prints, and the head of a history line."""
    summary: dict[str, Any] = {
        "kind": entry.kind,
        "config": entry.config,
        "commit": entry.commit,
        "time": entry.time,
    }
    if isinstance(entry, AcceptEntry):
        return summary | {"reason": entry.reason}
    return summary | {
        "ref": entry.ref,
        "pr": entry.pr,
        "subject": entry.subject,
        "status": entry.status,
        "tool_version": entry.tool_version,
        "fingerprints": dict(entry.fingerprints),
        "means": dict(entry.means),
        "slices": {name: dict(means) for name, means in entry.slices.items()},
    }


def entry_line(entry: Entry) -> str:
    """`entry` as one line of JSON: compact, ASCII only (no control character, no line
    separator can reach a reader raw), registered secrets redacted. No trailing newline."""
    document = {"history_schema": HISTORY_SCHEMA_VERSION, **entry_summary(entry)}
    if isinstance(entry, ResultEntry):
        document["record"] = baseline_document(entry.record, clock=False)
    return json.dumps(scrubbed(document), separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def parse_entry(text: str, source: str, line: int) -> Entry:
    """One history line; an InputError names `source`, the line and the field at fault."""
    try:
        data = parsed_json(text)
    except (json.JSONDecodeError, RecursionError) as error:
        what = error.msg if isinstance(error, json.JSONDecodeError) else "nested too deeply"
        raise InputError(
            f"not valid JSON ({what}); the history file was edited or cut short: restore the "
            "line from the branch's git history or remove it",
            source=source,
            line=line,
        ) from None
    if not isinstance(data, dict):
        raise InputError("a history line is a JSON object", source=source, line=line)
    version = data.get("history_schema")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise InputError(
            f"history_schema: {_shown(version)} is not a history schema version",
            source=source,
            line=line,
        )
    if version > HISTORY_SCHEMA_VERSION:
        raise InputError(
            f"history_schema {version} was written by a newer retrieval-gate (this one reads "
            f"{HISTORY_SCHEMA_VERSION}); upgrade retrieval-gate to read this history",
            source=source,
            line=line,
        )
    kind = data.get("kind")
    config = _field(data, "config", str, source, line)
    commit = _field(data, "commit", str, source, line)
    time = _field(data, "time", str, source, line)
    if not valid_name(config):
        raise InputError(f"config: {_shown(config)} is not a gate name", source=source, line=line)
    if not _SHA.match(commit):
        raise InputError(f"commit: {_shown(commit)} is not a full commit sha", source=source,
                         line=line)  # fmt: skip
    if kind == "accept":
        reason = _field(data, "reason", str, source, line)
        return AcceptEntry(config=config, commit=commit, time=time, reason=reason, line=line)
    if kind != "result":
        raise InputError(
            f"kind: {_shown(kind)}; a history line is a result or an accept",
            source=source,
            line=line,
        )
    pr = data.get("pr")
    if pr is not None and (not isinstance(pr, int) or isinstance(pr, bool) or pr < 1):
        raise InputError(f"pr: {_shown(pr)} is not a pull request number", source=source,
                         line=line)  # fmt: skip
    fingerprints = _field(data, "fingerprints", dict, source, line)
    if not all(isinstance(v, str | None) for v in fingerprints.values()):
        raise InputError("fingerprints: values are strings", source=source, line=line)
    means = _field(data, "means", dict, source, line)
    if not all(_finite(v) for v in means.values()):
        raise InputError("means: values are finite numbers", source=source, line=line)
    slices = _field(data, "slices", dict, source, line)
    for name, values in slices.items():
        if not isinstance(values, dict) or not all(_finite(v) for v in values.values()):
            raise InputError(
                f"slices.{_shown(name)}: metric -> finite number", source=source, line=line
            )
    try:
        record = record_of({"current": _field(data, "record", dict, source, line)}, source)
    except InputError as error:
        raise InputError(f"record: {error.args[0]}", source=source, line=line) from None
    return ResultEntry(
        config=config,
        commit=commit,
        time=time,
        ref=_field(data, "ref", str, source, line),
        pr=pr,
        subject=_field(data, "subject", str, source, line),
        status=_field(data, "status", str, source, line),
        tool_version=_field(data, "tool_version", str, source, line),
        fingerprints=fingerprints,
        means={str(k): float(v) for k, v in means.items()},
        slices={str(k): {str(m): float(x) for m, x in v.items()} for k, v in slices.items()},
        record=record,
        line=line,
    )


def _field(data: Mapping[str, Any], name: str, kind: type, source: str, line: int) -> Any:
    value = data.get(name)
    if not isinstance(value, kind):
        what = "a string" if kind is str else "an object" if kind is dict else kind.__name__
        missing = "missing" if name not in data else _shown(value)
        raise InputError(f"{name}: {missing}; expected {what}", source=source, line=line)
    return value


def _finite(value: Any) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _text(value: str) -> str:
    """Free text cut to MAX_TEXT characters (a record is data, not a place for essays)."""
    return value if len(value) <= MAX_TEXT else value[:MAX_TEXT] + "..."


def _shown(value: Any) -> str:
    """A value quoted for a message: short, one line, control characters shown as `?`."""
    from retrieval_gate.core.wording import excerpt

    return excerpt(repr(value), 80)
