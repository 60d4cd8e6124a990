"""Plain mappings (`{query: {doc: grade}}`, `{query: {doc: score}}`) and JSON files of them."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from retrieval_gate.core.ids import FloatArray, IntArray, ObjectArray, factorize, object_array
from retrieval_gate.core.json_parse import parsed_json
from retrieval_gate.core.judgments import Judgments
from retrieval_gate.core.qrels import Qrels
from retrieval_gate.core.run import Run
from retrieval_gate.errors import InputError
from retrieval_gate.readers.text import open_text


def qrels_from_dict(
    judgments: Mapping[str, Mapping[str, float]], *, source: str = "<qrels dict>"
) -> Qrels:
    """Qrels from `{query: {doc: grade}}`; ids must be strings, grades finite numbers."""
    counts, docs, values = _flatten(judgments, source, "grade")
    query, query_ids = _query_codes(judgments, counts)
    doc_ids = object_array(docs)
    _check_ids(doc_ids, counts, source, "doc")
    qrels = Qrels(query_ids, query, doc_ids, values, source)
    qrels.__dict__["by_query"] = [judgments[q] for q in query_ids.tolist()]  # already built
    return qrels


def run_from_dict(
    results: Mapping[str, Mapping[str, float] | Sequence[str] | Sequence[tuple[str, float]]],
    *,
    source: str = "<run dict>",
    name: str | None = None,
) -> Run:
    """A run from `{query: {doc: score}}`, or `{query: [doc, ...]}` ranked as listed, or
    `{query: [(doc, score), ...]}`. A query mapped to nothing retrieved nothing."""
    if not isinstance(results, Mapping):
        raise InputError(
            f"expected a mapping of query id to results, got {type(results).__name__}",
            source=source,
        )
    if all(isinstance(v, Mapping) for v in results.values()):
        counts, docs, values = _flatten(results, source, "score")  # type: ignore[arg-type]
    else:
        counts, docs, values = _flatten_lists(results, source)
    query, query_ids = _query_codes(results, counts)
    doc_ids = object_array(docs)
    _check_ids(doc_ids, counts, source, "doc")
    return Run(query_ids, query, doc_ids, values, name, source)


def scored_mapping(results: object) -> Mapping[str, Mapping[str, float]] | None:
    """`results` when it is `{query: {doc: score}}` with string ids (scores are checked when
    read), else None. Evaluation reads such a mapping directly, without building a Run."""
    if not isinstance(results, Mapping):
        return None
    for query, docs in results.items():
        if not isinstance(query, str) or not isinstance(docs, Mapping):
            return None
        first = next(iter(docs), "")
        if not isinstance(first, str):
            return None
    return results


def read_json_judgments(path: str | Path) -> Judgments:
    """A JSON file holding `{query: {doc: grade}}` (it names no annotators)."""
    qrels = qrels_from_dict(_load_json(path), source=str(path))
    return Judgments(
        qrels.query_ids, qrels.query, qrels.docs, qrels.grade, None, None, qrels.source
    )


def read_json_run(path: str | Path) -> Run:
    """A JSON file holding `{query: {doc: score}}` (BEIR's results layout)."""
    return run_from_dict(_load_json(path), source=str(path))


def _load_json(path: str | Path) -> Any:
    with open_text(path) as handle:
        try:
            data = parsed_json(handle.read())
        except json.JSONDecodeError as error:
            raise InputError(
                f"invalid JSON: {error.msg} (column {error.colno})",
                source=str(path),
                line=error.lineno,
            ) from None
        except RecursionError:
            raise InputError("nested too deeply to be qrels or a run", source=str(path)) from None
    if not isinstance(data, dict):
        raise InputError("expected a JSON object {query id: {doc id: value}}", source=str(path))
    return data


def _query_codes(nested: Mapping[str, Any], counts: list[int]) -> tuple[IntArray, ObjectArray]:
    """Per-row query codes (rows grouped by query in mapping order) and the sorted query ids."""
    codes, query_ids = factorize(list(nested), sort=True)
    return np.repeat(codes, counts), query_ids


def _flatten(
    nested: Mapping[str, Mapping[str, float]], source: str, what: str
) -> tuple[list[int], list[str], FloatArray]:
    counts: list[int] = []
    docs: list[str] = []
    values: list[float] = []
    for query, inner in nested.items():
        if not isinstance(query, str):
            raise InputError(
                f"query id {query!r} is a {type(query).__name__}; ids are strings", source=source
            )
        if not isinstance(inner, Mapping):
            raise InputError(
                f"query {query!r}: expected a mapping of doc id to {what}, "
                f"got {type(inner).__name__}",
                source=source,
            )
        counts.append(len(inner))
        docs.extend(inner.keys())
        values.extend(inner.values())
    return counts, docs, _finite(values, nested, counts, docs, source, what)


def _flatten_lists(
    nested: Mapping[str, Any], source: str
) -> tuple[list[int], list[str], FloatArray]:
    counts: list[int] = []
    docs: list[str] = []
    values: list[float] = []
    for query, items in nested.items():
        if not isinstance(query, str):
            raise InputError(
                f"query id {query!r} is a {type(query).__name__}; ids are strings", source=source
            )
        if isinstance(items, Mapping):
            pairs: list[tuple[Any, Any]] = list(items.items())
        elif isinstance(items, Sequence) and not isinstance(items, str):
            pairs = [
                (item, -float(rank)) if isinstance(item, str) else _pair(item, query, source)
                for rank, item in enumerate(items, 1)
            ]
        else:
            raise InputError(
                f"query {query!r}: expected a list of doc ids or (doc, score) "
                f"pairs, got {type(items).__name__}",
                source=source,
            )
        if len({doc for doc, _ in pairs}) != len(pairs):
            raise InputError(
                f"query {query!r} lists the same doc twice; list each doc once", source=source
            )
        counts.append(len(pairs))
        docs.extend(doc for doc, _ in pairs)
        values.extend(score for _, score in pairs)
    return counts, docs, _finite(values, nested, counts, docs, source, "score")


def _pair(item: Any, query: str, source: str) -> tuple[Any, Any]:
    if isinstance(item, Sequence) and len(item) == 2:
        return item[0], item[1]
    raise InputError(
        f"query {query!r}: result {item!r} is neither a doc id nor a (doc id, score) pair",
        source=source,
    )


def _finite(
    values: list[float],
    nested: Mapping[str, Any],
    counts: list[int],
    docs: list[str],
    source: str,
    what: str,
) -> FloatArray:
    try:
        array = np.array(values, dtype=np.float64)
        if array.shape == (len(values),) and np.isfinite(array).all():
            return array
    except (TypeError, ValueError):
        pass
    queries = [q for q, count in zip(nested, counts, strict=True) for _ in range(count)]
    for query, doc, value in zip(queries, docs, values, strict=True):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not ok or not math.isfinite(value):
            raise InputError(
                f"query {query!r}, doc {doc!r}: {what} {value!r} is not a finite number",
                source=source,
            )
    raise InputError(f"{what}s must be finite numbers", source=source)


def _check_ids(ids: ObjectArray, counts: list[int], source: str, what: str) -> None:
    """Each query's first id must be a string: ids of the wrong type come from a whole
    source (numbers from a JSON loader, say), so one per query catches them cheaply."""
    firsts = np.cumsum([0, *counts[:-1]])[np.asarray(counts) > 0]
    for value in ids[firsts]:
        if not isinstance(value, str):
            raise InputError(
                f"{what} id {value!r} is a {type(value).__name__}; ids are strings", source=source
            )
