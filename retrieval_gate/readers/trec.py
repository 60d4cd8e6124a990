"""TREC qrels (`qid iter docno rel`) and TREC runs (`qid Q0 docno rank score tag`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from retrieval_gate.core.ids import (
    IntArray,
    ObjectArray,
    factorize,
    first_duplicate_bytes,
    object_array,
    small_pages,
)
from retrieval_gate.core.judgments import Judgments
from retrieval_gate.core.run import Run
from retrieval_gate.readers import fast
from retrieval_gate.readers.text import field_lines, numbers

QRELS_LAYOUT = "'qid iter docno rel' (4 whitespace-separated fields)"
RUN_LAYOUT = "'qid Q0 docno rank score tag' (6 whitespace-separated fields)"


def read_trec_judgments(path: str | Path) -> Judgments:
    """TREC qrels; lines starting with `#` are comments, blank lines are skipped.

    The second column names the annotator when it holds more than one value (it is the
    unused `iter` column, usually all `0`, otherwise).
    """
    with small_pages():
        return fast_trec_judgments(path) or exact_trec_judgments(path)


def read_trec_run(path: str | Path) -> Run:
    """TREC run; fields after the 6th are ignored and the rank column too, as trec_eval does."""
    with small_pages():
        return fast_trec_run(path) or exact_trec_run(path)


def fast_trec_judgments(path: str | Path) -> Judgments | None:
    """The judgments of a clean qrels file read with numpy alone (`readers.fast`), or None
    when the exact reader must read it (annotators named, duplicates, anything unusual)."""
    table = fast.read_table(path, 4, ids=(2,), numbers=(3,), constant=(1,))
    if table is None:
        return None
    codes, query_ids = _query_codes(table)
    docs = table.ids[2]
    lines = np.arange(1, len(codes) + 1, dtype=np.int64)  # a clean file has no skipped line
    # Duplicates are found when the judgments become qrels, naming both lines as the exact
    # reader's rows would.
    return Judgments(query_ids, codes, docs, table.numbers[3], None, lines, str(path))


def fast_trec_run(path: str | Path) -> Run | None:
    """A clean run file read with numpy alone (`readers.fast`), or None when the exact
    reader must read it (more than 6 fields, duplicates, anything unusual)."""
    table = fast.read_table(path, 6, ids=(2,), numbers=(4,))
    if table is None:
        return None
    codes, query_ids = _query_codes(table)
    run = Run(query_ids, codes, table.ids[2], table.numbers[4], table.last_row[5], str(path))
    if first_duplicate_bytes(codes, run.doc_bytes, run.keys) is not None:
        return None
    return run


def trec_run_batches(path: str | Path, batch_bytes: int) -> Iterator[Run]:
    """A clean run file read with numpy alone, `batch_bytes` at a time, as one Run per batch
    (a query's consecutive rows are never split across two); raises `fast.DeclinedError`
    (before or during the iteration) when the exact reader must read it."""
    for table in fast.read_batches(path, 6, batch_bytes, ids=(2,), numbers=(4,)):
        codes, query_ids = _query_codes(table)
        run = Run(query_ids, codes, table.ids[2], table.numbers[4], table.last_row[5], str(path))
        if first_duplicate_bytes(codes, run.doc_bytes, run.keys) is not None:
            raise fast.DeclinedError
        yield run


def _query_codes(table: fast.Table) -> tuple[IntArray, ObjectArray]:
    """Codes into the sorted query ids, per row."""
    group_codes, query_ids = factorize(table.group_ids, sort=True)
    return np.repeat(group_codes, table.group_rows), query_ids


def exact_trec_judgments(path: str | Path) -> Judgments:
    """TREC qrels read line by line: errors name the line."""
    source = str(path)
    queries: list[str] = []
    annotators: list[str] = []
    docs: list[str] = []
    grades: list[str] = []
    lines: list[int] = []
    for number, parts in field_lines(path, QRELS_LAYOUT, 4):
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


def exact_trec_run(path: str | Path) -> Run:
    """A TREC run read line by line: errors name the line."""
    source = str(path)
    # Rows of one query are usually contiguous: keep one entry per group of rows, not per row.
    group_queries: list[str] = []
    group_starts: list[int] = []
    current = None
    docs_list: list[str] = []
    scores: list[str] = []
    lines: list[int] = []
    name = None
    for number, parts in field_lines(path, RUN_LAYOUT, 6, at_least=True):
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
