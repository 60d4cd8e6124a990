"""A record made of repeated runs (their mean), and what the repeats say about the noise."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from retrieval_gate.core.ids import FloatArray
from retrieval_gate.errors import GateError
from retrieval_gate.gate.baseline.record import Baseline, Repeats

PROBE_STREAM = 0x9E0B
"""Seeds the noise probe's sample apart from every other use of gate.seed."""


@dataclass(frozen=True, kw_only=True)
class Probe:
    """What the noise probe found: a sample of the queries run again on the current side."""

    queries: int
    """Queries re-run (those that failed in either run are not counted)."""
    changed: tuple[str, ...]
    """Sorted ids of the re-run queries whose top k differed from the first run's."""
    runs: int
    """Runs of each side the check then made: 1 when nothing changed."""


@dataclass(frozen=True, kw_only=True)
class Noise:
    """What the repeated runs of both sides say: how many runs, and which queries varied."""

    reference_runs: int
    current_runs: int
    queries: int
    varying: tuple[str, ...]
    """Sorted ids of the queries whose top k differed between runs of the same side."""
    probe: Probe | None = None
    """The noise probe's finding; None when it did not run (`unprobed` says why)."""
    unprobed: str = ""
    """Why the noise was not probed ("" when it was, or when nothing asked for it)."""


def averaged(records: Sequence[Baseline]) -> Baseline:
    """One record of repeated runs: the per-query mean of their scores (over the runs that
    define it, for a metric undefined for some queries: `mean_of_runs`), the first run's top k
    and provenance, and the runs themselves (`Baseline.repeats`). One record is returned as is.

    Raises GateError when the runs are not of one retriever on one labelled set."""
    if not records:
        raise GateError("no runs to average")
    first = records[0]
    if len(records) == 1:
        return first
    for other in records[1:]:
        if other.fingerprints != first.fingerprints or other.query_ids != first.query_ids:
            raise GateError(
                "the repeated runs differ in what they measured (labelled set, k, metrics or "
                "retriever changed between runs); run the gate again"
            )
    metrics = first.fingerprints.metrics
    runs: list[Mapping[str, FloatArray]] = [r.scores for r in records]
    mean = {}
    for metric in metrics:
        values = mean_of_runs([run[metric] for run in runs])
        values.flags.writeable = False
        mean[metric] = values
    # Every query's ids decoded at once: a record's top k decodes per read (`TopKIds`).
    lists = [dict(r.top_k.items()) for r in records]
    varying = tuple(
        query
        for query in first.query_ids
        if any(other.get(query, ()) != lists[0].get(query, ()) for other in lists[1:])
    )
    return dataclasses.replace(
        first, scores=mean, repeats=Repeats(runs=tuple(runs), varying=varying)
    )


def runs_of(record: Baseline) -> tuple[Mapping[str, FloatArray], ...]:
    """The runs a record's scores are the mean of: its repeats, or its scores alone."""
    return record.repeats.runs if record.repeats is not None else (record.scores,)


def noise_of(reference: Baseline, current: Baseline) -> Noise:
    """The repeats of both records in short, for the reports' noise line."""
    varying: set[str] = set()
    for record in (reference, current):
        if record.repeats is not None:
            varying.update(record.repeats.varying)
    return Noise(
        reference_runs=len(runs_of(reference)),
        current_runs=len(runs_of(current)),
        queries=len(current.query_ids),
        varying=tuple(sorted(varying)),
    )


def probe_sample(query_ids: Sequence[str], share: float, least: int, seed: int) -> tuple[str, ...]:
    """The queries the noise probe re-runs: a seeded sample of `share` of them (rounded up),
    at least `least` (all of them when fewer), in their given order."""
    size = min(len(query_ids), max(least, math.ceil(share * len(query_ids))))
    rng = np.random.default_rng([seed, PROBE_STREAM])
    chosen = np.sort(rng.choice(len(query_ids), size=size, replace=False))
    return tuple(query_ids[i] for i in chosen.tolist())


def changed_queries(
    first: Mapping[str, Sequence[str]], again: Mapping[str, Sequence[str]]
) -> tuple[str, ...]:
    """Sorted ids of the queries `again` re-ran whose top k is not `first`'s."""
    return tuple(sorted(q for q, top in again.items() if tuple(top) != tuple(first.get(q, ()))))


def noise_document(noise: Noise) -> dict[str, object]:
    """`noise` for the JSON result: the probe's keys only when it ran or was asked for and
    could not, so results without it read as before."""
    found = dataclasses.asdict(noise)
    if noise.probe is None:
        del found["probe"]
    if not noise.unprobed:
        del found["unprobed"]
    return found


def mean_of_runs(runs: Sequence[FloatArray]) -> FloatArray:
    """Per-query mean of repeated runs over the runs that define each query; NaN where none
    does (a plain mean where every value is defined)."""
    stacked = np.asarray(runs, dtype=np.float64)
    defined = ~np.isnan(stacked)
    counts = defined.sum(axis=0)
    total = np.where(defined, stacked, 0.0).sum(axis=0)
    mean = np.full(stacked.shape[1:], np.nan)
    np.divide(total, counts, out=mean, where=counts > 0)
    return mean
