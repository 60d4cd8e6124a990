"""Subtopic (intent) qrels of the TREC Web track diversity task: `topic subtopic docno judgment`."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from retrieval_gate.core.ids import (
    FloatArray,
    IntArray,
    ObjectArray,
    factorize,
    first_duplicate,
    object_array,
)
from retrieval_gate.errors import InputError
from retrieval_gate.readers.text import field_lines, numbers, quoted

LAYOUT = "'topic subtopic docno judgment' (4 whitespace-separated fields)"
MAX_FIELD = 1000
"""Longest topic, subtopic or doc id accepted, in characters: ids are short, and a longer
field is a broken or hostile file (its text is never echoed whole)."""
_CONTROL = re.compile("[\x00-\x08\x0e-\x1b\x7f-\x9f]")
"""Control characters that `str.split` keeps inside a field (the other C0 ones split it)."""
_FIELDS = ("topic", "subtopic", "docno")


@dataclass(frozen=True, eq=False)
class SubtopicQrels:
    """Judgments per intent: doc `docs[i]` judged `judgment[i]` for subtopic `subtopic[i]` of
    query `query_ids[query[i]]`. `query_ids` is sorted; no (query, subtopic, doc) repeats."""

    query_ids: ObjectArray
    query: IntArray
    subtopic: ObjectArray
    docs: ObjectArray
    judgment: FloatArray
    source: str = "<subtopics>"

    @classmethod
    def from_rows(
        cls,
        queries: Sequence[str],
        subtopics: Sequence[str],
        docs: Sequence[str],
        judgments: Sequence[float] | FloatArray,
        *,
        source: str = "<subtopics>",
    ) -> SubtopicQrels:
        """Subtopic qrels from parallel columns; a (query, subtopic, doc) judged twice is an
        InputError naming both entries (ndeval would count it twice in MAP-IA's denominator)."""
        query, query_ids = factorize(list(queries), sort=True)
        codes: dict[tuple[str, str], int] = {}
        pair = np.fromiter(
            (codes.setdefault(key, len(codes)) for key in zip(queries, subtopics, strict=True)),
            dtype=np.int64,
            count=len(queries),
        )
        doc_ids = object_array(docs)
        duplicate = first_duplicate(pair, doc_ids)
        if duplicate is not None:
            earlier, later = duplicate
            raise InputError(
                f"{_duplicate(queries[later], subtopics[later], docs[later])} (entries "
                f"{earlier + 1} and {later + 1})",
                source=source,
            )
        values = np.asarray(judgments, dtype=np.float64)
        return cls(query_ids, query, object_array(subtopics), doc_ids, values, source)

    def __len__(self) -> int:
        return len(self.judgment)

    def to_dict(self) -> dict[str, dict[str, dict[str, float]]]:
        """`{query: {subtopic: {doc: judgment}}}`, queries sorted, the rest in row order."""
        out: dict[str, dict[str, dict[str, float]]] = {q: {} for q in self.query_ids.tolist()}
        rows = zip(
            self.query.tolist(),
            self.subtopic.tolist(),
            self.docs.tolist(),
            self.judgment.tolist(),
            strict=True,
        )
        for q, s, d, j in rows:
            out[self.query_ids[q]].setdefault(s, {})[d] = j
        return out


def read_subtopics(path: str | Path) -> SubtopicQrels:
    """TREC diversity qrels, e.g. the Web track's qrels.diversity.txt: per line a topic, a
    subtopic id, a doc id and a judgment (a number; relevant when >= the metric's `rel`, 1 by
    default). Lines starting with `#` and blank lines are skipped; gzip is read too."""
    source = str(path)
    columns: tuple[list[str], list[str], list[str]] = ([], [], [])
    texts: list[str] = []
    lines: list[int] = []
    # Refused at the line that repeats, not once the whole file is read: a file of one line
    # repeated millions of times would otherwise be read to its end first.
    seen: dict[tuple[str, ...], int] = {}
    for number, parts in field_lines(path, LAYOUT, 4):
        for name, value, column in zip(_FIELDS, parts, columns, strict=False):
            _check_id(name, value, source, number)
            column.append(value)
        first = seen.setdefault(tuple(parts[:3]), number)
        if first != number:
            raise InputError(
                f"{_duplicate(*parts[:3])}: already given on line {first}; keep one line per "
                "(topic, subtopic, doc)",
                source=source,
                line=number,
            )
        if len(parts[3]) > MAX_FIELD:
            raise InputError(
                f"judgment {quoted(parts[3])} is {len(parts[3])} characters long; "
                "expected a number such as 0 or 1",
                source=source,
                line=number,
            )
        texts.append(parts[3])
        lines.append(number)
    if not lines:
        raise InputError(
            f"no subtopic judgments found; expected lines of {LAYOUT}, e.g. '51 1 doc-17 1'",
            source=source,
        )
    values = numbers(texts, lines, source, "judgment", "a number such as 0 or 1")
    queries, subtopics, docs = columns
    return SubtopicQrels.from_rows(queries, subtopics, docs, values, source=source)


def subtopics_from_dict(
    judgments: Mapping[str, Mapping[str, Mapping[str, float]]],
    *,
    source: str = "<subtopics dict>",
) -> SubtopicQrels:
    """Subtopic qrels from `{query: {subtopic: {doc: judgment}}}`; ids strings, judgments
    finite numbers."""
    queries: list[str] = []
    subtopics: list[str] = []
    docs: list[str] = []
    values: list[float] = []
    for query, intents in judgments.items():
        if not isinstance(intents, Mapping):
            raise InputError(
                f"query {query!r}: expected {{subtopic: {{doc: judgment}}}}, got "
                f"{type(intents).__name__}",
                source=source,
            )
        for subtopic, graded in intents.items():
            if not isinstance(graded, Mapping):
                raise InputError(
                    f"query {query!r}, subtopic {subtopic!r}: expected {{doc: judgment}}, got "
                    f"{type(graded).__name__}",
                    source=source,
                )
            for doc, value in graded.items():
                for name, text in zip(_FIELDS, (query, subtopic, doc), strict=True):
                    if not isinstance(text, str) or not text:
                        raise InputError(
                            f"{name} {text!r} must be a non-empty string", source=source
                        )
                ok = isinstance(value, int | float) and not isinstance(value, bool)
                if not ok or not np.isfinite(value):
                    raise InputError(
                        f"query {query!r}, subtopic {subtopic!r}, doc {doc!r}: judgment "
                        f"{value!r} is not a finite number",
                        source=source,
                    )
                queries.append(query)
                subtopics.append(subtopic)
                docs.append(doc)
                values.append(float(value))
    return SubtopicQrels.from_rows(queries, subtopics, docs, values, source=source)


def _duplicate(topic: str, subtopic: str, doc: str) -> str:
    return f"duplicate judgment for topic {topic!r}, subtopic {subtopic!r}, doc {doc!r}"


def _check_id(name: str, value: str, source: str, line: int) -> None:
    """An InputError for an id too long to be one or holding a control character."""
    if len(value) > MAX_FIELD:
        raise InputError(
            f"{name} {quoted(value)} is {len(value)} characters long; ids are at most {MAX_FIELD}",
            source=source,
            line=line,
        )
    if _CONTROL.search(value):
        raise InputError(
            f"{name} {quoted(value)} holds a control character; ids are printable text",
            source=source,
            line=line,
        )
