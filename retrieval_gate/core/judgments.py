"""Judgment rows as read: who judged what, and on which line, before they become qrels."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

import numpy as np

from retrieval_gate.core.ids import (
    ByteIds,
    DualIds,
    FloatArray,
    IntArray,
    ObjectArray,
    factorize,
    first_duplicate,
    object_array,
)
from retrieval_gate.core.qrels import Qrels
from retrieval_gate.errors import InputError

Combine = Literal["median", "mean", "max", "min"]


@dataclass(frozen=True, eq=False)
class Judgments:
    """Every judgment row of a qrels source, in file order.

    `annotator` is None when the source names no annotators (then each (query, doc) may be
    judged once); with annotators, each annotator may judge a (query, doc) once.
    """

    query_ids: ObjectArray
    """Sorted unique query ids."""
    query: IntArray
    doc_ids: ObjectArray | ByteIds
    """Doc id of each row as read: strings, or one UTF-8 buffer (the TREC reader's)."""
    grade: FloatArray
    annotator: ObjectArray | None
    lines: IntArray | None
    """1-based line of each row in `source`, when it has lines."""
    source: str

    @cached_property
    def ids(self) -> DualIds:
        """`doc_ids` in both forms, shared with the qrels made of these judgments."""
        return DualIds(self.doc_ids)

    @property
    def docs(self) -> ObjectArray:
        """Doc id of each row as Python strings (built on first use when read as bytes)."""
        return self.ids.strings

    @classmethod
    def from_rows(
        cls,
        queries: Sequence[str],
        docs: Sequence[str],
        grades: Sequence[float] | FloatArray,
        *,
        annotators: Sequence[str] | None = None,
        source: str = "<qrels>",
        lines: Sequence[int] | None = None,
    ) -> Judgments:
        """Judgments from parallel columns; `annotators` None when the source has none."""
        query, query_ids = factorize(queries, sort=True)
        return cls(
            query_ids,
            query,
            object_array(docs),
            np.asarray(grades, dtype=np.float64),
            None if annotators is None else object_array(annotators),
            None if lines is None else np.asarray(lines, dtype=np.int64),
            source,
        )

    def __len__(self) -> int:
        return len(self.grade)

    @property
    def annotators(self) -> tuple[str, ...]:
        """The annotators named, sorted; empty when the source names none."""
        if self.annotator is None:
            return ()
        return tuple(sorted(set(self.annotator.tolist())))

    def where(self, row: int) -> str:
        """`source:line` of a row (or its entry number when the source has no lines)."""
        if self.lines is None:
            return f"{self.source} (entry {row + 1})"
        return f"{self.source}:{int(self.lines[row])}"

    def duplicate_groups(self) -> list[tuple[int, ...]]:
        """Rows judging the same (query, doc) again (by the same annotator), in file order."""
        key = self._key()
        if first_duplicate(key, self.docs) is None:
            return []
        groups: dict[tuple[int, str], list[int]] = {}
        for row, (code, doc) in enumerate(zip(key.tolist(), self.docs.tolist(), strict=True)):
            groups.setdefault((code, doc), []).append(row)
        return [tuple(rows) for rows in groups.values() if len(rows) > 1]

    def qrels(self, combine: Combine = "median") -> Qrels:
        """One grade per (query, doc); several annotators' grades become one by `combine`.

        A (query, doc) judged twice (by one annotator) is an InputError naming both lines.
        `median` is the lower median, so the grade is always one an annotator gave. Grades
        below 0 (pooled, not judged) count only when no annotator judged the document.
        """
        lines = None if self.lines is None else self.lines.tolist()
        if self.annotator is None:
            return Qrels.checked(
                self.query_ids, self.query, self.ids, self.grade, self.source, lines
            )
        groups = self.duplicate_groups()
        if groups:
            first = groups[0]
            who = self.annotator[first[1]]
            raise InputError(
                f"annotator {who!r} judged query {self.query_ids[self.query[first[1]]]!r}, doc "
                f"{self.docs[first[1]]!r} twice (first {self.where(first[0])}); keep one line "
                "per (query, doc, annotator)",
                source=self.source,
                line=None if lines is None else lines[first[1]],
            )
        return self._combined(combine)

    def _key(self) -> IntArray:
        """The query code, or (query, annotator) as one code when annotators are named."""
        if self.annotator is None:
            return self.query
        who, names = factorize(self.annotator)
        key: IntArray = self.query * np.int64(max(len(names), 1)) + who
        return key

    def _combined(self, combine: Combine) -> Qrels:
        doc_codes, doc_ids = factorize(self.docs)
        # Judged grades sort after pooled (-1) ones so each item's judged rows are contiguous.
        judged = self.grade >= 0
        order = np.lexsort((self.grade, judged, doc_codes, self.query))
        item = np.column_stack((self.query[order], doc_codes[order]))
        starts = np.flatnonzero(np.r_[True, np.any(item[1:] != item[:-1], axis=1)])
        ends = np.r_[starts[1:], len(order)]
        grades = self.grade[order]
        counted = judged[order]
        # Per item: the judged rows are [first_judged, end); none judged keeps the pooled rows.
        judged_count = np.add.reduceat(counted.astype(np.int64), starts)
        low = np.where(judged_count > 0, ends - judged_count, starts)
        values = np.empty(len(starts), dtype=np.float64)
        for i, (a, b) in enumerate(zip(low.tolist(), ends.tolist(), strict=True)):
            span = grades[a:b]
            if combine == "median":
                values[i] = span[(len(span) - 1) // 2]
            elif combine == "mean":
                values[i] = span.mean()
            elif combine == "max":
                values[i] = span[-1]
            else:
                values[i] = span[0]
        first_rows = order[starts]
        return Qrels(
            self.query_ids,
            self.query[first_rows],
            doc_ids[doc_codes[first_rows]],
            values,
            self.source,
        )
