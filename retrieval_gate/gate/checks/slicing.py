"""Slices: named subsets of the labelled queries, by metadata field, query length or both."""

from __future__ import annotations

import bisect
import difflib
import itertools
import math
import operator
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeVar

import numpy as np

from retrieval_gate.core.ids import IntArray
from retrieval_gate.core.model import Query
from retrieval_gate.core.wording import plural
from retrieval_gate.errors import GateError

ALL = "all"
"""The slice of every labelled query; always present and always gated."""

QUERY_LENGTH = "query_length"
"""The computed field: whitespace tokens of the query text, bucketed by the configured bins.
It wins over a metadata field of the same name."""

NONE = "(none)"
"""The value of a query whose field is missing, null or an empty list."""


def slice_queries(
    queries: Sequence[Query],
    by: Sequence[str],
    combine: Sequence[Sequence[str]],
    bins: Sequence[int],
) -> dict[str, IntArray]:
    """Slice name -> sorted int64 indices into `queries`: `all` first, then the rest by name.

    Each field in `by` makes one slice per value (`intent=billing`); each combination in
    `combine` makes one slice per combination of values, fields in the order given
    (`intent=billing&segment=free`). Values become strings: booleans `true`/`false`,
    integral floats as integers, a missing field, null or NaN `(none)`. A list value puts the
    query in one slice per element: a query tagged with two intents is in both, so slices of
    one field may overlap and need not add up to `all`. An object value is an error.
    """
    groups, labels = _labelled(queries, by, combine, bins)

    # Grouped by the values first (a name per query would be costly), then named. A query
    # with a list value goes to several groups; a one-field combination repeats a `by` slice
    # and a value holding `&` can spell another slice's name: parts of one name are merged.
    members: dict[str, list[IntArray]] = {}
    for group in groups:
        columns = [labels[field] for field in group]
        for values, indices in _grouped(columns).items():
            name = "&".join(f"{field}={value}" for field, value in zip(group, values, strict=True))
            members.setdefault(name, []).append(indices)

    slices: dict[str, IntArray] = {ALL: np.arange(len(queries), dtype=np.int64)}
    for name in sorted(members):
        parts = members[name]
        slices[name] = parts[0] if len(parts) == 1 else np.unique(np.concatenate(parts))
    return slices


def _grouped(columns: Sequence[Sequence[tuple[str, ...]]]) -> dict[tuple[str, ...], IntArray]:
    """Each combination of labels, one from each column, -> the sorted rows that have it."""
    rows = len(columns[0]) if columns else 0
    if rows == 0:
        return {}
    if all(max(map(len, column), default=1) == 1 for column in columns):
        # One value per cell, the usual case: code the combinations and sort the rows once.
        firsts = [list(map(operator.itemgetter(0), column)) for column in columns]
        keys = list(zip(*firsts, strict=True))
        position = {key: code for code, key in enumerate(dict.fromkeys(keys))}
        codes = np.fromiter(map(position.__getitem__, keys), dtype=np.int64, count=rows)
        order = np.argsort(codes, kind="stable")
        bounds = np.cumsum(np.bincount(codes, minlength=len(position)))[:-1]
        return dict(zip(position, np.split(order, bounds), strict=True))
    by_values: dict[tuple[str, ...], list[int]] = {}
    for index, cells in enumerate(zip(*columns, strict=True)):
        for values in itertools.product(*cells):
            by_values.setdefault(values, []).append(index)
    return {values: np.array(indices, dtype=np.int64) for values, indices in by_values.items()}


def check_slicing(
    queries: Sequence[Query],
    by: Sequence[str],
    combine: Sequence[Sequence[str]],
    bins: Sequence[int],
) -> None:
    """Raise the GateError `slice_queries` would raise, without building the slices."""
    _labelled(queries, by, combine, bins)


def _labelled(
    queries: Sequence[Query],
    by: Sequence[str],
    combine: Sequence[Sequence[str]],
    bins: Sequence[int],
) -> tuple[list[tuple[str, ...]], dict[str, list[tuple[str, ...]]]]:
    """The groups of fields to slice by, and each field's labels of every query (`_column`)."""
    groups = _groups(by, combine)
    fields = list(dict.fromkeys(field for group in groups for field in group))
    _check_fields(queries, by, combine)
    if QUERY_LENGTH in fields:
        _check_bins(bins)
    return groups, {field: _column(queries, field, bins) for field in fields}


