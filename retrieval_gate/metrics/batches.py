"""Scoring a TREC run file a batch of queries at a time: memory set by the batch, not the run."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import repeat
from pathlib import Path

import numpy as np

from retrieval_gate.core.ids import FloatArray, IntArray, object_array
from retrieval_gate.core.qrels import Qrels
from retrieval_gate.core.run import Run
from retrieval_gate.metrics.diversity import DIVERSITY
from retrieval_gate.metrics.evaluate import Scores, evaluate
from retrieval_gate.metrics.parse import parse_metrics
from retrieval_gate.metrics.spec import MetricSpec
from retrieval_gate.readers.fast import DeclinedError
from retrieval_gate.readers.trec import trec_run_batches

BATCH_BYTES = 8 << 20
"""Bytes of the run file scored at a time: large enough that the per-batch overhead (a few
milliseconds) is small beside the batch's work, small enough to bound the memory at about
three times this (the batch's columns, its grade matrix and the metrics' temporaries)."""


def evaluate_run_file(
    path: str | Path,
    qrels: Qrels,
    metrics: Iterable[str | MetricSpec],
    *,
    batch_bytes: int = BATCH_BYTES,
) -> Scores | None:
    """`evaluate(read_run(path), qrels, metrics)`, reading and scoring the TREC run file
    `batch_bytes` at a time and keeping only the per-query values; None when the file must
    be read whole: a line the fast reader declines (the exact reader names it), a query
    whose rows are split by other queries' (trec_eval merges them), diversity metrics."""
    specs = parse_metrics(metrics)
    if any(spec.name in DIVERSITY for spec in specs):
        return None
    labelled = qrels.query_ids
    judged = _QrelsByQuery(qrels)
    values = {str(spec): np.zeros(len(labelled)) for spec in specs}
    seen = np.zeros(len(labelled), dtype=bool)
    ignored: set[str] = set()
    try:
        for run in trec_run_batches(path, batch_bytes):
            where = np.fromiter(
                map(qrels.position.get, run.query_ids.tolist(), repeat(-1)),
                dtype=np.int64,
                count=len(run.query_ids),
            )
            kept = where[where >= 0]  # ascending: both id lists are sorted alike
            if seen[kept].any():
                return None  # a query met again after others: scored whole, as trec_eval does
            seen[kept] = True
            ignored.update(run.query_ids[where < 0].tolist())
            _scatter(values, kept, evaluate(run, judged.of(kept), specs).values)
    except DeclinedError:
        return None
    missing = np.flatnonzero(~seen)
    if len(missing):
        nothing = Run(object_array([]), np.zeros(0, dtype=np.int64), object_array([]), np.zeros(0))
        _scatter(values, missing, evaluate(nothing, judged.of(missing), specs).values)
    return Scores(
        tuple(str(q) for q in labelled),
        specs,
        values,
        tuple(str(q) for q in labelled[missing]),
        tuple(sorted(ignored)),
    )


def _scatter(values: dict[str, FloatArray], rows: IntArray, part: dict[str, FloatArray]) -> None:
    for name, column in part.items():
        values[name][rows] = column


class _QrelsByQuery:
    """The judgments of any set of queries, as Qrels of their own, without a pass over all."""

    def __init__(self, qrels: Qrels) -> None:
        self.qrels = qrels
        sorted_already = bool(np.all(qrels.query[1:] >= qrels.query[:-1]))
        self.order = None if sorted_already else np.argsort(qrels.query, kind="stable")
        self.counts = np.bincount(qrels.query, minlength=len(qrels.query_ids))
        self.starts = np.cumsum(self.counts) - self.counts

    def of(self, queries: IntArray) -> Qrels:
        """The judgments of `queries` (ascending codes), renumbered 0, 1, ..."""
        counts = self.counts[queries]
        within = np.arange(int(counts.sum()), dtype=np.int64)
        rows = within + np.repeat(self.starts[queries] - (np.cumsum(counts) - counts), counts)
        if self.order is not None:
            rows = self.order[rows]
        qrels = self.qrels
        return Qrels(
            qrels.query_ids[queries],
            np.repeat(np.arange(len(queries), dtype=np.int64), counts),
            qrels.doc_bytes.take(rows),
            qrels.grade[rows],
            qrels.source,
        )
