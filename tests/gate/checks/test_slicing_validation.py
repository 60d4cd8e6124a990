"""What slicing and compare() refuse, at the edge: query-length bins, slice sizes, and the
query indices a slice may hold."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from retrieval_gate.core.model import Query
from retrieval_gate.errors import GateError
from retrieval_gate.gate.checks.compare import ComparisonSettings, Threshold, compare
from retrieval_gate.gate.checks.slicing import (
    check_slicing,
    query_length_label,
    slice_queries,
    small_slices,
)

QUERIES = [Query(f"q{i}", " ".join(["w"] * (i + 1)), {}) for i in range(4)]


@pytest.mark.parametrize("bins", [[], [0], [0, 3], [-1, 2], [1, 3, 3], [1, 4, 2]])
def test_bins_must_be_positive_and_strictly_increasing(bins: list[int]) -> None:
    with pytest.raises(GateError, match="positive and strictly increasing"):
        slice_queries(QUERIES, ["query_length"], [], bins)
    with pytest.raises(GateError, match="positive and strictly increasing"):
        check_slicing(QUERIES, [], [["query_length"]], bins)


@pytest.mark.parametrize("bins", [[1], [1, 2], [2, 3, 100]])
def test_the_smallest_valid_bins_are_taken(bins: list[int]) -> None:
    check_slicing(QUERIES, ["query_length"], [], bins)
    assert "all" in slice_queries(QUERIES, ["query_length"], [], bins)


def test_bins_are_not_checked_when_query_length_is_not_used() -> None:
    queries = [Query("q0", "x", {"intent": "a"})]
    assert list(slice_queries(queries, ["intent"], [], [])) == ["all", "intent=a"]


@pytest.mark.parametrize(
    ("tokens", "label"),
    [(0, "0"), (1, "1-2"), (2, "1-2"), (3, "3-5"), (5, "3-5"), (6, "6+"), (60, "6+")],
)
def test_each_length_falls_in_its_bucket(tokens: int, label: str) -> None:
    assert query_length_label(tokens, [1, 3, 6]) == label


def test_lengths_below_the_first_bin_share_a_bucket_from_1() -> None:
    assert [query_length_label(t, [3, 5]) for t in (1, 2, 3, 4, 5)] == [
        "1-2", "1-2", "3-4", "3-4", "5+"
    ]  # fmt: skip
    assert query_length_label(1, [2]) == "1"


def test_a_slice_of_exactly_min_size_is_gated() -> None:
    slices = {"all": np.arange(3), "a": np.arange(3), "b": np.arange(2)}
    assert small_slices(slices, 3) == {"b": "2 queries, below min_size 3"}


def run_compare(slices: dict[str, Any]) -> None:
    scores = {"m": np.linspace(0.1, 0.9, 4)}
    compare(
        scores,
        scores,
        slices,
        {"m": Threshold(max_drop=0.02)},
        {},
        ComparisonSettings(require_significance=False),
    )


def test_slice_indices_from_0_to_the_last_query_are_taken() -> None:
    run_compare({"all": np.arange(4), "edge": np.array([0, 3]), "none": np.array([], dtype=int)})


@pytest.mark.parametrize(
    ("index", "message"),
    [
        ([4], r"within \[0, 4\)"),
        ([0, 9], r"within \[0, 4\)"),
        ([-1], r"within \[0, 4\)"),
        ([1, 1], "listed more than once"),
        ([[0, 1]], "a 1-d array"),
    ],
)
def test_a_slice_outside_the_queries_or_repeating_one_is_refused(
    index: list[Any], message: str
) -> None:
    with pytest.raises(GateError, match=f"slice bad: .*{message}"):
        run_compare({"all": np.arange(4), "bad": np.array(index)})


def test_the_overall_slice_is_required() -> None:
    with pytest.raises(GateError, match='slices must include "all"'):
        run_compare({"some": np.arange(4)})


def test_no_queries_slice_by_length_into_all_alone() -> None:
    # query_length is a field every query has, so it needs no query to be known.
    assert {k: v.tolist() for k, v in slice_queries([], ["query_length"], [], [1, 3]).items()} == {
        "all": []
    }
