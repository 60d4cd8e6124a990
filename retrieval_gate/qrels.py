"""Relevance judgments (qrels) in columnar form: one row per judged (query, doc)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from retrieval_gate.ids import FloatArray, IntArray, ObjectArray, encode_rows


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
        query, query_ids, doc, doc_ids = encode_rows(
            queries, docs, source=source, lines=lines, what="judgment"
        )
        return cls(query_ids, doc_ids, query, doc, np.asarray(grades, dtype=np.float64), source)

    def __len__(self) -> int:
        return len(self.grade)

    def to_dict(self) -> dict[str, dict[str, float]]:
        """`{query: {doc: grade}}`, queries sorted, docs in row order."""
        out: dict[str, dict[str, float]] = {str(q): {} for q in self.query_ids}
        for q, d, g in zip(
            self.query.tolist(), self.doc.tolist(), self.grade.tolist(), strict=True
        ):
            out[self.query_ids[q]][self.doc_ids[d]] = g
        return out


def qrels_rows(judgments: Mapping[str, Mapping[str, float]]) -> Iterable[tuple[str, str, float]]:
    """(query, doc, grade) rows of a `{query: {doc: grade}}` mapping, in its order."""
    for query, docs in judgments.items():
        for doc, grade in docs.items():
            yield query, doc, grade
