"""A run: the ranked results of a retriever, columnar, one row per retrieved (query, doc)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from retrieval_gate.ids import (
    FloatArray,
    IntArray,
    ObjectArray,
    check_unique,
    factorize,
    object_array,
)


@dataclass(frozen=True, eq=False)
class Run:
    """Results: `docs[i]` retrieved for query `query_ids[query[i]]` with `score[i]`.

    Rows may be in any order; ranking (score descending, doc id descending on ties) happens
    at evaluation. `query_ids` is sorted and may hold queries that retrieved nothing. Doc ids
    are kept per row: runs are mostly distinct docs, so a vocabulary would not pay for itself.
    """

    query_ids: ObjectArray
    query: IntArray
    docs: ObjectArray
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
        extra = list(empty_queries)
        query, query_ids = factorize([*queries, *extra] if extra else queries, sort=True)
        return cls.checked(
            query_ids, query[: len(queries)], object_array(docs), scores, source, lines, name
        )

    @classmethod
    def checked(
        cls,
        query_ids: ObjectArray,
        query: IntArray,
        docs: ObjectArray,
        scores: Sequence[float] | FloatArray,
        source: str,
        lines: Sequence[int] | None,
        name: str | None = None,
    ) -> Run:
        """A run from encoded columns, after checking no (query, doc) repeats."""
        check_unique(query, query_ids, docs, source=source, lines=lines, what="result")
        return cls(query_ids, query, docs, np.asarray(scores, dtype=np.float64), name, source)

    def __len__(self) -> int:
        return len(self.score)

    def to_dict(self) -> dict[str, dict[str, float]]:
        """`{query: {doc: score}}` with every query, including those that retrieved nothing."""
        out: dict[str, dict[str, float]] = {str(q): {} for q in self.query_ids}
        rows = zip(self.query.tolist(), self.docs.tolist(), self.score.tolist(), strict=True)
        for q, d, s in rows:
            out[self.query_ids[q]][d] = s
        return out
