"""Early fail: each gated check's t statistics at the planned looks, batch by batch."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from retrieval_gate.config.stages import check_metric
from retrieval_gate.core.ids import FloatArray, IntArray
from retrieval_gate.gate.checks.compare import ComparisonSettings, Threshold
from retrieval_gate.gate.checks.family import Member, family_levels
from retrieval_gate.gate.checks.slicing import ALL, check_list
from retrieval_gate.stats.sequential import LOOKS, MIN_SIDE, bound, drop_t

_ORDER_STREAM = 29
"""Stream of the draw order under gate.seed, apart from the tests' own streams."""
_CERTAIN = 1e9
"""The t stated for deltas that do not vary (infinite): the result's JSON holds no infinity."""
_UNBOUNDED = frozenset({"dcg"})
"""Measures whose per-query value is not on [0, 1] (the counts are marked `integer`)."""


@dataclass(frozen=True, kw_only=True)
class Crossing:
    """A check whose t statistics reached their bound: the drop is past max_drop over the set."""

    metric: str
    slice: str
    queries: int
    """Queries of the check's slice run when it crossed."""
    size: int
    """Queries of the check's slice in the labelled set."""
    max_drop: float
    """In points (a relative threshold resolved against the baseline's mean on the set)."""
    t: float
    """The smaller of its two t statistics (`evidence`) at this look (deltas that do not vary:
    1e9)."""
    bound: float
    """The t both had to reach: the Student quantile at the level this look spent."""
    level: float
    """This check's share of the early fail's alpha, over all of its looks."""


@dataclass(frozen=True, kw_only=True)
class SequentialRun:
    """How a sequential check went: the looks it took and, when it stopped, why."""

    batch: int
    looks: int
    queries_run: int
    queries_total: int
    alpha: float
    """What the early fail spent (gate.alpha x sequential.alpha_share), across every look
    and gated check."""
    stopped_by: tuple[Crossing, ...] = ()
    untested: tuple[str, ...] = ()
    """Gated metrics the early fail cannot test: their values are not bounded on [0, 1]."""

    @property
    def stopped(self) -> bool:
        """Whether the run stopped early, with FAIL."""
        return bool(self.stopped_by)


def draw_order(size: int, seed: int) -> IntArray:
    """The order the queries are run in: a permutation of range(`size`) seeded by `seed`."""
    return np.random.default_rng([seed, _ORDER_STREAM]).permutation(size).astype(np.int64)


def bounded(metric: str) -> bool:
    """Whether `metric`'s per-query values lie on [0, 1] (a canonical or written name)."""
    spec = check_metric(metric)[0]
    return not spec.measure.integer and spec.name not in _UNBOUNDED


@dataclass(frozen=True, kw_only=True)
class _Check:
    metric: str
    slice: str
    rows: IntArray
    max_drop: float
    level: float