def slice_definition(
    by: Sequence[str], combine: Sequence[Sequence[str]], bins: Sequence[int], min_size: int
) -> dict[str, Any]:
    """A canonical, JSON-able description of the slicing, hashed into the baseline fingerprint.

    Orders that do not change the slices are sorted away; the order inside a combination is
    kept because it spells the slice names. The bins count only when query length is used.
    """
    uses_length = QUERY_LENGTH in by or any(QUERY_LENGTH in group for group in combine)
    return {
        "by": sorted(set(by)),
        "combine": [list(group) for group in sorted({tuple(group) for group in combine})],
        "query_length_bins": [int(b) for b in bins] if uses_length else None,
        "min_size": int(min_size),
    }


def small_slices(slices: Mapping[str, IntArray], min_size: int) -> dict[str, str]:
    """Slice -> why it is reported but not gated, for slices with fewer than `min_size` queries."""
    small: dict[str, str] = {}
    for name, members in slices.items():
        # The overall mean is always gated: a small labelled set is still the whole set, and
        # skipping it would let every change pass.
        if name == ALL or len(members) >= min_size:
            continue
        small[name] = f"{plural(len(members), 'query')}, below min_size {min_size}"
    return small


def same_as_all(slices: Mapping[str, IntArray]) -> list[str]:
    """The slices other than `all` that hold exactly its queries, in `slices`' order.

    Such a slice (query_length=6+ when every query has 6 words or more, a field with one value)
    is the overall check again: gated, it would print each failure twice and take a share of
    alpha for nothing. `compare` leaves it out, and `lint` warns about it."""
    every = np.asarray(slices.get(ALL, ()), dtype=np.int64)
    if not every.size:
        return []
    every = np.sort(every)
    return [
        name
        for name, members in slices.items()
        if name != ALL
        and len(members) == every.size
        and np.array_equal(np.sort(np.asarray(members, dtype=np.int64)), every)
    ]


def same_as_all_warning(names: Sequence[str], total: int) -> str:
    """What `check` and `power` say of `same_as_all`'s slices."""
    one = len(names) == 1
    return (
        f"{'slice' if one else 'slices'} {', '.join(names)} {'holds' if one else 'hold'} all "
        f"{plural(total, 'query', 'queries')}: {'it' if one else 'each'} would repeat the "
        "overall check (each failure twice, a share of alpha for nothing), so "
        f"{'it is' if one else 'they are'} not checked on {'its' if one else 'their'} own; "
        "`retrieval-gate lint` says what to change in slices"
    )


def query_length_label(tokens: int, bins: Sequence[int]) -> str:
    """The bucket of a query of `tokens` tokens: bins [1, 3, 6] give 1-2, 3-5 and 6+.

    0 tokens is its own bucket `0`; lengths under the first bin share a bucket from 1.
    """
    if tokens <= 0:
        return "0"
    if tokens < bins[0]:
        return _span(1, bins[0] - 1)
    position = bisect.bisect_right(bins, tokens) - 1
    lower = bins[position]
    if position + 1 == len(bins):
        return f"{lower}+"
    return _span(lower, bins[position + 1] - 1)


def _span(lower: int, upper: int) -> str:
    return str(lower) if lower == upper else f"{lower}-{upper}"


def _groups(by: Sequence[str], combine: Sequence[Sequence[str]]) -> list[tuple[str, ...]]:
    """Every field of `by` as a one-field group, then the combinations, duplicates dropped."""
    problems = []
    for group in combine:
        if not group:
            problems.append("slices.combine: an empty combination; list two or more fields")
        repeated = sorted({field for field in group if list(group).count(field) > 1})
        if repeated:
            problems.append(
                f"slices.combine: [{', '.join(group)}] names {', '.join(repeated)} twice"
            )
    if problems:
        raise GateError("\n".join(problems))
    singles = [(field,) for field in by]
    return list(dict.fromkeys([*singles, *(tuple(group) for group in combine)]))


