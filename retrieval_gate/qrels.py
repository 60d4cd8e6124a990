"""Relevance judgments (qrels) in columnar form: one row per judged (query, doc)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from retrieval_gate.ids import FloatArray, IntArray, ObjectArray, check_unique, factorize


@dataclass(frozen=True, eq=False)
class Qrels:
    """Judgments: `grade[i]` of doc `doc_ids[doc[i]]` for query `query_ids[query[i]]`.

    Grades are floats; a grade below 0 marks a doc that was pooled but not judged.
    `query_ids` is sorted and holds every labelled query.
    """

    query_ids: ObjectArray
    doc_ids: ObjectArray
    query: IntArray
    doc: IntArray
    grade: FloatArray
    source: str = "<qrels>"

    @classmethod
    def from_rows(
        cls,
        queries: Sequence[str],
        docs: Sequence[str],
        grades: Sequence[float] | FloatArray,
        *,
        source: str = "<qrels>",
        lines: Sequence[int] | None = None,
    ) -> Qrels:
        """Qrels from parallel columns; a (query, doc) judged twice is an error naming both."""
        query, query_ids = factorize(queries, sort=True)
        doc, doc_ids = factorize(docs)
        check_unique(query, query_ids, doc_ids[doc], source=source, lines=lines, what="judgment")
        return cls(query_ids, doc_ids, query, doc, np.asarray(grades, dtype=np.float64), source)

    def __len__(self) -> int:
        return len(self.grade)

    @cached_property
    def by_query(self) -> list[dict[str, float]]:
        """`{doc: grade}` of each query, aligned with `query_ids`."""
        order = np.argsort(self.query, kind="stable")
        counts = np.bincount(self.query, minlength=len(self.query_ids)).tolist()
        docs = self.doc_ids[self.doc[order]].tolist()
        grades = self.grade[order].tolist()
        out: list[dict[str, float]] = []
        start = 0
        for count in counts:
            out.append(
                dict(zip(docs[start : start + count], grades[start : start + count], strict=True))
            )
            start += count
        return out

    def to_dict(self) -> dict[str, dict[str, float]]:
        """`{query: {doc: grade}}`, queries sorted, docs in row order."""
        out: dict[str, dict[str, float]] = {str(q): {} for q in self.query_ids}
        for q, d, g in zip(
            self.query.tolist(), self.doc.tolist(), self.grade.tolist(), strict=True
        ):
            out[self.query_ids[q]][self.doc_ids[d]] = g
        return out
