"""`check --sequential`: the labelled queries in a seeded order, in batches, failing early."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TextIO

import numpy as np

from retrieval_gate.config.check_keys import ranking_keys
from retrieval_gate.config.schema import GateConfig
from retrieval_gate.config.stages import check_metric
from retrieval_gate.core.ids import FloatArray
from retrieval_gate.core.model import Query
from retrieval_gate.datasets import Dataset
from retrieval_gate.execution.runner import RunResult
from retrieval_gate.gate.baseline.comparable import comparable_baseline
from retrieval_gate.gate.baseline.file import read_baseline
from retrieval_gate.gate.baseline.record import (
    Baseline,
    Fingerprints,
    fingerprint_slices,
    restricted_record,
)
from retrieval_gate.gate.baseline.repeats import Noise
from retrieval_gate.gate.checks.compare import Comparison
from retrieval_gate.gate.checks.policy import gate_settings, gate_thresholds
from retrieval_gate.gate.checks.slicing import slice_definition, slice_queries
from retrieval_gate.gate.decide import decide, shown_path
from retrieval_gate.gate.modes.sequential import Crossing, Monitor, SequentialRun, draw_order
from retrieval_gate.gate.result import GateResult
from retrieval_gate.metrics import evaluate
from retrieval_gate.pipeline.candidates import candidates_columns
from retrieval_gate.pipeline.check_plan import CheckPlan
from retrieval_gate.pipeline.execute import Looks
from retrieval_gate.pipeline.record import record_current


def check_sequential(plan: CheckPlan, *, progress: TextIO | None = None) -> GateResult:
    """The retriever on the labelled queries in a seeded random order, a batch at a time.

    After each batch that reaches a planned look every gated check is tested
    (`gate.sequential.Monitor`); once one shows the drop over the labelled set past max_drop,
    no more queries are run and the result fails, its comparisons on the queries run and
    marked partial. Never passes early: when no check stops it, every query runs and the
    decision is `check`'s.
    """
    config, sequential, source = plan.config, plan.sequential, plan.baseline
    assert sequential is not None  # the plan stops early
    stored = read_baseline(source)
    batch = sequential.batch or config.retriever.concurrency
    state = _State()

    def order(dataset: Dataset) -> Sequence[Query]:
        state.start(stored, config, dataset, sequential.alpha_share)
        return [dataset.queries[i] for i in state.order]

    def stop(dataset: Dataset, result: RunResult) -> bool:
        return state.look(config, dataset, result)

    current = record_current(
        config,
        cache=plan.cache,
        refresh_cache=plan.refresh_cache,
        prove_cache=not plan.trust_cache,
        progress=progress,
        looks=Looks(order, batch, stop),
    )
    total = len(current.dataset.queries)
    run = SequentialRun(
        batch=batch,
        looks=state.looks,
        queries_run=total - len(current.unrun),
        queries_total=total,
        alpha=config.gate.alpha * sequential.alpha_share,
        stopped_by=state.crossed if current.unrun else (),
        untested=state.untested,
    )
    reference = f"baseline {shown_path(source)}"
    if not current.unrun:
        result = decide(
            stored,
            current.record,
            config,
            current.dataset,
            current.warnings,
            failed_queries=current.failed_queries,
            reference=reference,
        )
        return dataclasses.replace(result, sequential=run, noise=_unprobed(result, plan))
    keep = [query.id for query in current.dataset.queries if query.id not in set(current.unrun)]
    baseline, note = comparable_baseline(stored, current.record, current.dataset)
    partial = dataclasses.replace(
        current.dataset, queries=tuple(q for q in current.dataset.queries if q.id in set(keep))
    )
    result = decide(
        restricted_record(baseline, keep),
        restricted_record(current.record, keep),
        config,
        partial,
        (*current.warnings, *((note,) if note else ())),
        failed_queries=current.failed_queries,
        reference=reference,
        # The looks decided: the queries run may be too few for a check to fail on its own.
        strict=False,
    )
    return dataclasses.replace(
        result,
        comparisons=_failed(result.comparisons, run.stopped_by),
        sequential=run,
        noise=_unprobed(result, plan),
    )


def _unprobed(result: GateResult, plan: CheckPlan) -> Noise:
    """`result`'s noise block, saying why the noise probe did not run."""
    return dataclasses.replace(result.noise, unprobed=plan.unprobed)


