"""A run: the ranked results of a retriever, columnar, one row per retrieved (query, doc)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from retrieval_gate.core.ids import (
    ByteIds,
    DualIds,
    FloatArray,
    IntArray,
    ObjectArray,
    U64Array,
    check_unique,
    factorize,
    object_array,
    pair_keys,
    sorted_keys,
)


class Run:
    """Results: doc `docs[i]` retrieved for query `query_ids[query[i]]` with `score[i]`.

    Rows may be in any order; ranking (score descending, doc id descending on ties) happens
    at evaluation. `query_ids` is sorted and may hold queries that retrieved nothing.

    Doc ids are held either as Python strings (`docs`, from mappings and small readers) or as
    one UTF-8 buffer with offsets (`doc_bytes`, from the TREC reader: no object per row); each
    form is built from the other on first use.
    """

    query_ids: ObjectArray
    query: IntArray
    score: FloatArray
    name: str | None
    source: str
    ranked: bool
    """The rows are grouped by query code, ascending, and ranked within each query as the
    metrics rank them (score descending, doc id descending on ties): a run cut from a ranked
    run says so, and is not ranked again (at 200,000 queries x 100 a ranking is 1.4 s)."""

    def __init__(
        self,
        query_ids: ObjectArray,
        query: IntArray,
        docs: ObjectArray | ByteIds,
        score: FloatArray,
        name: str | None = None,
        source: str = "<run>",
        *,
        ranked: bool = False,
    ) -> None:
        self.query_ids = query_ids
        self.query = query
        self.score = score
        self.name = name
        self.source = source
        self.ranked = ranked
        self._ids = DualIds(docs)
        self._keys: U64Array | None = None

    def __repr__(self) -> str:
        return f"Run({len(self)} rows, {len(self.query_ids)} queries, source={self.source!r})"

    @property
    def docs(self) -> ObjectArray:
        """Doc id of each row, as Python strings (built on first use from `doc_bytes`)."""
        return self._ids.strings

    def docs_at(self, rows: IntArray) -> ObjectArray:
        """`docs[rows]`, without building every row's string when the run holds bytes."""
        return self._ids.strings_at(rows)

    @property
    def doc_bytes(self) -> ByteIds:
        """Doc id of each row as UTF-8 bytes (built on first use from `docs`)."""
        return self._ids.bytes

    @property
    def keys(self) -> U64Array:
        """Sorted 64-bit (query, doc) keys with the row in their low bits (`ids.sorted_keys`):
        the duplicate check and the join with the qrels share this one sort."""
        if self._keys is None:
            hashes = self.doc_bytes.hashes(keep=False)  # the keys take its place
            self._keys = sorted_keys(pair_keys(self.query, hashes, in_place=True))
        return self._keys

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
