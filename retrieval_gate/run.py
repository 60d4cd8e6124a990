"""A run: the ranked results of a retriever, columnar, one row per retrieved (query, doc)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from retrieval_gate.ids import FloatArray, IntArray, ObjectArray, encode_rows


@dataclass(frozen=True, eq=False)
class Run:
    """Results: doc `doc_ids[doc[i]]` retrieved for `query_ids[query[i]]` with `score[i]`.

    Rows may be in any order; ranking (score descending, doc id descending on ties) happens
    at evaluation. `query_ids` is sorted and may hold queries that retrieved nothing.
    """

    query_ids: ObjectArray
    doc_ids: ObjectArray
    query: IntArray
    doc: IntArray
    score: FloatArray
    name: str | None = None
    source: str = "<run>"

    @classmethod
    def from_rows(
        cls,
        queries: Sequence[str],
        docs: Sequence[str],
        scores: Sequence[float] | FloatArray,
        *,
        source: str = "<run>",
        lines: Sequence[int] | None = None,
        name: str | None = None,
        empty_queries: Iterable[str] = (),
    ) -> Run:
        """A run from parallel columns; a doc retrieved twice for a query is an error."""
        query, query_ids, doc, doc_ids = encode_rows(
            queries,
            docs,
            source=source,
            lines=lines,
            what="result",
            extra_queries=empty_queries,
        )
        return cls(
            query_ids, doc_ids, query, doc, np.asarray(scores, dtype=np.float64), name, source
        )

    def __len__(self) -> int:
        return len(self.score)

    def to_dict(self) -> dict[str, dict[str, float]]:
        """`{query: {doc: score}}` with every query, including those that retrieved nothing."""
        out: dict[str, dict[str, float]] = {str(q): {} for q in self.query_ids}
        for q, d, s in zip(
            self.query.tolist(), self.doc.tolist(), self.score.tolist(), strict=True
        ):
            out[self.query_ids[q]][self.doc_ids[d]] = s
        return out
