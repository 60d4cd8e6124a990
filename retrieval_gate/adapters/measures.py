"""What a search response says of its own request: the service's latency and its cost."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from retrieval_gate.adapters.paths import PathError, Step, select
from retrieval_gate.core.model import Hit
from retrieval_gate.core.reported import measure, reported
from retrieval_gate.errors import RetrieverError

Measures = Mapping[str, tuple[str, tuple[Step, ...]]]
"""`latency` and `cost` -> the path as configured and its steps, for those configured."""


def with_reported(
    answers: list[list[Hit]], data: Any, measures: Measures, name: str
) -> list[list[Hit]]:
    """`answers` carrying the latency and cost the response `data` reports at `measures`'
    paths (`retriever.latency`, `retriever.cost`): one value per answer, or one for them all,
    split evenly. A value missing, or not a finite number from 0 up, is a mapping error
    naming the field: the query fails. `name` names the retriever in the error."""
    if not measures:
        return answers
    values: dict[str, list[float]] = {}
    for field, (path, steps) in measures.items():
        try:
            found = select(data, steps)
            if len(found) not in (1, len(answers)):
                raise PathError(f"{len(found)} values for {len(answers)} queries")
            each = [measure(value, field) for value in found]
        except ValueError as error:  # PathError is one
            raise RetrieverError(
                f"{name}: retriever.{field} ({path}): {error}",
                kind=f"{name}: retriever.{field} ({path}) unreadable",
                mapping=True,
            ) from None
        values[field] = (
            each if len(each) == len(answers) else [each[0] / len(answers)] * len(answers)
        )
    return [
        reported(
            hits,
            latency=values["latency"][i] if "latency" in values else None,
            cost=values["cost"][i] if "cost" in values else None,
        )
        for i, hits in enumerate(answers)
    ]
