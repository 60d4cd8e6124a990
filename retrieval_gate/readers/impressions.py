"""Impression logs (JSON Lines of query or user, item, score or rank, clicked): one file that is
both a labelled set (clicked = grade 1) and a run (the score, or minus the rank)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrieval_gate.core.judgments import Judgments
from retrieval_gate.core.model import Query
from retrieval_gate.core.run import Run
from retrieval_gate.core.wording import one_line
from retrieval_gate.errors import InputError
from retrieval_gate.readers.text import json_id, json_lines

QUERY_KEYS = ("query", "user", "query_id", "user_id", "qid")
ITEM_KEYS = ("item", "item_id", "doc_id", "docid", "doc")
SCORE_KEYS = ("score",)
RANK_KEYS = ("rank", "position")
CLICKED_KEYS = ("clicked", "click")
_FIELDS = frozenset((*QUERY_KEYS, *ITEM_KEYS, *SCORE_KEYS, *RANK_KEYS, *CLICKED_KEYS))


@dataclass(frozen=True)
class Impressions:
    """An impression log read once: its queries (text = id, metadata = the rows' other
    fields), the clicks as judgments, and the scores as a run."""

    queries: tuple[Query, ...]
    judgments: Judgments
    run: Run


@dataclass
class _Shown:
    """One (query, item) as the log shows it: its label, score and first line."""

    clicked: bool
    score: float
    line: int


def read_impressions(path: str | Path, *, labelled: bool = True) -> Impressions:
    """The impression log at `path`: one JSON object per line with a query (or user) id, an
    item id, a `score` or a `rank` (1 = top; scored as -rank), and `clicked` (true/false or
    1/0). Every other field is the query's metadata, which must agree across its rows.

    An item shown twice to one query keeps its highest score; the rows must agree on the
    click. Without `labelled` (the log read as a run) `clicked` may be left out, and its
    judgments are then empty. Errors name the file and line."""
    source = str(path)
    shown: dict[tuple[str, str], _Shown] = {}
    metadata: dict[str, dict[str, Any]] = {}
    kind: str | None = None
    for number, row in json_lines(path):
        query = json_id(row, QUERY_KEYS, source, number, "query (or user) id")
        item = json_id(row, ITEM_KEYS, source, number, "item id")
        clicked = _clicked(row, source, number) if labelled else False
        row_kind, score = _score(row, source, number)
        if kind is None:
            kind = row_kind
        elif row_kind != kind:
            raise InputError(
                f"this row gives a {row_kind} but earlier rows give a {kind}; give the same one "
                "on every row",
                source=source,
                line=number,
            )
        _merge_metadata(metadata.setdefault(query, {}), row, query, source, number)
        before = shown.get((query, item))
        if before is None:
            shown[(query, item)] = _Shown(clicked, score, number)
        elif before.clicked != clicked:
            raise InputError(
                f"item {_shown(item)} of query {_shown(query)} is clicked on line "
                f"{before.line if before.clicked else number} and not clicked on line "
                f"{number if before.clicked else before.line}; keep one label per "
                "(query, item)",
                source=source,
                line=number,
            )
        else:
            before.score = max(before.score, score)
    if not shown:
        raise InputError("no impressions: expected one JSON object per line", source=source)
    keys = sorted(shown)
    queries = [q for q, _ in keys]
    items = [i for _, i in keys]
    lines = [shown[key].line for key in keys]
    grades = [float(shown[key].clicked) for key in keys]
    judgments = (
        Judgments.from_rows(queries, items, grades, source=source, lines=lines)
        if labelled
        else Judgments.from_rows([], [], [], source=source)
    )
    return Impressions(
        tuple(Query(q, q, metadata[q]) for q in sorted(metadata)),
        judgments,
        Run.from_rows(
            queries, items, [shown[key].score for key in keys], source=source, lines=lines
        ),
    )


def read_impressions_run(path: str | Path) -> Run:
    """The run of an impression log (`read_impressions`): each item's score, or -rank;
    `clicked` is not needed there (the labels come from the labelled set)."""
    return read_impressions(path, labelled=False).run


def read_impressions_judgments(path: str | Path) -> Judgments:
    """The clicks of an impression log as judgments: clicked = 1, shown and not clicked = 0."""
    return read_impressions(path).judgments


def _clicked(row: dict[str, Any], source: str, line: int) -> bool:
    for key in CLICKED_KEYS:
        if key in row:
            value = row[key]
            if isinstance(value, bool):
                return value
            if type(value) is int and value in (0, 1):
                return bool(value)
            raise InputError(
                f"{key} {_shown(value)} must be true, false, 1 or 0",
                source=source,
                line=line,
            )
    raise InputError(
        f"no click label: expected one of the keys {', '.join(CLICKED_KEYS)} (true or false)",
        source=source,
        line=line,
    )


def _score(row: dict[str, Any], source: str, line: int) -> tuple[str, float]:
    """("score", the score) or ("rank", minus the rank)."""
    score = next((row[k] for k in SCORE_KEYS if k in row), None)
    rank = next((row[k] for k in RANK_KEYS if k in row), None)
    if score is not None and rank is not None:
        raise InputError("give a score or a rank, not both", source=source, line=line)
    if score is not None:
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            raise InputError(f"score {_shown(score)} must be a number", source=source, line=line)
        if not math.isfinite(score):
            raise InputError(f"score {score!r} is not a finite number", source=source, line=line)
        return "score", float(score)
    if rank is not None:
        if type(rank) is not int or rank < 1:
            raise InputError(
                f"rank {_shown(rank)} must be a whole number from 1 (the top)",
                source=source,
                line=line,
            )
        return "rank", -float(rank)
    raise InputError(
        f"no score or rank: expected one of the keys {', '.join(SCORE_KEYS + RANK_KEYS)}",
        source=source,
        line=line,
    )


def _merge_metadata(
    into: dict[str, Any], row: dict[str, Any], query: str, source: str, line: int
) -> None:
    """Add `row`'s other fields to its query's metadata; a field must keep one value."""
    for key, value in row.items():
        if key in _FIELDS:
            continue
        if value is not None and not isinstance(value, (str, int, float, bool)):
            raise InputError(
                f"field {_shown(key)} holds a {type(value).__name__}; the other fields of "
                "an impression are its query's metadata and must be a string, number or boolean",
                source=source,
                line=line,
            )
        if key in into and into[key] != value:
            raise InputError(
                f"field {_shown(key)} of query {_shown(query)} is {_shown(into[key])} on an "
                f"earlier line and {_shown(value)} here; a query's metadata must agree across its "
                "rows",
                source=source,
                line=line,
            )
        into[key] = value


SHOWN = 60
"""Characters of a value an error message shows: an id may be megabytes long."""


def _shown(value: object) -> str:
    """`value`'s repr on one line, cut to SHOWN characters, for an error message."""
    text = one_line(repr(value))
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"
