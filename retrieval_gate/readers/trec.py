"""TREC qrels (`qid iter docno rel`) and TREC runs (`qid Q0 docno rank score tag`)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import numpy as np

from retrieval_gate.errors import InputError
from retrieval_gate.ids import FloatArray, first_duplicate
from retrieval_gate.qrels import Qrels
from retrieval_gate.readers import arrow
from retrieval_gate.readers.text import open_text
from retrieval_gate.run import Run

QRELS_LAYOUT = "'qid iter docno rel' (4 whitespace-separated fields)"
RUN_LAYOUT = "'qid Q0 docno rank score tag' (6 whitespace-separated fields)"


def read_trec_qrels(path: str | Path) -> Qrels:
    """TREC qrels; lines starting with `#` are comments, blank lines are skipped."""
    source = str(path)
    fast = arrow.read_columns(path, 4, {0: "str", 2: "str", 3: "float"})
    if fast is not None:
        query, query_ids = fast.sorted_ids(0)
        doc, doc_ids = fast.ids[2]
        if first_duplicate(query, doc, len(doc_ids)) is None:
            return Qrels(query_ids, doc_ids, query, doc, fast.numbers[3], source)
    queries: list[str] = []
    docs: list[str] = []
    grades: list[str] = []
    lines: list[int] = []
    with open_text(path) as handle:
        for number, line in _numbered(handle, source):
            parts = line.split()
            if not parts or parts[0].startswith("#"):
                continue
            if len(parts) != 4:
                raise InputError(
                    f"expected {QRELS_LAYOUT}, got {len(parts)} fields: {_excerpt(line)}",
                    source=source,
                    line=number,
                )
            queries.append(parts[0])
            docs.append(parts[2])
            grades.append(parts[3])
            lines.append(number)
    values = _numbers(grades, lines, source, "rel (the grade)", "an integer grade such as 0, 1, 2")
    return Qrels.from_rows(queries, docs, values, source=source, lines=lines)


def read_trec_run(path: str | Path) -> Run:
    """TREC run; fields after the 6th are ignored and the rank column too, as trec_eval does."""
    source = str(path)
    fast = arrow.read_columns(path, 6, {0: "str", 2: "str", 4: "float"})
    if fast is not None:
        query, query_ids = fast.sorted_ids(0)
        doc, doc_ids = fast.ids[2]
        if first_duplicate(query, doc, len(doc_ids)) is None:
            return Run(query_ids, doc_ids, query, doc, fast.numbers[4], fast.last_row[5], source)
    queries: list[str] = []
    docs: list[str] = []
    scores: list[str] = []
    lines: list[int] = []
    name = None
    with open_text(path) as handle:
        for number, line in _numbered(handle, source):
            parts = line.split()
            if not parts or parts[0].startswith("#"):
                continue
            if len(parts) < 6:
                raise InputError(
                    f"expected {RUN_LAYOUT}, got {len(parts)} fields: {_excerpt(line)}",
                    source=source,
                    line=number,
                )
            queries.append(parts[0])
            docs.append(parts[2])
            scores.append(parts[4])
            lines.append(number)
            name = parts[5]
    values = _numbers(scores, lines, source, "score", "a number such as 12.5")
    return Run.from_rows(queries, docs, values, source=source, lines=lines, name=name)


def _numbered(handle: IO[str], source: str) -> Iterator[tuple[int, str]]:
    """(line number, line) pairs; a decoding error names the line."""
    number = 0
    try:
        for number, line in enumerate(handle, 1):
            yield number, line
    except UnicodeDecodeError:
        raise InputError("is not UTF-8 text", source=source, line=number + 1) from None


def _numbers(texts: list[str], lines: list[int], source: str, field: str, hint: str) -> FloatArray:
    """Finite floats of `texts`; the first bad one is an error naming its line."""
    try:
        values = np.array(texts, dtype=np.float64)
    except ValueError:
        values = None
    if values is not None and np.isfinite(values).all():
        return values
    for text, number in zip(texts, lines, strict=True):
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise InputError(
                f"{field} {text!r} is not a finite number; expected {hint}",
                source=source,
                line=number,
            )
    raise AssertionError("a value failed to convert in bulk but not one by one")


def _excerpt(line: str) -> str:
    text = line.strip()
    return repr(text if len(text) <= 80 else text[:77] + "...")
