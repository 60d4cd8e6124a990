"""JSON Lines qrels (one judgment per line) and runs (one result, or one query, per line)."""

from __future__ import annotations

import zlib
from collections.abc import KeysView, Mapping
from pathlib import Path

import numpy as np

from retrieval_gate.core.ids import FloatArray
from retrieval_gate.core.json_parse import parsed_json
from retrieval_gate.core.judgments import Judgments
from retrieval_gate.core.run import Run
from retrieval_gate.errors import InputError
from retrieval_gate.readers.text import json_field, json_id, json_lines, numbers, open_text

QUERY_KEYS = ("query_id", "qid", "query-id")
DOC_KEYS = ("doc_id", "docid", "docno", "corpus-id", "id")
GRADE_KEYS = ("relevance", "grade", "rel", "label", "score")
ANNOTATOR_KEYS = ("annotator", "assessor", "judge")
RESULT_LIST_KEYS = ("results", "hits", "docs", "doc_ids")
_BATCH_CHARS = 4_000_000
"""Text per call of the C decoder (whole lines): its objects are dropped before the next."""


def read_jsonl_judgments(path: str | Path) -> Judgments:
    """`{"query_id": ..., "doc_id": ..., "relevance": ...}` per line (also qid/docid/grade),
    with an optional `annotator`, given on every line or on none."""
    return _plain_judgments(path) or _exact_judgments(path)


def _exact_judgments(path: str | Path) -> Judgments:
    """`read_jsonl_judgments` line by line: errors name the line."""
    source = str(path)
    queries: list[str] = []
    docs: list[str] = []
    grades: list[str] = []
    annotators: list[str] = []
    lines: list[int] = []
    for number, row in json_lines(path):
        queries.append(json_id(row, QUERY_KEYS, source, number, "query id"))
        docs.append(json_id(row, DOC_KEYS, source, number, "doc id"))
        grades.append(str(json_field(row, GRADE_KEYS, source, number, "grade")))
        if any(key in row for key in ANNOTATOR_KEYS):
            annotators.append(json_id(row, ANNOTATOR_KEYS, source, number, "annotator"))
        if annotators and len(annotators) != len(queries):
            raise InputError(
                "some judgments name an annotator and some do not; name one on every line "
                "or on none",
                source=source,
                line=number,
            )
        lines.append(number)
    values = numbers(grades, lines, source, "grade", "an integer grade such as 1")
    return Judgments.from_rows(
        queries,
        docs,
        values,
        annotators=annotators or None,
        source=source,
        lines=lines,
    )


def read_jsonl_run(path: str | Path) -> Run:
    """One result per line (`{"query_id", "doc_id", "score"}`) or one query per line
    (`{"query_id", "results": [{"doc_id", "score"} | "doc id", ...]}`). Without scores,
    results rank in the order given."""
    return _plain_run(path) or _exact_run(path)


def _plain_run(path: str | Path) -> Run | None:
    """A run of one scored result per line read by `_plain_columns`, or None."""
    columns = _plain_columns(path, ("score",), RESULT_LIST_KEYS)
    if columns is None:
        return None
    queries, docs, scores = columns
    lines = range(1, len(docs) + 1)
    return Run.from_rows(queries, docs, scores, source=str(path), lines=lines)


def _plain_judgments(path: str | Path) -> Judgments | None:
    """Judgments naming no annotator read by `_plain_columns`, or None."""
    columns = _plain_columns(path, GRADE_KEYS, ANNOTATOR_KEYS)
    if columns is None:
        return None
    queries, docs, grades = columns
    lines = range(1, len(docs) + 1)
    return Judgments.from_rows(queries, docs, grades, source=str(path), lines=lines)