def _check_fields(
    queries: Sequence[Query], by: Sequence[str], combine: Sequence[Sequence[str]]
) -> None:
    present = sorted({field for query in queries for field in query.metadata})
    problems = []
    named = [("slices.by", field) for field in by]
    named += [("slices.combine", field) for group in combine for field in group]
    for where, field in dict.fromkeys(named):
        if field == QUERY_LENGTH or field in present:
            continue
        close = difflib.get_close_matches(field, [*present, QUERY_LENGTH], n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        listing = ", ".join(present) if present else "none"
        problems.append(
            f"{where}: no query has metadata field {field!r}{hint}; fields present: {listing}"
        )
    if problems:
        raise GateError("\n".join(problems))


def _check_bins(bins: Sequence[int]) -> None:
    if not bins or bins[0] < 1 or any(b <= a for a, b in itertools.pairwise(bins)):
        raise GateError(
            "slices.query_length.bins must be positive and strictly increasing, e.g. [1, 3, 6]"
        )


def _column(queries: Sequence[Query], field: str, bins: Sequence[int]) -> list[tuple[str, ...]]:
    """`_labels` of every query; text values and lengths, the common cases, looked up once."""
    if field == QUERY_LENGTH:
        by_tokens: dict[int, tuple[str, ...]] = {}
        out = []
        for query in queries:
            tokens = len(query.text.split())
            if tokens not in by_tokens:
                by_tokens[tokens] = (query_length_label(tokens, bins),)
            out.append(by_tokens[tokens])
        return out
    texts: dict[str, tuple[str, ...]] = {}
    column = []
    for query in queries:
        value = query.metadata.get(field)
        if type(value) is str:
            column.append(texts.setdefault(value, (value,)))
        else:
            column.append(_labels(query, field, bins))
    return column


def _labels(query: Query, field: str, bins: Sequence[int]) -> tuple[str, ...]:
    """The values of `field` for `query` as slice labels (several for a list value)."""
    if field == QUERY_LENGTH:
        return (query_length_label(len(query.text.split()), bins),)
    value = query.metadata.get(field)
    if isinstance(value, list | tuple):
        labels = [_label(item, field, query.id) for item in value]
        return tuple(dict.fromkeys(labels)) or (NONE,)
    return (_label(value, field, query.id),)


def _label(value: Any, field: str, query_id: str) -> str:
    if value is None:
        return NONE
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        # NaN is how table tools write a missing value.
        if math.isnan(value):
            return NONE
        return str(int(value)) if value.is_integer() else str(value)
    if isinstance(value, Mapping):
        raise GateError(
            f"metadata field {field!r} of query {query_id!r} is an object; "
            "slice by one of its keys instead"
        )
    if isinstance(value, list | tuple):
        raise GateError(
            f"metadata field {field!r} of query {query_id!r} holds a list inside a list; "
            "flatten it to one list of values"
        )
    return str(value)


class _Thresholds(Protocol):
    """What `check_list` reads of a threshold (compare.Threshold)."""

    @property
    def report_only(self) -> bool: ...


_Gated = TypeVar("_Gated", bound=_Thresholds)


def check_list(
    slices: Mapping[str, IntArray],
    thresholds: Mapping[str, _Gated],
    overrides: Mapping[str, Mapping[str, _Gated]],
    min_size: int,
) -> list[tuple[str, str, IntArray, _Gated, str]]:
    """Every check (metric, slice, rows, threshold, why it is not gated: "" when it is), by
    metric, then "all", then the other slices by name. A slice that holds exactly the queries
    of "all" is the overall check again, not a check of its own (`same_as_all`)."""
    again = set(same_as_all(slices))
    order = [ALL, *sorted(name for name in slices if name != ALL and name not in again)]
    small = small_slices(slices, min_size)
    found = []
    for metric in thresholds:
        for name in order:
            threshold = overrides.get(name, {}).get(metric, thresholds[metric])
            rows = slices[name]
            reason = (
                "report only: no max_drop or min"
                if threshold.report_only
                else "no queries"
                if not rows.size
                else small.get(name, "")
            )
            found.append((metric, name, rows, threshold, reason))
    return found
