"""The plain evaluator export: per line `{query_id, query, scores: {name: value}}`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from retrieval_gate.errors import InputError
from retrieval_gate.readers.evaluators.rows import (
    EvaluatorExport,
    EvaluatorRow,
    check_size,
    mapping_at,
    query_id,
    query_text,
    score_value,
    wanted_names,
)
from retrieval_gate.readers.text import json_lines


def read_jsonl_scores(path: Path, wanted: Sequence[str]) -> EvaluatorExport:
    """Each line: `query_id` and/or `query` (its text), and `scores`, an object of named
    numbers; only the `wanted` scores are kept."""
    source = str(path)
    rows: list[EvaluatorRow] = []
    names: dict[str, None] = {}
    check_size(path)
    for number, row in json_lines(path):
        where = f"line {number}"
        identity = text = None
        if "query_id" in row:
            identity = query_id(row["query_id"], source, where, number, "query_id")
        if "query" in row:
            text = query_text(row["query"], source, where, number, "query")
        if identity is None and text is None:
            raise InputError(
                f"{where}: no query_id or query: name the query each line scores",
                source=source,
                line=number,
            )
        if "scores" not in row:
            raise InputError(
                f'{where}: no scores: expected "scores": {{"faithfulness": 0.9, ...}}',
                source=source,
                line=number,
            )
        scores = mapping_at(row["scores"], source, f"{where}: scores", "named scores", number)
        names.update(dict.fromkeys(scores))
        kept = {
            configured: score_value(scores[name], configured, source, where, number)
            for name, configured in wanted_names(scores, wanted, source).items()
        }
        rows.append(EvaluatorRow(where, number, identity, text, kept))
    return EvaluatorExport(source, tuple(rows), tuple(names))
