"""The noise probe: a seeded sample of the queries run again, to find a retriever's own noise."""

from __future__ import annotations

import dataclasses
from typing import TextIO

from retrieval_gate.config.schema import GateConfig, NoiseProbeConfig
from retrieval_gate.gate.baseline.repeats import Probe, changed_queries, probe_sample
from retrieval_gate.pipeline.record import CurrentRun, repeated


def probed_run(
    config: GateConfig,
    first: CurrentRun,
    settings: NoiseProbeConfig,
    *,
    progress: TextIO | None = None,
) -> tuple[CurrentRun, Probe]:
    """`first` (one run) and what the probe found; when a re-run query's top k differs,
    `first` and `settings.repeats` - 1 more runs instead (`record.repeated`), whose spread
    the test then allows for, as with gate.repeats."""
    # The probe's few queries go without a progress bar of their own: the noise line says.
    rerun, changed = probe_changes(config, first, settings)
    if not changed:
        return first, Probe(queries=rerun, changed=(), runs=1)
    runs = settings.repeats
    return repeated(config, first, runs, progress=progress), Probe(
        queries=rerun, changed=changed, runs=runs
    )


def probe_changes(
    config: GateConfig,
    first: CurrentRun,
    settings: NoiseProbeConfig,
) -> tuple[int, tuple[str, ...]]:
    """How many sampled queries ran again (a fresh retriever, never from the cache), and the
    sorted ids of those whose top k (and first-stage candidates, with `candidates:`) is not
    `first`'s. A query that failed in either run is not counted: a failure is no ranking."""
    from retrieval_gate.metrics.top_k import top_k_ids
    from retrieval_gate.pipeline.execute import execute

    sample = set(
        probe_sample(first.record.query_ids, settings.share, settings.min_queries, config.gate.seed)
    )
    dataset = dataclasses.replace(
        first.dataset, queries=tuple(q for q in first.dataset.queries if q.id in sample)
    )
    again = execute(config, cache=False, dataset=dataset)
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
