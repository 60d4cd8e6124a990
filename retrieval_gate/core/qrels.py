"""Relevance judgments (qrels) in columnar form: one row per judged (query, doc)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property

import numpy as np

from retrieval_gate.core.ids import (
    ByteIds,
    DualIds,
    FloatArray,
    IntArray,
    ObjectArray,
    check_unique,
)


class Qrels:
    """Judgments: `grade[i]` of doc `docs[i]` for query `query_ids[query[i]]`.

    Grades are floats; a grade below 0 marks a doc that was pooled but not judged.
    `query_ids` is sorted and holds every labelled query.

    Doc ids are held as Python strings (`docs`) or as one UTF-8 buffer (`doc_bytes`, from the
    TREC reader: no object per row, and the joins read only it); each form is built from the
    other on first use.
    """

    query_ids: ObjectArray
    query: IntArray
    grade: FloatArray
    source: str

    def __init__(
        self,
        query_ids: ObjectArray,
        query: IntArray,
        docs: ObjectArray | ByteIds | DualIds,
        grade: FloatArray,
        source: str = "<qrels>",
    ) -> None:
        self.query_ids = query_ids
        self.query = query
        self.grade = grade
        self.source = source
        self._ids = DualIds.of(docs)

    def __repr__(self) -> str:
        queries = len(self.query_ids)
        return f"Qrels({len(self)} judgments, {queries} queries, source={self.source!r})"

    @classmethod
    def checked(
        cls,
        query_ids: ObjectArray,
        query: IntArray,
        docs: ObjectArray | ByteIds | DualIds,
        grades: Sequence[float] | FloatArray,
        source: str,
        lines: Sequence[int] | None,
    ) -> Qrels:
        """Qrels from encoded columns, after checking no (query, doc) is judged twice."""
        ids = DualIds.of(docs)
        check_unique(query, query_ids, ids.held, source=source, lines=lines, what="judgment")
        return cls(query_ids, query, ids, np.asarray(grades, dtype=np.float64), source)

    def restricted(self, keep_queries: np.ndarray) -> Qrels:
        """These judgments of the queries marked in `keep_queries` (a mask aligned with
        `query_ids`) alone, renumbered."""
        rows = keep_queries[self.query]
        remap = np.cumsum(keep_queries) - 1
        return Qrels(
            self.query_ids[keep_queries],
            remap[self.query[rows]],
            self.docs[rows],
            self.grade[rows],
            self.source,
        )

    @property
    def docs(self) -> ObjectArray:
        """Doc id of each row, as Python strings (built on first use from `doc_bytes`)."""
        return self._ids.strings

    def __len__(self) -> int:
        return len(self.grade)

    @cached_property
    def position(self) -> dict[str, int]:
        """Index of each query id in `query_ids`."""
        return {q: i for i, q in enumerate(self.query_ids.tolist())}

    @property
    def doc_bytes(self) -> ByteIds:
        """`docs` as UTF-8 bytes, for joins on hashed ids (built on first use from `docs`)."""
        return self._ids.bytes

    @cached_property
    def by_query(self) -> list[dict[str, float]]:
        """`{doc: grade}` of each query, aligned with `query_ids`."""
        order = np.argsort(self.query, kind="stable")
        counts = np.bincount(self.query, minlength=len(self.query_ids)).tolist()
        docs = self.docs[order].tolist()
        grades = self.grade[order].tolist()
        out: list[dict[str, float]] = []
        start = 0
        for count in counts:
            end = start + count
            out.append(dict(zip(docs[start:end], grades[start:end], strict=True)))
            start = end
        return out

    def judgments_of(self, query_id: str) -> dict[str, float]:
        """`{doc: grade}` of one query, in row order: its `by_query` entry, without building
        every query's (a report names ten queries; `by_query` is 6 MB at 100,000 judgments)."""
        if "by_query" in self.__dict__:
            return self.by_query[self.position[query_id]]
        rows = np.flatnonzero(self.query == self.position[query_id])
        return dict(zip(self.docs[rows].tolist(), self.grade[rows].tolist(), strict=True))

    def to_dict(self) -> dict[str, dict[str, float]]:
        """`{query: {doc: grade}}`, queries sorted, docs in row order."""
        return {q: dict(d) for q, d in zip(self.query_ids.tolist(), self.by_query, strict=True)}


def is_judged(judgments: Mapping[str, float], doc: str) -> bool:
    """The one rule for "judged", the judged@k metric's: `judgments` (one query's
    `Qrels.by_query` entry) grade `doc` >= 0; a grade < 0 marks a doc pooled but not judged."""
    grade = judgments.get(doc)
    return grade is not None and grade >= 0
