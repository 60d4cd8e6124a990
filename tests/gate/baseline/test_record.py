"""The record's own checks: what is wrong with top-k ids, and how many values a message shows."""

from __future__ import annotations

from retrieval_gate.gate.baseline.record import some_of, top_k_problems


def test_top_k_problems_name_unknown_queries_long_lists_and_the_doc_repeated() -> None:
    top_k = {"q1": ["d1", "d2", "d3", "d2"], "q2": ["d1"], "zz": []}
    assert top_k_problems(top_k, {"q1", "q2"}, 3, "top_k") == [
        "top_k: 'zz' not in query_ids",
        "top_k.q1: 4 doc ids, more than k = 3",
        "top_k.q1: lists 'd2' twice (a ranking holds a doc once)",
    ]
    assert top_k_problems({"q1": ["d1", "d2"]}, {"q1"}, 2, "top_k") == []


def test_some_of_shows_five_values_then_how_many_more() -> None:
    assert some_of(["a", "b", "c", "d", "e"]) == "'a', 'b', 'c', 'd', 'e'"
    assert some_of(list("abcdefg")) == "'a', 'b', 'c', 'd', 'e' and 2 more"
    assert some_of(list("abc"), shown=1) == "'a' and 2 more"
