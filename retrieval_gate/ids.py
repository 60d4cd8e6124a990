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


def factorize(
    ids: Sequence[str] | ObjectArray, *, sort: bool = False
) -> tuple[IntArray, ObjectArray]:
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


def first_duplicate(query: IntArray, docs: ObjectArray) -> tuple[int, int] | None:
    """Row indices (earlier, later) of the first repeated (query, doc) pair in row order.

    Rows are bucketed by a 64-bit mix of the query code and the doc's string hash, so no
    doc vocabulary is built; rows sharing a bucket are compared exactly.
    """
    if len(docs) < 2:
        return None
    hashes = np.fromiter(map(hash, docs), dtype=np.int64, count=len(docs)).view(np.uint64)
    with np.errstate(over="ignore"):
        key = hashes ^ (query.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15))
    # A plain sort answers "any repeat?"; the stable argsort that locates it runs on error only.
    ordered = np.sort(key)
    if not np.any(ordered[1:] == ordered[:-1]):
        return None
    order = np.argsort(key, kind="stable")
    key_sorted = key[order]
    candidates = np.flatnonzero(key_sorted[1:] == key_sorted[:-1])
    found: tuple[int, int] | None = None
    for at in candidates.tolist():
        group_start = int(np.searchsorted(key_sorted, key_sorted[at]))
        later = int(order[at + 1])
        for earlier in order[group_start : at + 1].tolist():
            if query[earlier] == query[later] and docs[earlier] == docs[later]:
                if found is None or later < found[1]:
                    found = (int(earlier), later)
                break
    return found


def check_unique(
    query: IntArray,
    query_ids: ObjectArray,
    docs: ObjectArray,
    *,
    source: str,
    lines: Sequence[int] | None,
    what: str,
) -> None:
    """Nothing, or an error naming both rows of the first repeated (query, doc)."""
    duplicate = first_duplicate(query, docs)
    if duplicate is None:
        return
    earlier, later = duplicate
    pair = f"query {query_ids[query[later]]!r}, doc {docs[later]!r}"
    if lines is None:
        raise InputError(
            f"duplicate {what} for {pair} (entries {earlier + 1} and {later + 1})", source=source
        )
    raise InputError(
        f"duplicate {what} for {pair}: already given on line {lines[earlier]}; "
        "keep one line per (query, doc)",
        source=source,
        line=lines[later],
    )
