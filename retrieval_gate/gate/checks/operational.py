"""Latency and cost checks: which pairs were measured, whether they are enforced, their test."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from retrieval_gate.config.columns import operational_column
from retrieval_gate.core.ids import FloatArray, IntArray
from retrieval_gate.core.wording import plural
from retrieval_gate.stats.quantile_tests import quantile_change

_SWAP_STREAM = 11
"""The stream of the quantile swap tests among the generators seeded with gate.seed."""
_QUANTILE = re.compile(r"^latency_p([1-9][0-9]?)$")
ANOTHER_JOB = "the baseline's latencies were measured in another job: report-only"
NOT_INTERLEAVED = (
    "the two sides' latencies were not measured interleaved (repeated runs are not): report-only"
)


@dataclass(frozen=True)
class LatencyRun:
    """How the two sides' latencies were measured in this job, when they were."""

    turns: Mapping[str, int] | None
    """Query id -> its interleaving turn; None when the sides were not interleaved."""
    warmup: tuple[str, ...] = ()
    """Queries whose latency was left out on both sides (run first, cold)."""


@dataclass(frozen=True, kw_only=True)
class Measured:
    """One operational column's pairs: which queries have a value on both sides, the turns
    they ran in, and why the check is report-only ("" when it is enforced)."""

    both: np.ndarray[Any, np.dtype[np.bool_]]
    quantile: float | None
    """The quantile the check gates (0.95 for latency_p95); None for a mean."""
    turns: IntArray | None
    reason: str

    def rows(self, rows: IntArray) -> IntArray:
        """The rows of a slice that were measured on both sides."""
        return rows[self.both[rows]]

    def summary(self, values: FloatArray, direction: str) -> float:
        """The check's statistic of `values` as compare holds them (negated where lower is
        better: the quantile of the column is minus the opposite quantile of its negation)."""
        if self.quantile is None:
            return float(values.mean())
        q = self.quantile if direction == "higher" else 1.0 - self.quantile
        return float(np.quantile(values, q))


class _Check(Protocol):
    @property
    def metric(self) -> str: ...
    @property
    def rows(self) -> IntArray: ...
    @property
    def threshold(self) -> Any: ...


def measured_checks(
    checks: Sequence[tuple[str, str, IntArray, Any, str]], columns: Mapping[str, Measured]
) -> list[tuple[str, str, IntArray, Any, str]]:
    """`slicing.check_list`'s checks with an operational check's rows cut to its measured
    pairs and, unless it is enforced, the reason it is report-only."""
    found = []
    for metric, name, rows, threshold, reason in checks:
        column = columns.get(metric)
        if column is not None:
            rows = column.rows(rows)
            reason = reason or column.reason or ("" if rows.size else "no query measured")
        found.append((metric, name, rows, threshold, reason))
    return found


def swap_p_values(
    p_drop: FloatArray,
    p_rise: FloatArray,
    bound: np.ndarray[Any, np.dtype[np.bool_]],
    cells: Sequence[_Check],
    arrays: Mapping[str, tuple[FloatArray, FloatArray]],
    columns: Mapping[str, Measured],
    *,
    resamples: int,
    seed: int,
) -> None:
    """Replace, in place, the p-values of each quantile check with its paired swap test
    (`stats.quantile_tests`), the queries of one interleaving turn swapped together."""
    for c, cell in enumerate(cells):
        column = columns.get(cell.metric)
        if column is None or column.quantile is None or not cell.rows.size:
            continue
        lower = cell.threshold.direction == "lower"
        base, cur = arrays[cell.metric]
        found = quantile_change(
            base[cell.rows],
            cur[cell.rows],
            1.0 - column.quantile if lower else column.quantile,
            resamples=resamples,
            rng=np.random.default_rng([seed, _SWAP_STREAM, c]),
            blocks=None if column.turns is None else column.turns[cell.rows],
        )
        p_drop[c], p_rise[c], bound[c] = found.p_decrease, found.p_increase, False


def operational_columns(
    metrics: Sequence[str],
    query_ids: Sequence[str],
    scores: tuple[Mapping[str, FloatArray], Mapping[str, FloatArray]],
    latency: LatencyRun | None,
) -> tuple[tuple[dict[str, FloatArray], dict[str, FloatArray]], dict[str, Measured], list[str]]:
    """Both sides' scores ready for compare (an unmeasured value, nan, set to 0: `Measured`
    leaves it out), each operational column's pairs, and notes for the report: the warm-up
    and unmeasured counts, and why latency checks are report-only.

    A latency check is enforced only when both sides were measured in this job, interleaved
    (`latency` with turns): otherwise the machine's load between the runs would be judged as
    the change. A cost check does not depend on the machine: it is always enforced."""
    before, after = dict(scores[0]), dict(scores[1])
    columns: dict[str, Measured] = {}
    notes: list[str] = []
    warm = set(latency.warmup) if latency is not None else set()
    cold = np.asarray([query not in warm for query in query_ids], dtype=np.bool_)
    for metric in metrics:
        if operational_column(metric) is None:
            continue
        is_latency = metric.startswith("latency_")
        ref = np.asarray(before[metric], dtype=np.float64)
        cur = np.asarray(after[metric], dtype=np.float64)
        both = ~(np.isnan(ref) | np.isnan(cur))
        if is_latency and warm:
            both &= cold
        unmeasured = int(np.count_nonzero(~both))
        reason = ""
        turns = None
        if is_latency:
            if latency is None:
                reason = ANOTHER_JOB
            elif latency.turns is None:
                reason = NOT_INTERLEAVED
            else:
                turns = np.asarray([latency.turns.get(q, -1) for q in query_ids], dtype=np.int64)
        matched = _QUANTILE.match(metric)
        columns[metric] = Measured(
            both=both,
            quantile=int(matched[1]) / 100.0 if matched else None,
            turns=turns,
            reason=reason,
        )
        before[metric] = np.where(both, ref, 0.0)
        after[metric] = np.where(both, cur, 0.0)
        if unmeasured:
            warmed = len(warm.intersection(query_ids)) if is_latency else 0
            why = [f"{warmed} warm-up"] if warmed else []
            if unmeasured > warmed:
                why.append(f"{unmeasured - warmed} cached, failed or not reported")
            notes.append(
                f"{metric}: {plural(unmeasured, 'query', 'queries')} left out of the check, "
                f"without a {'latency' if is_latency else 'cost'} on both sides: " + ", ".join(why)
            )
    return (before, after), columns, notes


def filled_runs(
    runs: Sequence[Mapping[str, FloatArray]],
    columns: Mapping[str, Measured],
    means: Mapping[str, FloatArray],
) -> tuple[Mapping[str, FloatArray], ...]:
    """Repeated runs with each unmeasured operational value (nan) set to that query's mean over
    the runs that measured it (`means`, the side's scores: `mean_of_runs`), else 0 (a pair
    `Measured.both` leaves out, never read): a query one run missed then adds no run-to-run
    spread, and the runs' mean stays the scores compared."""
    return tuple(
        {
            **run,
            **{
                metric: np.where(
                    np.isnan(run[metric]), np.nan_to_num(means[metric], nan=0.0), run[metric]
                )
                for metric in columns
            },
        }
        for run in runs
    )
