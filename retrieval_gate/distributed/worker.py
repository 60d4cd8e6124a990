"""What a Dask worker runs on one shard: the metric engine on its queries, values out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from retrieval_gate.core.ids import FloatArray, ObjectArray, object_array
from retrieval_gate.core.qrels import Qrels
from retrieval_gate.distributed.shards import read_shard
from retrieval_gate.metrics import evaluate


@dataclass(frozen=True)
class ShardScores:
    """One shard's per-query values: all that travels back from a worker."""

    shard: str
    query_ids: ObjectArray
    """The labelled queries the shard retrieved for, sorted."""
    values: dict[str, FloatArray]
    """One array per metric, aligned with `query_ids`."""
    missing: tuple[str, ...]
    """Its labelled queries with no result row (none, from a file)."""
    ignored: ObjectArray
    """The shard's queries the qrels do not label."""


def score_shard(path: str, format: str | None, qrels: Qrels, metrics: Sequence[str]) -> ShardScores:
    """Score shard `path` against the judgments of its own queries in `qrels`: the same
    `evaluate` as one process, so every value is the one it would give."""
    run = read_shard(Path(path), format)
    at = np.searchsorted(qrels.query_ids, run.query_ids)
    at = np.minimum(at, len(qrels.query_ids) - 1)  # qrels are never empty (read_judgments)
    labelled = qrels.query_ids[at] == run.query_ids
    keep = np.zeros(len(qrels.query_ids), dtype=bool)
    keep[at[labelled]] = True
    scores = evaluate(run, restricted(qrels, keep), metrics)
    return ShardScores(
        path,
        object_array(scores.query_ids),
        scores.values,
        scores.missing_queries,
        run.query_ids[~labelled],
    )


def restricted(qrels: Qrels, keep: np.ndarray) -> Qrels:
    """The judgments of the queries marked in `keep` (aligned with `query_ids`), renumbered,
    their doc ids kept as bytes (`Qrels.restricted` would make a string per row)."""
    rows = np.flatnonzero(keep[qrels.query])
    remap = np.cumsum(keep) - 1
    return Qrels(
        qrels.query_ids[keep],
        remap[qrels.query[rows]],
        qrels.doc_bytes.take(rows),
        qrels.grade[rows],
        qrels.source,
    )
