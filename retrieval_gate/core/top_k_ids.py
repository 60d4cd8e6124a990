"""Each query's top-k doc ids as a read-only mapping held in one byte buffer, not a string
per id."""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain, pairwise
from typing import Any

import numpy as np

from retrieval_gate.core.ids import ByteIds, IntArray, ObjectArray, object_array, run_starts


@dataclass(frozen=True)
class TopKColumns:
    """`queries[i]`'s ids are `docs[bounds[i]:bounds[i + 1]]`, in rank order; `queries` is
    sorted and each has one id or more."""

    queries: ObjectArray
    bounds: IntArray
    docs: ByteIds

    @cached_property
    def position(self) -> dict[str, int]:
        return {query: i for i, query in enumerate(self.queries.tolist())}


class TopKIds(Mapping[str, tuple[str, ...]]):
    """`{query: (doc id, ...)}`, queries sorted, each tuple decoded when read.

    A record's top k is kept for every query: at 20,000 queries x 10 ids, a dict of string
    tuples holds 11 MB, this 2 MB, and a check holds two. Reading every query (writing the
    side file, the label queue) decodes them all at once: use `items()`.
    """

    def __init__(self, columns: TopKColumns | None) -> None:
        self._loaded_columns = columns

    @classmethod
    def of(cls, top_k: Mapping[str, Sequence[str]]) -> TopKIds:
        """`top_k` held compactly (queries without ids left out); itself if it already is."""
        if isinstance(top_k, TopKIds):
            return top_k
        items = sorted((query, docs) for query, docs in top_k.items() if len(docs))
        counts = [len(docs) for _, docs in items]
        bounds = np.zeros(len(items) + 1, dtype=np.int64)
        np.cumsum(counts, out=bounds[1:])
        docs = ByteIds.from_strings(list(chain.from_iterable(docs for _, docs in items)))
        return cls(TopKColumns(object_array(query for query, _ in items), bounds, docs))

    @classmethod
    def from_rows(cls, query_ids: ObjectArray, query: IntArray, docs: ByteIds) -> TopKIds:
        """Rows grouped by query code (`query_ids` sorted), ranked within each query."""
        starts = run_starts(query)
        bounds = np.append(starts, len(query)).astype(np.int64)
        return cls(TopKColumns(query_ids[query[starts]], bounds, docs))

    def _columns(self) -> TopKColumns:
        assert self._loaded_columns is not None  # a subclass that loads later overrides this
        return self._loaded_columns

    @property
    def columns(self) -> TopKColumns:
        """The arrays behind the mapping."""
        return self._columns()

    def _decoded(self, i: int) -> tuple[str, ...]:
        columns = self._columns()
        start, end = int(columns.bounds[i]), int(columns.bounds[i + 1])
        width = columns.docs.width
        if width:  # not the offsets of every id (8 bytes each, kept once made)
            offsets = list(range(start * width, (end + 1) * width, width))
        else:
            offsets = columns.docs.offsets[start : end + 1].tolist()
        raw = columns.docs.data[offsets[0] : offsets[-1]].tobytes()
        base = offsets[0]
        return tuple(raw[a - base : b - base].decode() for a, b in pairwise(offsets))

    def __getitem__(self, query: str) -> tuple[str, ...]:
        return self._decoded(self._columns().position[query])

    def get(self, query: str, default: Any = None) -> Any:
        i = self._columns().position.get(query)
        return default if i is None else self._decoded(i)

    def __contains__(self, query: object) -> bool:
        return query in self._columns().position

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns().queries.tolist())

    def __len__(self) -> int:
        return len(self._columns().queries)

    def items(self) -> ItemsView[str, tuple[str, ...]]:
        """Every (query, ids), decoded in one pass (a dict built for the call)."""
        columns = self._columns()
        docs = columns.docs.strings().tolist()
        bounds = columns.bounds.tolist()
        pairs = pairwise(bounds)
        return {
            query: tuple(docs[a:b])
            for query, (a, b) in zip(columns.queries.tolist(), pairs, strict=True)
        }.items()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TopKIds):
            mine, theirs = self._columns(), other._columns()
            return (
                np.array_equal(mine.bounds, theirs.bounds)
                and mine.queries.tolist() == theirs.queries.tolist()
                and np.array_equal(mine.docs.offsets, theirs.docs.offsets)
                and mine.docs.data[: int(mine.docs.offsets[-1])].tobytes()
                == theirs.docs.data[: int(theirs.docs.offsets[-1])].tobytes()
            )
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]  # a mapping: equal by content, not hashable

    def within(self, labelled: set[str], k: int) -> bool:
        """Whether every query is in `labelled` and holds at most `k` ids."""
        columns = self._columns()
        most = int(np.diff(columns.bounds).max()) if len(columns.queries) else 0
        return most <= k and labelled.issuperset(columns.queries.tolist())
