"""Factorising string ids into integer codes, and finding duplicate (query, doc) rows."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from retrieval_gate.errors import InputError

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
ObjectArray = npt.NDArray[np.object_]


def object_array(values: Iterable[str]) -> ObjectArray:
    """A 1-d object array of Python strings (np.array would make a fixed-width unicode array)."""
    items = list(values)
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


def factorize(ids: Sequence[str], *, sort: bool = False) -> tuple[IntArray, ObjectArray]:
    """Codes into the unique ids (first-seen order, or sorted as Python strings with `sort`)."""
    index: dict[str, int] = dict.fromkeys(ids, 0)
    keys = sorted(index) if sort else list(index)
    for code, key in enumerate(keys):
        index[key] = code
    codes = np.fromiter(map(index.__getitem__, ids), dtype=np.int64, count=len(ids))
    return codes, object_array(keys)


def sorted_uniques(codes: IntArray, uniques: ObjectArray) -> tuple[IntArray, ObjectArray]:
    """Re-code `codes` so that the uniques are sorted as Python strings (byte order for UTF-8)."""
    order = np.array(sorted(range(len(uniques)), key=uniques.__getitem__), dtype=np.int64)
    remap = np.empty(len(uniques), dtype=np.int64)
    remap[order] = np.arange(len(uniques), dtype=np.int64)
    return remap[codes], uniques[order]


def first_duplicate(query: IntArray, doc: IntArray, num_docs: int) -> tuple[int, int] | None:
    """Row indices (earlier, later) of the first repeated (query, doc) pair in row order."""
    key = query * max(num_docs, 1) + doc
    ordered = np.sort(key)
    if not np.any(ordered[1:] == ordered[:-1]):
        return None
    order = np.argsort(key, kind="stable")
    key_sorted = key[order]
    repeat = np.flatnonzero(key_sorted[1:] == key_sorted[:-1]) + 1
    later = order[repeat]
    pick = int(np.argmin(later))
    later_row = int(later[pick])
    earlier_row = int(order[np.searchsorted(key_sorted, key_sorted[repeat[pick]])])
    return earlier_row, later_row


def encode_rows(
    queries: Sequence[str],
    docs: Sequence[str],
    *,
    source: str,
    lines: Sequence[int] | None,
    what: str,
    extra_queries: Iterable[str] = (),
) -> tuple[IntArray, ObjectArray, IntArray, ObjectArray]:
    """Query codes, sorted query ids, doc codes and doc ids of rows; a repeated pair is an error."""
    extra = list(extra_queries)
    query, query_ids = factorize([*queries, *extra] if extra else queries, sort=True)
    query = query[: len(queries)]
    doc, doc_ids = factorize(docs)
    return check_unique(query, query_ids, doc, doc_ids, source=source, lines=lines, what=what)


def check_unique(
    query: IntArray,
    query_ids: ObjectArray,
    doc: IntArray,
    doc_ids: ObjectArray,
    *,
    source: str,
    lines: Sequence[int] | None,
    what: str,
) -> tuple[IntArray, ObjectArray, IntArray, ObjectArray]:
    """The codes unchanged, or an error naming both rows of the first repeated (query, doc)."""
    duplicate = first_duplicate(query, doc, len(doc_ids))
    if duplicate is not None:
        earlier, later = duplicate
        pair = f"query {query_ids[query[later]]!r}, doc {doc_ids[doc[later]]!r}"
        if lines is None:
            raise InputError(
                f"duplicate {what} for {pair} (entries {earlier + 1} and {later + 1})",
                source=source,
            )
        raise InputError(
            f"duplicate {what} for {pair}: already given on line {lines[earlier]}; "
            "keep one line per (query, doc)",
            source=source,
            line=lines[later],
        )
    return query, query_ids, doc, doc_ids
