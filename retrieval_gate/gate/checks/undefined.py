"""Check columns undefined for some queries (a one-class query's `auc`): kept as NaN, compared
on the queries defined on both sides, averaged over the runs that define them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Protocol, TypeVar

import numpy as np

from retrieval_gate.core.ids import FloatArray, IntArray
from retrieval_gate.core.wording import plural
from retrieval_gate.gate.checks.slicing import ALL
from retrieval_gate.metrics.parse import may_be_undefined

__all__ = [
    "defined_checks",
    "defined_mean",
    "defined_rows",
    "excluded_warnings",
]

T = TypeVar("T")


class _Counted(Protocol):
    """A comparison as `excluded_warnings` reads it (`compare.Comparison`)."""

    @property
    def metric(self) -> str: ...
    @property
    def slice(self) -> str: ...
    @property
    def n(self) -> int: ...
    @property
    def excluded(self) -> int: ...


def defined_rows(rows: IntArray, baseline: FloatArray, current: FloatArray) -> IntArray:
    """The `rows` whose value is defined (not NaN) on both sides."""
    if not rows.size:
        return rows
    keep = ~(np.isnan(baseline[rows]) | np.isnan(current[rows]))
    return rows if bool(keep.all()) else rows[keep]


def defined_checks(
    checks: Iterable[tuple[str, str, IntArray, T, str]],
    arrays: Mapping[str, tuple[FloatArray, FloatArray]],
    min_size: int,
) -> Iterator[tuple[str, str, IntArray, T, str, int]]:
    """`slicing.check_list`'s checks with each possibly-undefined metric's rows cut to the
    queries defined on both sides, and how many that left out: its test, interval, power
    and min_size then count the defined queries only. Other metrics pass through."""
    for metric, name, rows, threshold, reason in checks:
        if not may_be_undefined(metric):
            yield metric, name, rows, threshold, reason, 0
            continue
        kept = defined_rows(rows, *arrays[metric])
        if not reason and not kept.size:
            reason = "no queries defined on both sides"
        elif not reason and name != ALL and kept.size < min_size:
            defined = plural(kept.size, "defined query", "defined queries")
            reason = f"{defined}, below min_size {min_size}"
        yield metric, name, kept, threshold, reason, int(rows.size - kept.size)


def excluded_warnings(checks: Iterable[_Counted]) -> list[str]:
    """One line per metric whose overall check left queries out as undefined on a side."""
    return [
        f"{check.metric}: {check.excluded} of {plural(check.n + check.excluded, 'query')} "
        "undefined on a side (one class among their scored documents: no relevant or no "
        f"non-relevant one) are left out of its checks, which compare the other {check.n}"
        for check in checks
        if check.slice == ALL and check.excluded
    ]


def defined_mean(values: FloatArray) -> float:
    """The mean of the defined (not NaN) values; 0.0 when none is."""
    defined = values[~np.isnan(values)]
    return float(defined.mean()) if defined.size else 0.0
