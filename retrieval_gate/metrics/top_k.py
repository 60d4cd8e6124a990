"""Each query's top k of a run, in the order the metrics rank them, taken from its arrays."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from retrieval_gate.core.ids import (
    IntArray,
    object_array,
    positions,
    run_starts,
)
from retrieval_gate.core.model import Hit
from retrieval_gate.core.run import Run
from retrieval_gate.core.top_k_ids import TopKIds
from retrieval_gate.metrics.ranking import ranking_order


def ranked_rows(run: Run) -> IntArray | None:
    """The run's rows grouped by query (query code order) and ranked within each query as
    trec_eval ranks them: score descending, doc id descending on ties (DESIGN); None when the
    rows already are (a run file written in rank order, a run that says it is `ranked`)."""
    if run.ranked:
        return None
    order, ties = ranking_order(run.query, run.score, run.doc_bytes.fixed)
    if order is None and ties is None:
        rows = None
    else:
        rows = np.arange(len(run), dtype=np.int64) if order is None else order.astype(np.int64)
        if ties is not None:
            positions, sources = ties
            rows[positions] = rows[sources]
    query = run.query if rows is None else run.query[rows]
    if len(query) and bool(np.any(query[1:] < query[:-1])):  # grouped, not in code order
        by_query = np.argsort(query, kind="stable")
        rows = by_query if rows is None else rows[by_query]
    return rows


def top_rows(run: Run, k: int) -> IntArray:
    """The rows of each query's top `k`, grouped by query code and ranked. Past the ranking,
    memory is proportional to queries x k, not to the run's rows."""
    rows = ranked_rows(run)
    query = run.query if rows is None else run.query[rows]
    n = len(query)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    starts = run_starts(query)
    ends = np.append(starts[1:], n)
    positions = starts[:, None] + np.arange(k, dtype=np.int64)
    positions = positions[positions < ends[:, None]]
    return positions if rows is None else rows[positions]


def top_k_run(run: Run, query_ids: Sequence[str], k: int) -> Run:
    """The rows of `run` that rank in the top `k` of the queries `query_ids`, ranked; every
    one of `query_ids` is a query of the result, those the run lacks retrieving nothing."""
    rows = top_rows(run, k)
    wanted = object_array(sorted(set(query_ids)))
    query = positions(run.query_ids, wanted)[run.query[rows]]
    kept = query >= 0
    rows, query = rows[kept], query[kept]
    docs = run.doc_bytes.take(rows)
    # Grouped by query code (the codes map in order) and ranked: it need not be ranked again.
    return Run(wanted, query, docs, run.score[rows], run.name, run.source, ranked=True)


def top_k_ids(run: Run, k: int) -> TopKIds:
    """`{query: doc ids of its top k}` for every query of `run` that retrieved something."""
    rows = top_rows(run, k)
    return TopKIds.from_rows(run.query_ids, run.query[rows], run.doc_bytes.take(rows))


def listed_run(top_k: Mapping[str, Sequence[str]], query_ids: Sequence[str]) -> Run:
    """Stored top-k lists as a run ranked as listed (each doc scores minus its rank), over the
    sorted `query_ids`; a query without a list retrieved nothing. The lists hold each doc once
    (`baseline` refuses a record that repeats one). Rows are grouped by query code, ascending,
    and ranked within each query (label holes read them in that order, unsorted)."""
    return next(listed_runs(top_k, query_ids, max(len(query_ids), 1)))


def listed_runs(
    top_k: Mapping[str, Sequence[str]], query_ids: Sequence[str], size: int
) -> Iterator[Run]:
    """`listed_run` of the sorted `query_ids`, `size` of them at a time: each block a run over
    its own queries (codes from 0), and only its rows held (no query ids at all: one block)."""
    wanted = object_array(query_ids)
    columns = TopKIds.of(top_k).columns  # a record's own: its arrays as they are
    at = positions(columns.queries, wanted)  # each listed query's code among `wanted`
    for start in range(0, max(len(wanted), 1), size):
        end = min(start + size, len(wanted))
        inside = np.flatnonzero((at >= start) & (at < end))
        starts = columns.bounds[inside]
        counts = columns.bounds[inside + 1] - starts
        total = int(counts.sum())
        rank = np.arange(1, total + 1, dtype=np.int64) - np.repeat(
            np.cumsum(counts) - counts, counts
        )
        everything = total == len(columns.docs)  # the lists, all of them: no copy
        docs = (
            columns.docs if everything else columns.docs.take(np.repeat(starts, counts) + rank - 1)
        )
        query = np.repeat(at[inside] - start, counts)
        yield Run(wanted[start:end], query, docs, -rank.astype(np.float64))


class RankedHits(Mapping[str, tuple[Hit, ...]]):
    """`{query: its hits, ranked}` over a run's arrays; each query's tuple is built when read."""

    def __init__(self, run: Run) -> None:
        self._run = run
        rows = ranked_rows(run)
        self._rows = np.arange(len(run), dtype=np.int64) if rows is None else rows
        query = run.query[self._rows]
        codes = np.arange(len(run.query_ids))
        self._starts = np.searchsorted(query, codes, side="left")
        self._ends = np.searchsorted(query, codes, side="right")
        self._position = {q: i for i, q in enumerate(run.query_ids.tolist())}

    def __getitem__(self, query_id: str) -> tuple[Hit, ...]:
        code = self._position[query_id]
        rows = self._rows[self._starts[code] : self._ends[code]]
        docs = self._run.docs_at(rows).tolist()
        return tuple(map(Hit, docs, self._run.score[rows].tolist()))

    def __iter__(self) -> Iterator[str]:
        return iter(self._position)

    def __len__(self) -> int:
        return len(self._position)
