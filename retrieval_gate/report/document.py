"""The JSON result as a validated model: reports render only what passed validation."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from retrieval_gate.errors import InputError

Verdict = Literal["pass", "regressed", "noise", "improved", "below_floor"]


class _Model(BaseModel):
    # Results written by newer versions may carry more fields; rendering needs only these.
    model_config = ConfigDict(extra="ignore", frozen=True)


class ComparisonRecord(_Model):
    """One metric on one slice (compare.Comparison as JSON)."""

    metric: str
    slice: str
    n: int
    baseline_mean: float
    current_mean: float
    delta: float
    ci_low: float
    ci_high: float
    wins: int
    ties: int
    losses: int
    p_value: float | None
    p_adjusted: float | None
    max_drop: float | None
    floor: float | None
    mde: float | None
    queries_needed: int | None
    gated: bool
    reason: str
    verdict: Verdict
    failed: bool


class DocMoveRecord(_Model):
    """A relevant document's rank in the baseline's and the current top k."""

    doc_id: str
    grade: float
    before: int | None
    after: int | None


class QueryChangeRecord(_Model):
    """One of the most-regressed queries."""

    query_id: str
    text: str
    metric: str
    before: float
    after: float
    delta: float
    moves: list[DocMoveRecord]


class UnjudgedRecord(_Model):
    """Unjudged documents in the current top k."""

    retrieved: int
    unjudged: int
    new: int
    queries: list[str]
    baseline_unjudged: int


class ConfigRecord(_Model):
    """The config the result was decided under."""

    file: str
    sha256: str
    k: int
    gate: dict[str, Any]


class BaselineRecord(_Model):
    """The baseline's provenance and its per-query scores aligned with the current ids."""

    created_at: str
    git_commit: str | None
    git_dirty: bool | None
    tool_version: str
    fingerprints: dict[str, Any]
    scores: dict[str, list[float]] = Field(default_factory=dict)


class CurrentRecord(_Model):
    """The current run's record (baseline form)."""

    git_commit: str | None
    git_dirty: bool | None
    fingerprints: dict[str, Any]
    query_ids: list[str]
    scores: dict[str, list[float]]


class ResultRecord(_Model):
    """A whole result: a decided gate, or `status: error` with the reason it could not run."""

    schema_version: Literal[1]
    tool_version: str
    name: str
    status: Literal["pass", "fail", "error"]
    error: str | None = None
    failures: list[ComparisonRecord] = Field(default_factory=list)
    comparisons: list[ComparisonRecord] = Field(default_factory=list)
    query_changes: list[QueryChangeRecord] = Field(default_factory=list)
    hits_lost: list[str] = Field(default_factory=list)
    hits_gained: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    failed_queries: list[str] = Field(default_factory=list)
    unjudged: UnjudgedRecord | None = None
    config: ConfigRecord | None = None
    baseline: BaselineRecord | None = None
    current: CurrentRecord | None = None


def validate_result(document: Mapping[str, Any], source: str = "result") -> ResultRecord:
    """`document` checked field by field; an InputError names the first bad fields."""
    try:
        return ResultRecord.model_validate(document)
    except ValidationError as error:
        problems = [
            f"{'.'.join(str(part) for part in item['loc']) or '(top level)'}: {item['msg']}"
            for item in error.errors()[:5]
        ]
        raise InputError(
            "not a retrieval-gate result:\n  - "
            + "\n  - ".join(problems)
            + "\nwrite one with `retrieval-gate check --json FILE`",
            source=source,
        ) from None


def read_result(path: Path) -> ResultRecord:
    """The result JSON at `path`, validated."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(
            "no such result file; `retrieval-gate check --json FILE` writes it", source=str(path)
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read it: {error}", source=str(path)) from None
    except json.JSONDecodeError as error:
        raise InputError(
            f"not JSON ({error.msg} at column {error.colno})", source=str(path), line=error.lineno
        ) from None
    if not isinstance(data, dict):
        raise InputError("not a retrieval-gate result: expected a JSON object", source=str(path))
    return validate_result(data, str(path))
