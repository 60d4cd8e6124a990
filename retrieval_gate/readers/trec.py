"""TREC qrels (`qid iter docno rel`) and TREC runs (`qid Q0 docno rank score tag`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from retrieval_gate.errors import InputError
from retrieval_gate.ids import factorize, first_duplicate, object_array
from retrieval_gate.judgments import Judgments
from retrieval_gate.readers import arrow
from retrieval_gate.readers.text import numbered, numbers, open_text
from retrieval_gate.run import Run

QRELS_LAYOUT = "'qid iter docno rel' (4 whitespace-separated fields)"
RUN_LAYOUT = "'qid Q0 docno rank score tag' (6 whitespace-separated fields)"


def read_trec_judgments(path: str | Path) -> Judgments:
    """TREC qrels; lines starting with `#` are comments, blank lines are skipped.

    The second column names the annotator when it holds more than one value (it is the
    unused `iter` column, usually all `0`, otherwise).
    """
    source = str(path)
    fast = arrow.read_columns(path, 4, {0: "ids", 1: "ids", 2: "str", 3: "float"})
    if fast is not None and len(fast.ids[1][1]) == 1:
        query, query_ids = fast.ids[0]
        # A duplicate falls through to the exact reader, whose error names both lines.
        if first_duplicate(query, fast.strings[2]) is None:
            return Judgments(query_ids, query, fast.strings[2], fast.numbers[3], None, None, source)
    queries: list[str] = []
    annotators: list[str] = []
    docs: list[str] = []
    grades: list[str] = []
    lines: list[int] = []
    with open_text(path) as handle:
        for number, line in numbered(handle, source):
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
            annotators.append(parts[1])
            docs.append(parts[2])
            grades.append(parts[3])
            lines.append(number)
    values = numbers(grades, lines, source, "rel (the grade)", "an integer grade such as 0, 1, 2")
    named = len(set(annotators)) > 1
    return Judgments.from_rows(
        queries, docs, values, annotators=annotators if named else None, source=source, lines=lines
    )


def read_trec_run(path: str | Path) -> Run:
    """TREC run; fields after the 6th are ignored and the rank column too, as trec_eval does."""
    source = str(path)
    fast = arrow.read_columns(path, 6, {0: "ids", 2: "str", 4: "float"})
    if fast is not None:
        query, query_ids = fast.ids[0]
        docs = fast.strings[2]
        if first_duplicate(query, docs) is None:
            return Run(query_ids, query, docs, fast.numbers[4], fast.last_row[5], source)
    # Rows of one query are usually contiguous: keep one entry per group of rows, not per row.
    group_queries: list[str] = []
    group_starts: list[int] = []
    current = None
    docs_list: list[str] = []
    scores: list[str] = []
    lines: list[int] = []
    name = None
    with open_text(path) as handle:
        for number, line in numbered(handle, source):
            parts = line.split()
            if not parts or parts[0].startswith("#"):
                continue
            if len(parts) < 6:
                raise InputError(
                    f"expected {RUN_LAYOUT}, got {len(parts)} fields: {_excerpt(line)}",
                    source=source,
                    line=number,
                )
            if parts[0] != current:
                current = parts[0]
                group_queries.append(current)
                group_starts.append(len(docs_list))
            docs_list.append(parts[2])
            scores.append(parts[4])
            lines.append(number)
            name = parts[5]
    values = numbers(scores, lines, source, "score", "a number such as 12.5")
    group_codes, query_ids = factorize(group_queries, sort=True)
    lengths = np.diff(np.append(np.asarray(group_starts, dtype=np.int64), len(docs_list)))
    query = np.repeat(group_codes, lengths)
    return Run.checked(query_ids, query, object_array(docs_list), values, source, lines, name)


def _excerpt(line: str) -> str:
    text = line.strip()
    return repr(text if len(text) <= 80 else text[:77] + "...")
