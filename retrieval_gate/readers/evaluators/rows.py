"""One evaluator export: its rows (query id or text, named scores) and the checks they share."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from retrieval_gate.core.json_parse import parsed_json
from retrieval_gate.core.reported import MAX_MEASURE
from retrieval_gate.errors import InputError
from retrieval_gate.readers.text import id_value, open_text, quoted

MAX_EXPORT_BYTES = 256 * 1024 * 1024
"""Largest export read: a per-query score file of a labelled set is megabytes, not gigabytes."""
MAX_FIELD_CHARS = 16 * 1024 * 1024
"""Largest CSV field (a Ragas row's retrieved contexts are long, not this long)."""


@dataclass(frozen=True)
class EvaluatorRow:
    """One scored query of an export: where it is, how it names its query, its scores."""

    where: str
    """`line 3`, `row 3` or `results.results[2]`: what an error about the row names."""
    line: int | None
    query_id: str | None
    text: str | None
    scores: Mapping[str, float]
    """Requested score (as configured) -> value, for the requested scores the row has."""


@dataclass(frozen=True)
class EvaluatorExport:
    """Every row of one export, and the requested scores it holds no column or entry for."""

    source: str
    rows: tuple[EvaluatorRow, ...]
    names: tuple[str, ...] = field(default=())
    """Every score name the export holds (for an error naming a missing one)."""


def score_key(name: str) -> str:
    """`name` as scores are matched: case, and runs of spaces, '-' and '_', ignored
    (DeepEval's "Answer Relevancy" is answer_relevancy)."""
    return re.sub(r"[\s_-]+", "_", name.strip().lower())


def wanted_names(names: Iterable[str], wanted: Sequence[str], source: str) -> dict[str, str]:
    """The export's score name -> the configured score it is, for each of `wanted` it has;
    two names that both read as one configured score are an error."""
    keys = {score_key(w): w for w in wanted}
    found: dict[str, str] = {}
    taken: dict[str, str] = {}
    for name in names:
        configured = keys.get(score_key(name))
        if configured is None:
            continue
        if configured in taken and taken[configured] != name:
            raise InputError(
                f"scores {quoted(taken[configured])} and {quoted(name)} both read as "
                f"{configured}; rename one",
                source=source,
            )
        taken[configured] = name
        found[name] = configured
    return found


def score_value(value: Any, name: str, source: str, where: str, line: int | None) -> float:
    """`value` as a finite float; an error naming the row and the score otherwise."""
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    shown = quoted(value) if isinstance(value, str) else quoted(repr(value))
    if number is None or not math.isfinite(number):
        what = "is NaN" if number is not None and math.isnan(number) else "is not a finite number"
        raise InputError(
            f"{where}: score {name} {shown} {what}; a missing score is no score: leave the "
            "row's score out, or re-run the evaluator on it",
            source=source,
            line=line,
        )
    if abs(number) > MAX_MEASURE:
        raise InputError(
            f"{where}: score {name} {shown} is past {MAX_MEASURE:g} either way, which no "
            "evaluator's score is (a unit mistake, or a broken export): fix the export, or "
            "leave the row's score out",
            source=source,
            line=line,
        )
    return number


def query_text(value: Any, source: str, where: str, line: int | None, field_name: str) -> str:
    """A query's text, whitespace collapsed; an error when it is not a string."""
    if not isinstance(value, str):
        raise InputError(
            f"{where}: {field_name} must be the query's text (a string), not "
            f"{type(value).__name__}",
            source=source,
            line=line,
        )
    return " ".join(value.split())


def query_id(value: Any, source: str, where: str, line: int | None, field_name: str) -> str:
    """A query id: a non-empty string or an integer's text."""
    return id_value(value, source, line, f"{where}: {field_name}")


def read_json_document(path: Path) -> Any:
    """The one JSON document in `path`, refused unread past MAX_EXPORT_BYTES; an error for
    invalid JSON, nesting too deep for the parser, or an empty file."""
    source = str(path)
    check_size(path)
    with open_text(path) as handle:
        try:
            text = handle.read(MAX_EXPORT_BYTES + 1)
        except UnicodeDecodeError:
            raise InputError("is not UTF-8 text", source=source) from None
    too_big(len(text), source)
    if not text.strip():
        raise InputError("is empty; export the evaluator's results again", source=source)
    try:
        return parsed_json(text)
    except json.JSONDecodeError as error:
        raise InputError(
            f"invalid JSON: {error.msg} (column {error.colno})", source=source, line=error.lineno
        ) from None
    except RecursionError:
        raise InputError("is nested too deeply to be an evaluator export", source=source) from None


def check_size(path: Path) -> None:
    """An error when the file at `path` is past MAX_EXPORT_BYTES (or cannot be found)."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise InputError("file not found; check the evaluator's path", source=str(path)) from None
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror}", source=str(path)) from None
    too_big(size, str(path))


def too_big(size: int, source: str) -> None:
    """An error when `size` characters is past MAX_EXPORT_BYTES."""
    if size > MAX_EXPORT_BYTES:
        raise InputError(
            f"is over {MAX_EXPORT_BYTES // 1024 // 1024} MiB: not a per-query score export; "
            "export the scores alone (one row per query)",
            source=source,
        )


def mapping_at(
    value: Any, source: str, where: str, what: str, line: int | None = None
) -> Mapping[str, Any]:
    """`value` when it is a JSON object; an error naming `where` and what was expected."""
    if not isinstance(value, dict):
        raise InputError(
            f"{where}: expected {what} (a JSON object), got {type(value).__name__}",
            source=source,
            line=line,
        )
    return value


def list_at(value: Any, source: str, where: str, what: str) -> list[Any]:
    """`value` when it is a JSON array; an error naming `where` and what was expected."""
    if not isinstance(value, list):
        raise InputError(
            f"{where}: expected {what} (a JSON array), got {type(value).__name__}",
            source=source,
        )
    return value
