"""The record's own checks: top-k problems, how many values a message shows, repeats equal."""

from __future__ import annotations

import dataclasses

import numpy as np

from retrieval_gate.core.ids import FloatArray
from retrieval_gate.gate.baseline.record import (
    Repeats,
    restricted_record,
    some_of,
    top_k_problems,
)
from tests.helpers.baselines import FINGERPRINTS, make


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


def test_repeats_are_equal_by_value_and_unequal_in_runs_values_or_varying() -> None:
    def run(*values: float) -> dict[str, FloatArray]:
        return {"ndcg@10": np.array(values)}

    repeats = Repeats(runs=(run(0.5, 1.0), run(0.25, 1.0)), varying=("q1",))
    assert repeats == Repeats(runs=(run(0.5, 1.0), run(0.25, 1.0)), varying=("q1",))
    assert repeats != Repeats(runs=(run(0.5, 1.0),), varying=("q1",))
    assert repeats != Repeats(runs=(run(0.5, 1.0), run(0.25, 0.0)), varying=("q1",))
    assert repeats != Repeats(runs=(run(0.5, 1.0), run(0.25, 1.0)), varying=())
    assert repeats != "repeats"


def test_a_record_undefined_for_a_query_equals_its_copy() -> None:
    metrics = dataclasses.replace(FINGERPRINTS, metrics=("auc",))
    record = make(fingerprints=metrics, scores={"auc": [float("nan"), 0.5, 1.0]})
    assert record == make(fingerprints=metrics, scores={"auc": [float("nan"), 0.5, 1.0]})
    assert record != make(fingerprints=metrics, scores={"auc": [0.0, 0.5, 1.0]})


def test_a_record_keeps_the_candidates_of_labelled_queries_only() -> None:
    record = make(candidates={"q1": ["d1", "d2"], "extra": ["d5"], "q3": [7]})
    assert record.candidates is not None
    assert dict(record.candidates) == {"q1": ("d1", "d2"), "q3": ("7",)}


def test_a_restricted_record_keeps_its_queries_scores_runs_and_lists_alone() -> None:
    record = make(candidates={"q1": ["d1", "d2"], "q3": ["d9"]})
    runs = (dict(record.scores), {m: v[::-1].copy() for m, v in record.scores.items()})
    record = dataclasses.replace(record, repeats=Repeats(runs=runs, varying=("q1", "q2")))
    kept = restricted_record(record, ["q3", "q1"])
    assert kept.query_ids == ("q1", "q3")
    assert kept.scores["ndcg@10"].tolist() == [0.1, 1.0]
    assert kept.repeats == Repeats(
        runs=(
            {"ndcg@10": np.array([0.1, 1.0]), "recall@10": np.array([0.0, 1.0])},
            {"ndcg@10": np.array([1.0, 0.1]), "recall@10": np.array([1.0, 0.0])},
        ),
        varying=("q1",),
    )
    assert dict(kept.top_k) == {"q1": ("d1",), "q3": ("d9", "d1", "d2")}
    assert kept.candidates == {"q1": ("d1", "d2"), "q3": ("d9",)}
    plain = restricted_record(make(), ["q2"])
    assert (plain.repeats, plain.candidates) == (None, None)
