"""Turning what a retriever returns (ids, pairs, dicts, objects) into ranked `Hit`s."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from numbers import Real
from typing import Any

from retrieval_gate.core.model import MAX_CANDIDATES, Hit, StagedHits
from retrieval_gate.core.redaction import redacted
from retrieval_gate.core.wording import excerpt
from retrieval_gate.errors import RetrieverError

ID_KEYS = ("id", "doc_id", "_id")
SHAPES = (
    "a doc id, an (id, score) pair, a dict with 'id' (or 'doc_id', '_id') and optional "
    "'score', or an object with such attributes"
)


# Keys of a dict of parallel lists (`{"ids": [...], "scores": [...]}`, Chroma's query result),
# most telling first: the hint converting one names the lists it found.
LIST_ID_KEYS = ("ids", "doc_ids", "document_ids", "_ids", "docs", "documents", "keys")
LIST_SCORE_KEYS = ("scores", "similarities", "relevance_scores", "distances")
LOWER_IS_BETTER = ("distances",)
SHOWN = 60
"""Characters of a returned value quoted in a message."""


def shown(value: Any, limit: int = SHOWN) -> str:
    """A short, inert repr of what user code returned, for a message: secrets redacted, on
    one line, control characters as `?`, cut to `limit` characters."""
    try:
        text = repr(value)
    except Exception:  # a user object whose __repr__ fails
        text = f"<{type(value).__name__}>"
    return excerpt(redacted(text), limit)


def doc_id(value: Any) -> str:
    """A doc id as a string; integers are accepted (JSON APIs often use them)."""
    if isinstance(value, str) and value:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise ValueError(f"doc id {shown(value)} is not a non-empty string or an integer")


def score(value: Any) -> float | None:
    """A finite float score, or None when the retriever gives none."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"score {shown(value)} is not a number")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"score {shown(value)} is not a finite number")
    return number


def hit_text(value: Any) -> str | None:
    """A hit's text when the retriever returned a string; anything else is no text (the
    field was never required, so a number or a nested object there is not an error)."""
    return value if isinstance(value, str) else None


def to_hit(item: Any) -> Hit:
    """One result in any of the accepted shapes (see SHAPES); ValueError otherwise."""
    if isinstance(item, Hit):
        return item
    if isinstance(item, (str, int)) and not isinstance(item, bool):
        return Hit(doc_id(item))
    if isinstance(item, (tuple, list)):
        if len(item) != 2:
            raise ValueError(f"it has {len(item)} items; pairs are (id, score)")
        return Hit(doc_id(item[0]), score(item[1]))
    if isinstance(item, Mapping):
        key = next((key for key in ID_KEYS if key in item), None)
        if key is None:
            keys = ", ".join(shown(key, 30) for key in list(item)[:10]) or "none"
            idish = next(
                (k for k in item if isinstance(k, str) and ("id" in k.lower() or "doc" in k)),
                None,
            )
            rename = f"; if {shown(idish, 30)} is the doc id, name it 'id'" if idish else ""
            raise ValueError(f"it has no 'id', 'doc_id' or '_id' key (its keys: {keys}){rename}")
        return Hit(doc_id(item[key]), score(item.get("score")), hit_text(item.get("text")))
    name = next((name for name in ID_KEYS if getattr(item, name, None) is not None), None)
    if name is None:
        raise ValueError("it has no id, doc_id or _id attribute")
    return Hit(
        doc_id(getattr(item, name)),
        score(getattr(item, "score", None)),
        hit_text(getattr(item, "text", None)),
    )


def to_hits(results: Any, k: int, where: str) -> list[Hit]:
    """The top `k` hits of `results` (a list of items, or a `{doc: score}` mapping) in the
    order given. A doc listed twice (chunks of one document) keeps its first, best place.
    An error names what was returned (see `shown`) and the shapes accepted."""
    if isinstance(results, Mapping):
        try:
            return _first_hits(list(results.items()), k)
        except _ResultError as error:
            raise RetrieverError(_mapping_error(results, error, where)) from None
    if results is None or isinstance(results, (str, bytes)) or not isinstance(results, Iterable):
        raise RetrieverError(
            f"{where} returned {_kind(results)}; expected a list of results, each {SHAPES}"
        )
    try:
        return _first_hits(results, k)
    except _ResultError as error:
        raise RetrieverError(
            f"{where}: result {error.position} is {_kind(error.item)}: {error.problem}; "
            f"each result must be {SHAPES}"
        ) from None


