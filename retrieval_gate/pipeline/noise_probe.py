"""The noise probe: a seeded sample of the queries run again, to find a retriever's own noise."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TextIO

from retrieval_gate.config.schema import GateConfig, NoiseProbeConfig
from retrieval_gate.gate.baseline.repeats import changed_queries, probe_sample
from retrieval_gate.pipeline.record import CurrentRun


def probe_changes(
    config: GateConfig,
    first: CurrentRun,
    settings: NoiseProbeConfig,
    *,
    progress: TextIO | None = None,
    retriever_dir: Path | None = None,
) -> tuple[int, tuple[str, ...]]:
    """How many sampled queries ran again (a fresh retriever, never from the cache), and the
    sorted ids of those whose top k (and first-stage candidates, with `candidates:`) is not
    `first`'s. A query that failed in either run is not counted: a failure is no ranking."""
    from retrieval_gate.metrics.top_k import top_k_ids
    from retrieval_gate.pipeline.execute import execute

    sample = set(
        probe_sample(
            first.record.query_ids, settings.share, settings.min_queries, config.gate.seed
        )
    )
    dataset = dataclasses.replace(
        first.dataset, queries=tuple(q for q in first.dataset.queries if q.id in sample)
    )
    again = execute(
        config, cache=False, progress=progress, retriever_dir=retriever_dir, dataset=dataset
    )
    failed = {*first.failed_queries, *(failure.query_id for failure in again.run.failures)}
    rerun = [q.id for q in dataset.queries if q.id not in failed]
    top = dict(top_k_ids(again.run.run, config.k).items())
    changed = set(changed_queries(first.record.top_k, {q: top.get(q, ()) for q in rerun}))
    if again.stage is not None and first.record.candidates is not None:
        deeper = dict(again.stage.top.items())
        changed.update(
            changed_queries(first.record.candidates, {q: deeper.get(q, ()) for q in rerun})
        )
    return len(rerun), tuple(sorted(changed))
