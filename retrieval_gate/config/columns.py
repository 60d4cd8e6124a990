"""What a check column is measured in: which way is better, and its unit."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Direction = Literal["higher", "lower"]

OWN_UNITS = "own"
"""The unit of a score in its own units that has no unit word: shown as plain numbers."""

_OPERATIONAL = re.compile(r"^(latency_(?:p(?:[1-9][0-9]?)|mean)|cost_mean)$")


@dataclass(frozen=True)
class Column:
    """A check column's direction ("higher" is better, or "lower": latency, cost) and unit
    ("" for the [0, 1] scale, shown in points; else a unit word shown beside raw values)."""

    direction: Direction = "higher"
    unit: str = ""

    @property
    def bounded(self) -> bool:
        """Whether the column lies on the [0, 1] scale, where thresholds are in points."""
        return self.unit == ""


RELEVANCE = Column()
"""Every ranking metric, of the final list or of a stage's candidates."""


def operational_column(key: str) -> Column | None:
    """The column of an operational check key (`latency_p95`, `latency_mean`, `cost_mean`),
    or None when `key` is not one."""
    if not _OPERATIONAL.match(key):
        return None
    return Column("lower", "ms" if key.startswith("latency_") else "cost")


_SCALES = {("s", "ms"): 1000.0, ("ms", "ms"): 1.0}
"""Unit words a threshold may be written in -> the column unit and the factor into it."""


def convertible(written: str, unit: str) -> bool:
    """Whether an amount written in `written` converts into a column in `unit`."""
    return written == unit or (written.lower(), unit) in _SCALES


def in_column_units(value: float, written: str, unit: str) -> float:
    """An amount of `value` `written` (a unit word, or "" for a bare number) in `unit`, the
    column's (2 s -> 2000 in a column of ms)."""
    return value * _SCALES.get((written.lower(), unit), 1.0) if written else value
