"""Slicing: metadata values, query-length buckets, combinations, errors and small slices."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from retrieval_gate.core.model import Query
from retrieval_gate.errors import GateError
from retrieval_gate.gate.checks.slicing import (
    ALL,
    check_slicing,
    query_length_label,
    slice_definition,
    slice_queries,
    small_slices,
)

DEFAULT_BINS = (1, 3, 6)


def q(query_id: str, text: str = "a query", **metadata: Any) -> Query:
    return Query(query_id, text, metadata)


def members(slices: Mapping[str, np.ndarray[Any, Any]]) -> dict[str, list[int]]:
    return {name: indices.tolist() for name, indices in slices.items()}


QUERIES = [
    q("q1", intent="billing", segment="free"),
    q("q2", intent="billing", segment="pro"),
    q("q3", intent="login", segment="free"),
    q("q4", intent="login"),
]


def test_metadata_slices_hold_sorted_int64_indices_and_all_comes_first() -> None:
    slices = slice_queries(QUERIES, ["intent", "segment"], [], DEFAULT_BINS)
    assert members(slices) == {
        "all": [0, 1, 2, 3],
        "intent=billing": [0, 1],
        "intent=login": [2, 3],
        "segment=(none)": [3],
        "segment=free": [0, 2],
        "segment=pro": [1],
    }
    assert all(indices.dtype == np.int64 for indices in slices.values())


def test_no_fields_gives_only_all_and_no_queries_an_empty_all() -> None:
    assert members(slice_queries(QUERIES, [], [], DEFAULT_BINS)) == {"all": [0, 1, 2, 3]}
    assert members(slice_queries([], [], [], DEFAULT_BINS)) == {"all": []}


def test_order_is_all_then_names_whatever_the_order_of_queries_fields_and_values() -> None:
    forward = slice_queries(QUERIES, ["segment", "intent"], [], DEFAULT_BINS)
    backward = slice_queries(QUERIES, ["intent", "segment", "intent"], [], DEFAULT_BINS)
    names = list(forward)
    assert names[0] == ALL
    assert names[1:] == sorted(names[1:])
    assert members(forward) == members(backward)
    assert list(forward) == list(backward)


def test_default_bins_bucket_by_whitespace_tokens() -> None:
    texts = ["one", "two words", "three  word\tquery", "a b c d e", "a b c d e f", "1 2 3 4 5 6 7"]
    queries = [q(f"q{i}", text) for i, text in enumerate(texts)]
    slices = slice_queries(queries, ["query_length"], [], DEFAULT_BINS)
    assert members(slices) == {
        "all": [0, 1, 2, 3, 4, 5],
        "query_length=1-2": [0, 1],
        "query_length=3-5": [2, 3],
        "query_length=6+": [4, 5],
    }


def test_empty_queries_get_their_own_bucket_only_when_there_are_some() -> None:
    queries = [q("q1", "   "), q("q2", "hello"), q("q3", "")]
    slices = slice_queries(queries, ["query_length"], [], DEFAULT_BINS)
    assert members(slices) == {"all": [0, 1, 2], "query_length=0": [0, 2], "query_length=1-2": [1]}


@pytest.mark.parametrize(
    ("bins", "expected"),
    [
        ([1], ["1+", "1+", "1+", "1+"]),
        ([1, 2, 3], ["1", "2", "3+", "3+"]),
        ([1, 2, 4], ["1", "2-3", "2-3", "4+"]),
        ([2, 4], ["1", "2-3", "2-3", "4+"]),
        ([3], ["1-2", "1-2", "3+", "3+"]),
    ],
)
def test_custom_bins_name_their_buckets(bins: list[int], expected: list[str]) -> None:
    assert [query_length_label(tokens, bins) for tokens in (1, 2, 3, 4)] == expected


def test_query_length_needs_increasing_positive_bins() -> None:
    with pytest.raises(GateError, match="strictly increasing"):
        slice_queries(QUERIES, ["query_length"], [], [3, 3])


def test_combinations_name_fields_in_the_order_given() -> None:
    slices = slice_queries(QUERIES, ["intent"], [["segment", "intent"]], DEFAULT_BINS)
    assert members(slices) == {
        "all": [0, 1, 2, 3],
        "intent=billing": [0, 1],
        "intent=login": [2, 3],
        "segment=(none)&intent=login": [3],
        "segment=free&intent=billing": [0],
        "segment=free&intent=login": [2],
        "segment=pro&intent=billing": [1],
    }


def test_combinations_may_use_query_length_and_repeat_a_by_field() -> None:
    queries = [q("q1", "short", intent="a"), q("q2", "a much longer query here", intent="a")]
    slices = slice_queries(
        queries, ["intent"], [["intent", "query_length"], ["intent"]], DEFAULT_BINS
    )
    assert members(slices) == {
        "all": [0, 1],
        "intent=a": [0, 1],
        "intent=a&query_length=1-2": [0],
        "intent=a&query_length=3-5": [1],
    }


@pytest.mark.parametrize(
    ("combine", "message"),
    [([[]], "an empty combination"), ([["intent", "intent"]], "names intent twice")],
)
def test_bad_combinations_are_errors(combine: list[list[str]], message: str) -> None:
    with pytest.raises(GateError, match=message):
        slice_queries(QUERIES, [], combine, DEFAULT_BINS)


def test_values_are_normalised_to_strings_and_missing_ones_to_none() -> None:
    values: list[Any] = [True, False, 3, 3.0, 2.5, None, "x=y&z", float("nan"), -0.0]
    queries = [q(f"q{i}", value=value) for i, value in enumerate(values)]
    queries.append(q("q9"))
    slices = slice_queries(queries, ["value"], [], DEFAULT_BINS)
    assert members(slices) == {
        "all": list(range(10)),
        "value=(none)": [5, 7, 9],
        "value=0": [8],
        "value=2.5": [4],
        "value=3": [2, 3],
        "value=false": [1],
        "value=true": [0],
        "value=x=y&z": [6],
    }


def test_a_list_value_puts_the_query_in_one_slice_per_element() -> None:
    queries = [
        q("q1", intent=["billing", "refund", "billing"]),
        q("q2", intent="refund"),
        q("q3", intent=[]),
        q("q4", intent=[1, True]),
    ]
    slices = slice_queries(queries, ["intent"], [], DEFAULT_BINS)
    assert members(slices) == {
        "all": [0, 1, 2, 3],
        "intent=(none)": [2],
        "intent=1": [3],
        "intent=billing": [0],
        "intent=refund": [0, 1],
        "intent=true": [3],
    }


def test_a_list_value_in_a_combination_makes_every_pair() -> None:
    queries = [q("q1", intent=["a", "b"], segment=["x", "y"])]
    slices = slice_queries(queries, [], [["intent", "segment"]], DEFAULT_BINS)
    assert list(slices) == [
        "all",
        "intent=a&segment=x",
        "intent=a&segment=y",
        "intent=b&segment=x",
        "intent=b&segment=y",
    ]


@pytest.mark.parametrize("value", [{"plan": "free"}, [{"plan": "free"}]])
def test_an_object_value_is_an_error_naming_field_and_query(value: Any) -> None:
    queries = [q("q0", user="x"), q("q1", user=value)]
    with pytest.raises(GateError) as caught:
        slice_queries(queries, ["user"], [], DEFAULT_BINS)
    assert str(caught.value) == (
        "metadata field 'user' of query 'q1' is an object; slice by one of its keys instead"
    )


def test_a_nested_list_is_an_error() -> None:
    with pytest.raises(GateError, match="'tags' of query 'q1' holds a list inside a list"):
        slice_queries([q("q1", tags=[["a"]])], ["tags"], [], DEFAULT_BINS)


def test_an_unknown_field_is_an_error_with_a_suggestion_and_the_fields_present() -> None:
    with pytest.raises(GateError) as caught:
        slice_queries(QUERIES, ["intnet", "query_length"], [], DEFAULT_BINS)
    assert str(caught.value) == (
        "slices.by: no query has metadata field 'intnet' (did you mean 'intent'?); "
        "fields present: intent, segment"
    )


def test_unknown_fields_in_combinations_are_listed_together() -> None:
    with pytest.raises(GateError) as caught:
        slice_queries(QUERIES, ["zzz"], [["intent", "segmnt"]], DEFAULT_BINS)
    assert str(caught.value) == (
        "slices.by: no query has metadata field 'zzz'; fields present: intent, segment\n"
        "slices.combine: no query has metadata field 'segmnt' (did you mean 'segment'?); "
        "fields present: intent, segment"
    )


def test_a_field_present_only_as_null_is_known() -> None:
    slices = slice_queries([q("q1", intent=None)], ["intent"], [], DEFAULT_BINS)
    assert members(slices) == {"all": [0], "intent=(none)": [0]}


def test_slice_definition_is_canonical() -> None:
    one = slice_definition(["segment", "intent"], [["b", "a"], ["x", "y"]], [1, 3, 6], 30)
    two = slice_definition(["intent", "segment", "intent"], [["x", "y"], ["b", "a"]], [1, 2], 30)
    assert (
        one
        == two
        == {
            "by": ["intent", "segment"],
            "combine": [["b", "a"], ["x", "y"]],
            "query_length_bins": None,
            "min_size": 30,
        }
    )
    with_length = slice_definition(["query_length"], [], (1, 3, 6), 10)
    assert with_length["query_length_bins"] == [1, 3, 6]
    assert with_length != slice_definition(["query_length"], [], [1, 4], 10)
    assert slice_definition([], [["a", "b"]], [1], 5) != slice_definition([], [["b", "a"]], [1], 5)


def test_small_slices_name_the_reason_and_never_all() -> None:
    slices = {
        "all": np.arange(3, dtype=np.int64),
        "intent=a": np.array([0], dtype=np.int64),
        "intent=b": np.array([1, 2], dtype=np.int64),
        "intent=c": np.arange(3, dtype=np.int64),
    }
    assert small_slices(slices, 3) == {
        "intent=a": "1 query, below min_size 3",
        "intent=b": "2 queries, below min_size 3",
    }
    assert small_slices(slices, 1) == {}
    assert small_slices({"all": np.arange(0, dtype=np.int64)}, 30) == {}


@pytest.mark.parametrize(
    ("queries", "by", "combine", "bins"),
    [
        (QUERIES, ["query_length"], [], [3, 3]),
        (QUERIES, [], [[]], DEFAULT_BINS),
        (QUERIES, [], [["intent", "intent"]], DEFAULT_BINS),
        ([q("q0", user="x"), q("q1", user={"plan": "free"})], ["user"], [], DEFAULT_BINS),
        ([q("q1", tags=[["a"]])], ["tags"], [], DEFAULT_BINS),
        (QUERIES, ["zzz"], [["intent", "segmnt"]], DEFAULT_BINS),
        (QUERIES, ["intent", "query_length"], [["segment", "intent"]], DEFAULT_BINS),  # fine
    ],
)
def test_checking_raises_what_slicing_raises(
    queries: list[Query], by: list[str], combine: list[list[str]], bins: list[int]
) -> None:
    """lint's bad-slice rule checks without building the slices, with the same errors."""
    errors = []
    for function in (slice_queries, check_slicing):
        try:
            function(queries, by, combine, bins)
        except GateError as error:
            errors.append(str(error))
        else:
            errors.append("")
    assert errors[0] == errors[1]