class Monitor:
    """The early fail's checks over one labelled set and its baseline; `look` after each batch,
    in order: it tests at the planned looks (`LOOKS`) the batch reached."""

    def __init__(
        self,
        baseline: Mapping[str, FloatArray],
        slices: Mapping[str, IntArray],
        thresholds: Mapping[str, Threshold],
        overrides: Mapping[str, Mapping[str, Threshold]],
        settings: ComparisonSettings,
        alpha: float,
    ) -> None:
        """`baseline`: metric -> per-query values in the labelled set's order, which the
        slices index. The gated checks with a max_drop share `alpha` as the gate's family
        shares its own (`family_levels`), scaled to sum to it, and each spends its share over
        the planned looks: a union bound over the checks and the looks."""
        self.baseline = baseline
        self.alpha = alpha
        self.size = len(next(iter(baseline.values()), ()))
        self.ran = 0
        """Queries run at the last look: the planned looks up to it are spent."""
        self.untested = tuple(
            metric
            for metric in thresholds
            if not (bounded(metric) and _on_unit_scale(baseline[metric]))
            # The tests are of a drop on [0, 1]: latency, cost and own units wait for the end.
            or thresholds[metric].unit
            or thresholds[metric].direction == "lower"
        )
        found = [
            (metric, name, rows, threshold)
            for metric, name, rows, threshold, reason in check_list(
                slices, thresholds, overrides, settings.min_size
            )
            if not reason and threshold.max_drop is not None and metric not in self.untested
        ]
        members = [
            Member.of(name, baseline[metric][rows], threshold.resolve)
            for metric, name, rows, threshold in found
        ]
        levels, _ = family_levels(members, settings)
        total = sum(levels.values())
        self.checks = [
            _Check(
                metric=metric,
                slice=name,
                rows=rows,
                max_drop=members[i].max_drop or 0.0,
                level=alpha * levels[i] / total,
            )
            for i, (metric, name, rows, _) in enumerate(found)
            if i in levels
        ]
        # The drop the full-set rule needs evidence of: any (significant-drop), or one past
        # max_drop (evidence-of-excess, and non-inferiority, which that evidence fails too).
        self.any_drop = settings.rule == "significant-drop"

    def due(self, ran: int) -> float:
        """The share of each check's level the planned looks between the last look and `ran`
        queries run spend now (several at once when a batch spans them; none at the end,
        where the full set decides)."""
        if ran >= self.size:
            return 0.0
        return sum(
            weight for share, weight in LOOKS if self.ran < math.ceil(share * self.size) <= ran
        )

    def look(self, drawn: IntArray, current: Mapping[str, FloatArray]) -> tuple[Crossing, ...]:
        """The checks past their bound once the queries `drawn` (positions in the labelled
        set, in the order run) scored `current` (metric -> values aligned with `drawn`)."""
        spend = self.due(int(drawn.size))
        self.ran = max(self.ran, int(drawn.size))
        if spend <= 0.0:
            return ()
        crossed = []
        for check in self.checks:
            values = np.asarray(current[check.metric], dtype=np.float64)
            if not _on_unit_scale(values):
                continue  # cannot be bounded: this look cannot test it
            inside = np.isin(drawn, check.rows)
            queries, size = int(inside.sum()), int(check.rows.size)
            if queries < MIN_SIDE or size - queries < MIN_SIDE:
                continue
            deltas = values[inside] - self.baseline[check.metric][drawn[inside]]
            t = min(evidence(deltas, check.max_drop, size, any_drop=self.any_drop))
            needed = bound(check.level * spend, queries)
            if t >= needed:
                crossed.append(
                    Crossing(
                        metric=check.metric,
                        slice=check.slice,
                        queries=queries,
                        size=size,
                        max_drop=check.max_drop,
                        t=min(t, _CERTAIN),
                        bound=needed,
                        level=check.level,
                    )
                )
        return tuple(crossed)


def evidence(
    deltas: FloatArray, max_drop: float, size: int, *, any_drop: bool = True
) -> tuple[float, float]:
    """The t statistics of the two things a full-set failure needs: the drop over the
    labelled set past `max_drop` (its `size` queries drawn without replacement), and a drop
    as the paired test sees one (the queries a sample of the population): any drop with
    `any_drop`, else one past `max_drop`.

    The set's alone would fail what the full set cannot: late in a slice it knows the slice's
    own mean, past max_drop by chance on small slices with nothing changed."""
    over_set = drop_t(deltas, max_drop, population=size)
    shown = drop_t(deltas, 0.0 if any_drop else max_drop)
    return over_set, shown


def _on_unit_scale(values: FloatArray) -> bool:
    return bool(values.size == 0 or (np.min(values) >= 0.0 and np.max(values) <= 1.0))


def stop_line(run: SequentialRun) -> str:
    """One line on how a sequential check went, for the reports (after "sequential: ")."""
    shown = run.stopped_by
    if not run.stopped:
        return (
            f"looked {run.looks} times, every {run.batch} queries, and did not "
            f"stop early: all {run.queries_total} queries ran"
        )
    first = shown[0]
    more = f" and {len(shown) - 1} more" if len(shown) > 1 else ""
    evidence = f"t {first.t:.3g} >= {first.bound:.3g}"
    where = "overall" if first.slice == ALL else f"on {first.slice}"
    return (
        f"stopped early after {run.queries_run} of {run.queries_total} queries: "
        f"{first.metric} {where} dropped past {first.max_drop * 100:.3g}pt over the "
        f"labelled set ({evidence}){more}; the checks below are on the {run.queries_run} "
        "queries run"
    )
