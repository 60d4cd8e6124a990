"""What the judge grades: the pooled top k less people's labels, and a calibration sample."""

from __future__ import annotations

from retrieval_gate.core.model import Document, Query
from retrieval_gate.judging.pool import Pair, calibration_sample, passage_text, pool_pairs

QUERIES = [Query("q2", "second"), Query("q1", "first"), Query("q3", "no labels")]
HUMAN = {"q1": {"a": 2.0, "b": -1.0}, "q2": {"c": 0.0}}
CURRENT = {"q1": ["a", "b", "x", "y"], "q2": ["c", "d"], "q3": ["e"]}
REFERENCE = {"q1": ["z", "a"], "q2": ["d", "c"], "q3": ["f", "e"]}


def test_the_pool_is_the_union_of_the_top_depth_less_what_people_judged() -> None:
    pool = pool_pairs(QUERIES, HUMAN, [CURRENT, REFERENCE], 2, calibration=())
    assert [(p.query_id, p.doc) for p in pool.pairs] == [
        # b is graded -1 (pooled, not judged): the judged@k rule leaves it to grade.
        ("q1", "b"),
        ("q1", "z"),
        ("q2", "d"),
        ("q3", "e"),
        ("q3", "f"),
    ]
    assert pool.pooled == 3 + 2 + 2
    assert all(p.human is None for p in pool.pairs)
    assert pool.pairs[-1] == Pair("q3", "no labels", "f")


def test_calibration_queries_are_graded_on_their_whole_pool_with_peoples_grades() -> None:
    pool = pool_pairs(QUERIES, HUMAN, [CURRENT], 3, calibration=("q1",))
    assert [(p.doc, p.human) for p in pool.pairs if p.query_id == "q1"] == [
        ("a", 2.0),
        ("b", None),
        ("x", None),
    ]
    assert pool.calibration == ("q1",)


def test_the_calibration_sample_is_seeded_and_sorted() -> None:
    ids = [f"q{i:02d}" for i in range(40)]
    first = calibration_sample(ids, 5, seed=7)
    assert first == calibration_sample(reversed(ids), 5, seed=7)
    assert len(first) == 5
    assert list(first) == sorted(first)
    assert first != calibration_sample(ids, 5, seed=8)
    assert calibration_sample(ids, None, seed=7) == tuple(ids)
    assert calibration_sample(ids, 99, seed=7) == tuple(ids)


def test_a_passage_is_the_corpus_title_and_text_else_the_hits_text() -> None:
    corpus = {
        "a": Document("a", "Title", "Body."),
        "b": Document("b", "", "  "),
        "c": Document("c", "", "Only text"),
    }
    assert passage_text("a", corpus, {"a": "ignored"}) == "Title\n\nBody."
    assert passage_text("c", corpus, {}) == "Only text"
    assert passage_text("b", corpus, {"b": "from the retriever"}) == "from the retriever"
    assert passage_text("d", None, {"d": " hit text "}) == "hit text"
    assert passage_text("d", corpus, {}) is None


def test_beyond_the_pool_only_the_calibration_queries_people_judged_pairs_are_added() -> None:
    queries = [Query("q1", "calibrated"), Query("q2", "not sampled")]
    # far and far2 are judged outside the pool; gone (graded -1) is not judged.
    human = {"q1": {"a": 1.0, "far": 2.0, "gone": -1.0}, "q2": {"far2": 3.0}}
    ranking = {"q1": ["a", "b"], "q2": ["c"]}
    pool = pool_pairs(queries, human, [ranking], 2, calibration=("q1",))
    assert [(p.query_id, p.doc, p.human) for p in pool.pairs] == [
        ("q1", "a", 1.0),
        ("q1", "b", None),
        ("q1", "far", 2.0),
        ("q2", "c", None),
    ]
    assert pool.pooled == 3
    alone = pool_pairs(queries, human, [ranking], 2, calibration=("q1",), beyond=False)
    assert [(p.query_id, p.doc) for p in alone.pairs] == [("q1", "a"), ("q1", "b"), ("q2", "c")]
