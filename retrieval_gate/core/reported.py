"""Hits with what the retriever reported about its call: its own latency and a cost."""

from __future__ import annotations

import math
from collections.abc import Iterable
from numbers import Real
from typing import Any

from retrieval_gate.core.model import Hit, StagedHits
from retrieval_gate.core.redaction import redacted
from retrieval_gate.core.wording import excerpt

MAX_MEASURE = 1e15
"""The largest latency (ms), cost or evaluator's score accepted, either way, and so the largest
per-query value the gate compares: past it a value is a unit mistake or garbage. Within it a
difference's square is at most 4e30, so no sum of squares (or of 8th powers, 3e122) over any
number of queries overflows a float, nor loses the precision a report prints."""


class Reported(list[Hit]):
    """A list of hits (what `search` returns) that also carries the retriever's own account of
    the call: `latency` in milliseconds (a search service's `took`) and `cost` in the user's
    unit (tokens, dollars). Either is None when not reported. A python retriever may return
    one; the http adapter builds one from `retriever.latency` and `retriever.cost`."""

    def __init__(
        self, hits: Iterable[Hit] = (), *, latency: float | None = None, cost: float | None = None
    ) -> None:
        super().__init__(hits)
        self.latency = None if latency is None else measure(latency, "latency")
        self.cost = None if cost is None else measure(cost, "cost")


def reported(hits: list[Hit], *, latency: float | None, cost: float | None) -> list[Hit]:
    """`hits` carrying the retriever's latency and cost: a plain list becomes a `Reported`; a
    two-stage answer (`StagedHits`) keeps its class and its candidates, and gains the two."""
    if not isinstance(hits, StagedHits):
        return Reported(hits, latency=latency, cost=cost)
    return _ReportedStages(hits, latency=latency, cost=cost)


class _ReportedStages(StagedHits):
    """A two-stage answer with the retriever's latency and cost, as `Reported` carries them."""

    def __init__(self, staged: StagedHits, *, latency: float | None, cost: float | None) -> None:
        super().__init__(staged, staged.candidates)
        self.latency = None if latency is None else measure(latency, "latency")
        self.cost = None if cost is None else measure(cost, "cost")


def measured_by(answer: object) -> tuple[Any, Any]:
    """The (latency, cost) an answer carries, as given (None when it carries none)."""
    if not isinstance(answer, Reported | _ReportedStages):
        return None, None
    return answer.latency, answer.cost


def measure(value: Any, name: str) -> float:
    """`value` as a latency or cost: a finite number from 0 to MAX_MEASURE. ValueError
    naming `name` otherwise (the caller adds where it came from)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} {shown_value(value)} is not a number")
    number = float(value)
    if not math.isfinite(number) or not 0.0 <= number <= MAX_MEASURE:
        raise ValueError(
            f"{name} {shown_value(value)} is not a finite number from 0 to {MAX_MEASURE:g}"
        )
    return number


def shown_value(value: Any, limit: int = 40) -> str:
    """A retriever's value for an error message: its repr (a failing one shown by its type),
    secrets redacted, on one line, at most `limit` characters and "..."."""
    try:
        text = repr(value)
    except Exception:  # a user object whose __repr__ fails
        text = f"<{type(value).__name__}>"
    return excerpt(redacted(text), limit)
