"""Ranking a run whose queries are mostly or wholly unlabelled: the labelled ones score as if
alone, the others are listed as ignored."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval_gate.core.run import Run
from retrieval_gate.metrics import evaluate
from retrieval_gate.metrics.ranking import rank_judgments
from retrieval_gate.readers import qrels_from_dict

QRELS = qrels_from_dict({"q": {"d3": 2, "d7": 1}})
LABELLED = Run.from_rows(["q"] * 20, [f"d{i}" for i in range(20)], [20.0 - i for i in range(20)])


@pytest.mark.parametrize("as_mapping", [False, True])
def test_more_unlabelled_queries_than_labelled_ones_with_few_rows_each(as_mapping: bool) -> None:
    # Three unlabelled queries of one row each (fewer rows than a quarter of the run) are
    # ranked under codes of their own, more codes than there are labelled queries.
    rows = [("q", f"d{i}", 20.0 - i) for i in range(20)] + [(f"u{i}", "d3", 1.0) for i in range(3)]
    run = Run.from_rows(*map(list, zip(*rows, strict=True)))
    given = run.to_dict() if as_mapping else run
    ranked = rank_judgments(given, QRELS, 10)
    alone = rank_judgments(LABELLED, QRELS, 10)
    np.testing.assert_array_equal(ranked.grades, alone.grades)
    np.testing.assert_array_equal(ranked.num_ret, [20])
    assert ranked.ignored_queries == ("u0", "u1", "u2")
    scores = evaluate(given, QRELS, ["ndcg@10", "num_ret"])
    expected = (3 / np.log2(5) + 1 / np.log2(9)) / (3 + 1 / np.log2(3))
    assert scores.values["ndcg@10"][0] == pytest.approx(expected, rel=1e-12)
    assert scores.values["num_ret"][0] == 20


def test_a_run_of_only_unlabelled_queries_scores_every_labelled_query_0() -> None:
    run = Run.from_rows(["u1", "u1", "u2"], ["d3", "d7", "d3"], [2.0, 1.0, 1.0])
    ranked = rank_judgments(run, QRELS, 10)
    assert ranked.grades.shape == (1, 0)
    np.testing.assert_array_equal(ranked.num_ret, [0])
    assert ranked.missing_queries == ("q",)
    assert ranked.ignored_queries == ("u1", "u2")
    scores = evaluate(run, QRELS, ["ndcg@10", "ap", "recall@10"])
    assert {name: values.tolist() for name, values in scores.values.items()} == {
        "ndcg@10": [0.0],
        "ap": [0.0],
        "recall@10": [0.0],
    }
