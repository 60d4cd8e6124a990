"""Turning what a retriever returns (ids, pairs, dicts, objects) into ranked `Hit`s."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from numbers import Real
from typing import Any

from retrieval_gate.adapters.base import Hit, RetrieverError

ID_KEYS = ("id", "doc_id", "_id")
SHAPES = (
    "a doc id, an (id, score) pair, a dict with 'id' (or 'doc_id', '_id') and optional "
    "'score', or an object with such attributes"
)


def doc_id(value: Any) -> str:
    """A doc id as a string; integers are accepted (JSON APIs often use them)."""
    if isinstance(value, str) and value:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise ValueError(f"doc id {value!r} is not a non-empty string or an integer")


def score(value: Any) -> float | None:
    """A finite float score, or None when the retriever gives none."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"score {value!r} is not a number")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"score {value!r} is not a finite number")
    return number


def to_hit(item: Any) -> Hit:
    """One result in any of the accepted shapes (see SHAPES); ValueError otherwise."""
    if isinstance(item, Hit):
        return item
    if isinstance(item, (str, int)) and not isinstance(item, bool):
        return Hit(doc_id(item))
    if isinstance(item, (tuple, list)):
        if len(item) != 2:
            raise ValueError(f"got a {len(item)}-item {type(item).__name__}; pairs are (id, score)")
        return Hit(doc_id(item[0]), score(item[1]))
    if isinstance(item, Mapping):
        key = next((key for key in ID_KEYS if key in item), None)
        if key is None:
            raise ValueError(f"got a dict without an id (keys: {', '.join(map(str, item))})")
        return Hit(doc_id(item[key]), score(item.get("score")))
    name = next((name for name in ID_KEYS if getattr(item, name, None) is not None), None)
    if name is None:
        raise ValueError(f"got a {type(item).__name__}; expected {SHAPES}")
    return Hit(doc_id(getattr(item, name)), score(getattr(item, "score", None)))


def to_hits(results: Any, k: int, where: str) -> list[Hit]:
    """The top `k` hits of `results` (a list of items, or a `{doc: score}` mapping) in the
    order given. A doc listed twice (chunks of one document) keeps its first, best place."""
    if isinstance(results, Mapping):
        results = list(results.items())
    if results is None or isinstance(results, (str, bytes)) or not isinstance(results, Iterable):
        raise RetrieverError(
            f"{where} returned {_kind(results)}; expected a list of results, each {SHAPES}"
        )
    hits: dict[str, Hit] = {}
    if k <= 0:
        return []
    for position, item in enumerate(results, 1):
        try:
            hit = to_hit(item)
        except ValueError as error:
            raise RetrieverError(f"{where}: result {position}: {error}") from None
        hits.setdefault(hit.doc_id, hit)
        if len(hits) >= k:
            break
    return list(hits.values())


def _kind(value: Any) -> str:
    return "None" if value is None else f"a {type(value).__name__}"
