"""Ragas results: `EvaluationResult.to_pandas()` written as CSV (`to_csv`) or JSON Lines
(`to_json(orient="records", lines=True)`): the samples' columns, then one column per metric."""

from __future__ import annotations

import csv
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from retrieval_gate.errors import InputError
from retrieval_gate.readers.evaluators.rows import (
    MAX_FIELD_CHARS,
    EvaluatorExport,
    EvaluatorRow,
    check_size,
    query_id,
    query_text,
    score_value,
    wanted_names,
)
from retrieval_gate.readers.text import json_lines, logical_name, numbered, open_text, quoted

TEXT_COLUMNS = ("user_input", "question")
"""The query's text: `user_input` since Ragas 0.2, `question` before."""
ID_COLUMN = "query_id"
"""Not a Ragas column: one a team adds to its samples so rows match by id."""


def read_ragas_scores(path: Path, wanted: Sequence[str]) -> EvaluatorExport:
    """The `wanted` metric columns of a Ragas results table, with each row's query text
    (`user_input`, or `question`) and `query_id` when the table has one."""
    source = str(path)
    check_size(path)
    records = _jsonl_records(path) if logical_name(path).endswith(".jsonl") else _csv_records(path)
    rows: list[EvaluatorRow] = []
    columns: dict[str, str] | None = None
    names: tuple[str, ...] = ()
    for where, line, record in records:
        if columns is None:
            names = tuple(record)
            columns = wanted_names(names, wanted, source)
            if not any(column in record for column in (ID_COLUMN, *TEXT_COLUMNS)):
                raise InputError(
                    f"no query column: a Ragas results table has {' or '.join(TEXT_COLUMNS)} "
                    f"(the query's text), or add {ID_COLUMN}; columns are "
                    f"{', '.join(map(quoted, names[:20]))}",
                    source=source,
                    line=line,
                )
        rows.append(_row(record, columns, where, line, source))
    return EvaluatorExport(source, tuple(rows), names)


def _row(
    record: Mapping[str, Any], columns: Mapping[str, str], where: str, line: int, source: str
) -> EvaluatorRow:
    identity = text = None
    if record.get(ID_COLUMN) not in (None, ""):
        identity = query_id(record[ID_COLUMN], source, where, line, ID_COLUMN)
    for column in TEXT_COLUMNS:
        if record.get(column) is not None:
            text = query_text(record[column], source, where, line, column)
            break
    scores = {
        configured: score_value(record.get(name), configured, source, where, line)
        for name, configured in columns.items()
    }
    return EvaluatorRow(where, line, identity, text, scores)


def _jsonl_records(path: Path) -> Iterator[tuple[str, int, Mapping[str, Any]]]:
    for number, record in json_lines(path):
        yield f"line {number}", number, record


def _csv_records(path: Path) -> Iterator[tuple[str, int, Mapping[str, Any]]]:
    """Each data row of the CSV as header -> cell, with the line it starts on."""
    source = str(path)
    limit = csv.field_size_limit()
    csv.field_size_limit(MAX_FIELD_CHARS)
    try:
        with open_text(path) as handle:
            lines = (line for _, line in numbered(handle, source))
            reader = csv.reader(lines, strict=True)
            header: list[str] | None = None
            row = 0
            while True:
                start = reader.line_num + 1
                try:
                    cells = next(reader)
                except StopIteration:
                    return
                except csv.Error as error:
                    raise InputError(f"not CSV: {error}", source=source, line=start) from None
                if header is None:
                    twice = sorted({name for name in cells if cells.count(name) > 1})
                    if twice:  # which of the two columns is the score? never guess
                        raise InputError(
                            f"the header names {', '.join(map(quoted, twice))} more than "
                            "once; export each metric as one column",
                            source=source,
                            line=start,
                        )
                    header = cells
                    continue
                if not cells:
                    continue
                row += 1
                if len(cells) != len(header):
                    raise InputError(
                        f"row {row} has {len(cells)} cells, the header {len(header)}",
                        source=source,
                        line=start,
                    )
                yield f"row {row}", start, dict(zip(header, cells, strict=True))
    finally:
        csv.field_size_limit(limit)