@pytest.mark.parametrize("seed", range(25))
def test_slices_equal_a_query_by_query_grouping(seed: int) -> None:
    """Single values, lists, missing fields, `&` in a value and repeated combinations: the
    vectorised grouping equals putting each query in each of its slices one by one."""
    import itertools
    import random

    rng = random.Random(seed)
    values = ["a", "b", "c&segment=x", "x", True, 2.0, None]
    queries = []
    for i in range(rng.randint(0, 60)):
        metadata: dict[str, Any] = {}
        for field in ("intent", "segment"):
            roll = rng.random()
            if roll < 0.6:
                metadata[field] = rng.choice(values)
            elif roll < 0.8 and seed % 2:
                metadata[field] = rng.sample(values, rng.randint(0, 3))
        queries.append(q(f"q{i:02d}", " ".join("w" * rng.randint(0, 8)), **metadata))
    by, combine = ["intent", "segment", "query_length"], [["intent", "segment"], ["segment"]]
    if not queries or not any("intent" in x.metadata for x in queries):
        return
    if not any("segment" in x.metadata for x in queries):
        return
    slices = slice_queries(queries, by, combine, DEFAULT_BINS)
    expected: dict[str, set[int]] = {}
    from retrieval_gate.gate.checks.slicing import _labels

    for group in [(f,) for f in by] + [tuple(g) for g in combine]:
        for i, query in enumerate(queries):
            cells = [_labels(query, field, DEFAULT_BINS) for field in group]
            for combination in itertools.product(*cells):
                name = "&".join(f"{f}={v}" for f, v in zip(group, combination, strict=True))
                expected.setdefault(name, set()).add(i)
    assert {name: rows.tolist() for name, rows in slices.items() if name != ALL} == {
        name: sorted(rows) for name, rows in sorted(expected.items())
    }