def _plain_columns(
    path: str | Path, value_keys: tuple[str, ...], refused: tuple[str, ...]
) -> tuple[list[str], list[str], FloatArray] | None:
    """(query id, doc id, value) of each line of a file whose every line is an object with
    the same keys, string ids and a finite number, parsed in batches by json's C decoder and
    read column by column; None when anything is unusual or a key of `refused` is there (the
    exact reader then reads it, or names the line at fault)."""
    queries: list[str] = []
    docs: list[str] = []
    values: list[float] = []
    seen: dict[str, str] = {}  # one string per query id, not one per line
    keys = None
    try:
        with open_text(path) as handle:
            while batch := handle.readlines(_BATCH_CHARS):
                # A line is one value ("\n" cannot occur inside a JSON string); a blank
                # line makes the text invalid, and the exact reader skips it.
                if keys is None:  # the layout, from the first line alone
                    keys = _flat_keys(parsed_json(batch[0]), value_keys, refused)
                    if keys is None:
                        return None
                layout, query_key, doc_key, value_key = keys
                rows = parsed_json("[" + ",".join(batch) + "]")
                if not all(type(row) is dict and row.keys() == layout for row in rows):
                    return None
                named = [row[query_key] for row in rows]
                listed = [row[doc_key] for row in rows]
                given = [row[value_key] for row in rows]
                if not set(map(type, named)) | set(map(type, listed)) <= {str}:
                    return None
                if not set(map(type, given)) <= {float, int} or not all(map(str.strip, named)):
                    return None
                if not all(map(str.strip, listed)):
                    return None
                queries += map(seen.setdefault, named, named)
                docs += listed
                values += given
        numbers = np.asarray(values, dtype=np.float64)
    except (InputError, ValueError, OSError, EOFError, zlib.error, RecursionError, OverflowError):
        return None  # JSONDecodeError and UnicodeDecodeError are ValueErrors
    return (queries, docs, numbers) if np.isfinite(numbers).all() else None


def _flat_keys(
    row: object, value_keys: tuple[str, ...], refused: tuple[str, ...]
) -> tuple[KeysView[str], str, str, str] | None:
    """The keys of a flat row and which of them hold the query id, the doc id and the value
    (the first present of each list, as the exact reader takes them); None for any other
    layout."""
    if type(row) is not dict or any(key in row for key in refused):
        return None
    query = next((key for key in QUERY_KEYS if key in row), None)
    doc = next((key for key in DOC_KEYS if key in row), None)
    value = next((key for key in value_keys if key in row), None)
    if query is None or doc is None or value is None:
        return None
    return row.keys(), query, doc, value


def _exact_run(path: str | Path) -> Run:
    """`read_jsonl_run` line by line: errors name the line."""
    source = str(path)
    queries: list[str] = []
    docs: list[str] = []
    scores: list[str] = []
    lines: list[int] = []
    empty: list[str] = []
    scored: bool | None = None
    for number, row in json_lines(path):
        query = json_id(row, QUERY_KEYS, source, number, "query id")
        listed = next((row[key] for key in RESULT_LIST_KEYS if key in row), None)
        items = [row] if listed is None else listed
        if not isinstance(items, list):
            raise InputError("the results field must be a list", source=source, line=number)
        if not items:
            empty.append(query)
        for position, item in enumerate(items, 1):
            if isinstance(item, str):
                doc, score = item, None
            elif isinstance(item, Mapping):
                doc = json_id(item, DOC_KEYS, source, number, "doc id")
                score = item.get("score")
            else:
                raise InputError(
                    f"result {position} is neither a doc id nor an object",
                    source=source,
                    line=number,
                )
            if scored is None:
                scored = score is not None
            if scored != (score is not None):
                raise InputError(
                    "some results have a score and some do not; give every "
                    "result a score, or none (then they rank as listed)",
                    source=source,
                    line=number,
                )
            queries.append(query)
            docs.append(doc)
            scores.append(str(score) if score is not None else str(-len(scores) - 1))
            lines.append(number)
    values = numbers(scores, lines, source, "score", "a number such as 12.5")
    return Run.from_rows(queries, docs, values, source=source, lines=lines, empty_queries=empty)
