"""How long one answered query took and what it cost: the wall time and the retriever's word."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from retrieval_gate.core.ids import FloatArray
from retrieval_gate.core.reported import measure, measured_by
from retrieval_gate.errors import RetrieverError


@dataclass(frozen=True)
class Timing:
    """How long one answered query took, and what it cost, as far as anyone measured."""

    latency: float
    """Milliseconds of wall time around the retriever call that answered it (the attempt that
    succeeded, on a monotonic clock), as the client sees it; a batch call's time is split
    evenly among its queries: their share of the wait, whatever order the service took them
    in. Retries and their backoff are not in it: they are failures the run reports."""
    reported: float | None = None
    """The retriever's own latency (ms) for the query, when it reported one (`Reported`)."""
    cost: float | None = None
    """The query's cost in the retriever's unit, when it reported one."""


def timing_of(latency: float, answer: object) -> Timing:
    """A query's timing: the wall time measured, and what the retriever reported (a `Reported`
    answer; `Reported` checked its values, a look-alike's are checked here)."""
    given_latency, given_cost = measured_by(answer)
    if given_latency is None and given_cost is None:
        return Timing(latency)
    try:
        reported = None if given_latency is None else measure(given_latency, "latency")
        cost = None if given_cost is None else measure(given_cost, "cost")
    except ValueError as error:
        raise RetrieverError(f"the retriever reported {error}", mapping=True) from None
    return Timing(latency, reported, cost)


def operational_columns(
    keys: Sequence[str],
    query_ids: Sequence[str],
    timings: Mapping[str, Timing],
    source: Literal["client", "retriever"],
) -> dict[str, FloatArray]:
    """Each operational check's per-query values, aligned with `query_ids`: latency in ms (the
    client's wall time, or with `source` retriever what the retriever reported) or cost; nan
    where nothing was measured (cached, failed, not reported)."""
    columns = {}
    for key in keys:
        values = []
        for query in query_ids:
            timing = timings.get(query)
            if timing is None:
                value = None
            elif not key.startswith("latency_"):
                value = timing.cost
            else:
                value = timing.latency if source == "client" else timing.reported
            values.append(np.nan if value is None else value)
        column = np.asarray(values, dtype=np.float64)
        column.flags.writeable = False
        columns[key] = column
    return columns