STAGED_KEYS = frozenset({"hits", "candidates"})
"""The keys of a two-stage answer: `{"hits": final ranking, "candidates": first stage}`."""


def to_ranking(results: Any, k: int, where: str) -> list[Hit]:
    """`to_hits` of `results`, or of a two-stage answer `{"hits": [...], "candidates": [...]}`
    (exactly those keys): its top `k` hits carrying its first MAX_CANDIDATES candidates
    (a `StagedHits`). Each list takes any of the shapes `to_hits` does."""
    if isinstance(results, Mapping) and results.keys() == STAGED_KEYS:
        hits = to_hits(results["hits"], k, f"{where} (its 'hits')")
        candidates = to_hits(results["candidates"], MAX_CANDIDATES, f"{where} (its 'candidates')")
        return StagedHits(hits, candidates)
    return to_hits(results, k, where)


class _ResultError(Exception):
    def __init__(self, position: int, item: Any, problem: str) -> None:
        super().__init__(problem)
        self.position, self.item, self.problem = position, item, problem


def _first_hits(results: Iterable[Any], k: int) -> list[Hit]:
    hits: dict[str, Hit] = {}
    if k <= 0:
        return []
    for position, item in enumerate(results, 1):
        try:
            hit = to_hit(item)
        except ValueError as error:
            raise _ResultError(position, item, str(error)) from None
        hits.setdefault(hit.doc_id, hit)
        if len(hits) >= k:
            break
    return list(hits.values())


def _mapping_error(results: Mapping[Any, Any], error: _ResultError, where: str) -> str:
    """Why a returned dict is not results, and how to turn it into results when it looks
    like parallel lists or a wrapper around a list of results."""
    returned = f"{where} returned {_kind(results)}"
    convert = _parallel_lists(results)
    if convert is not None:
        return f"{returned}, parallel lists rather than a list of results; {convert}; {_EACH}"
    wrapped = _wrapped_list(results)
    if wrapped is not None:
        return (
            f"{returned}, not a list of results; return the list inside it: "
            f"return result[{_key(wrapped)}] ({_EACH})"
        )
    key = error.item[0]
    return (
        f"{returned}, read as {{doc id: score}}, but entry {shown(key, 30)} does not fit: "
        f"{error.problem}; return a list of results instead, each {SHAPES}"
    )


_EACH = f"each result must be {SHAPES}"


def _parallel_lists(results: Mapping[Any, Any]) -> str | None:
    """How to zip a dict of parallel lists (ids and scores, or Chroma's one list per query)
    into (id, score) pairs, or None when `results` does not look like one."""
    lists = {
        key: value
        for key, value in results.items()
        if isinstance(key, str) and isinstance(value, list | tuple)
    }
    ids = next((key for key in LIST_ID_KEYS if key in lists), None)
    if ids is None:
        return None
    nested = bool(lists[ids]) and all(isinstance(v, list | tuple) for v in lists[ids])
    first = "[0]" if nested else ""  # Chroma: one list per query text
    scores = next((key for key in LIST_SCORE_KEYS if key in lists), None)
    id_list = f"result[{_key(ids)}]{first}"
    if scores is None:
        return f"return the ids in rank order: return list({id_list})"
    score_list = f"result[{_key(scores)}]{first}"
    if scores in LOWER_IS_BETTER:
        return (
            f"convert it: return [(doc, -distance) for doc, distance in zip({id_list}, "
            f"{score_list})] (a smaller distance is a better match, so it is negated: "
            "higher scores rank first)"
        )
    return f"convert it: return list(zip({id_list}, {score_list}))"


def _wrapped_list(results: Mapping[Any, Any]) -> Any:
    """The key of the one list of results inside a wrapper dict ({"hits": [...], ...})."""
    for key, value in results.items():
        if isinstance(key, str) and isinstance(value, list | tuple) and value:
            try:
                to_hit(value[0])
            except ValueError:
                continue
            return key
    return None


def _key(key: str) -> str:
    """A dict key as a Python string literal, ASCII only (control characters escaped)."""
    return excerpt(json.dumps(redacted(key)), 40)


def _kind(value: Any) -> str:
    return "None" if value is None else f"a {type(value).__name__} {shown(value)}"