class _State:
    """What the looks of one sequential run share: the order, the monitor, its findings."""

    def __init__(self) -> None:
        self.order = np.zeros(0, dtype=np.int64)
        self.monitor: Monitor | None = None
        self.looks = 0
        self.crossed: tuple[Crossing, ...] = ()
        self.untested: tuple[str, ...] = ()
        self.drawn = np.zeros(0, dtype=np.int64)
        """Positions in the labelled set of the queries run so far, in the order run."""
        self.current: dict[str, FloatArray] = {}
        """Metric -> the current values of `drawn`."""

    def start(self, stored: Baseline, config: GateConfig, dataset: Dataset, share: float) -> None:
        """Check the baseline can be compared before any call, then ready the checks."""
        baseline = _comparable_now(stored, config, dataset)
        position = {query_id: i for i, query_id in enumerate(baseline.query_ids)}
        rows = np.asarray([position[q.id] for q in dataset.queries], dtype=np.int64)
        slices = slice_queries(
            dataset.queries,
            config.slices.by,
            config.slices.combine,
            config.slices.query_length.bins,
        )
        thresholds, overrides = gate_thresholds(config)
        settings = gate_settings(config)
        self.monitor = Monitor(
            {metric: baseline.scores[metric][rows] for metric in thresholds},
            slices,
            thresholds,
            overrides,
            settings,
            settings.alpha * share,
        )
        self.untested = self.monitor.untested
        self.current = {metric: np.zeros(0) for metric in self.monitor.baseline}
        self.order = draw_order(len(dataset.queries), config.gate.seed)

    def look(self, config: GateConfig, dataset: Dataset, batch: RunResult) -> bool:
        """Score the answers of the batch just run and look at every answer so far: whether
        a check showed its drop. Only the new batch is scored (per-query values do not
        depend on the other queries), against its own queries' judgments."""
        assert self.monitor is not None
        self.looks += 1
        ran = {*batch.hits, *(failure.query_id for failure in batch.failures)}
        window = self.order[len(self.drawn) :].tolist()
        new = np.asarray([i for i in window if dataset.queries[i].id in ran], dtype=np.int64)
        keep = np.isin(dataset.qrels.query_ids, [dataset.queries[i].id for i in new])
        qrels = dataset.qrels.restricted(keep)
        relevance = ranking_keys(config.metrics)
        scores = evaluate(batch.run, qrels, relevance, dataset.subtopics)
        values = dict(scores.values)  # and the candidates: checks, on the same queries
        described = config.retriever.model_dump()
        values |= candidates_columns(config, qrels, dataset.subtopics, batch, described)
        position = {query_id: i for i, query_id in enumerate(scores.query_ids)}
        rows = np.asarray([position[dataset.queries[i].id] for i in new], dtype=np.int64)
        self.drawn = np.concatenate([self.drawn, new])
        for metric in self.monitor.baseline:
            self.current[metric] = np.concatenate([self.current[metric], values[metric][rows]])
        self.crossed = self.monitor.look(self.drawn, self.current)
        return bool(self.crossed)


def _comparable_now(stored: Baseline, config: GateConfig, dataset: Dataset) -> Baseline:
    """`stored`, re-scored if only the judgments changed; NotComparableError (exit 2) before
    any query is paid for when it cannot be compared at all."""
    slices = config.slices
    definition = slice_definition(
        slices.by, slices.combine, slices.query_length.bins, slices.min_size
    )
    fingerprints = Fingerprints(
        dataset=dataset.fingerprint,
        k=config.k,
        metrics=tuple(check_metric(key)[1] for key in config.metrics),
        slices=fingerprint_slices(definition),
        retriever="",
        queries=dataset.queries_fingerprint,
    )
    ids = tuple(sorted(q.id for q in dataset.queries))
    stand_in = dataclasses.replace(stored, fingerprints=fingerprints, query_ids=ids)
    baseline, _ = comparable_baseline(stored, stand_in, dataset)
    return baseline


def _failed(
    comparisons: Sequence[Comparison], crossed: Sequence[Crossing]
) -> tuple[Comparison, ...]:
    """The comparisons, those the early fail stopped on marked regressed."""
    stopped = {(c.metric, c.slice) for c in crossed}
    return tuple(
        dataclasses.replace(c, verdict="regressed", failed=True, gated=True, reason="")
        if (c.metric, c.slice) in stopped
        else c
        for c in comparisons
    )
