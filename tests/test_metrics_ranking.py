"""Ranking: row order never matters; ties go to the higher doc id; grades join per query."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval_gate.errors import InputError
from retrieval_gate.metrics import evaluate
from retrieval_gate.metrics.ranking import rank_judgments
from retrieval_gate.qrels import Qrels
from retrieval_gate.readers import qrels_from_dict, run_from_dict
from retrieval_gate.run import Run

METRICS = ["ndcg@5", "ap", "rr", "precision@3", "bpref", "r_precision", "err(g_max=3)@4"]


def shuffled(run: Run, seed: int) -> Run:
    order = np.random.default_rng(seed).permutation(len(run))
    return Run(run.query_ids, run.query[order], run.docs[order], run.score[order])


def random_case(seed: int) -> tuple[Run, Qrels]:
    rng = np.random.default_rng(seed)
    queries, docs, scores = [], [], []
    judgments: dict[str, dict[str, float]] = {}
    for q in range(6):
        ids = rng.choice(30, size=int(rng.integers(0, 15)), replace=False)
        for doc in ids:
            queries.append(f"q{q}")
            docs.append(f"d{doc}")
            scores.append(float(rng.integers(0, 4)))  # few distinct scores: many ties
        judgments[f"q{q}"] = {f"d{d}": float(rng.integers(-1, 4)) for d in rng.choice(30, 8)}
    return Run.from_rows(queries, docs, scores), qrels_from_dict(judgments)


@pytest.mark.parametrize("seed", range(40))
def test_row_order_does_not_change_any_value(seed: int) -> None:
    run, qrels = random_case(seed)
    expected = evaluate(run, qrels, METRICS).values
    for shuffle_seed in range(3):
        got = evaluate(shuffled(run, shuffle_seed), qrels, METRICS).values
        for name, values in expected.items():
            np.testing.assert_array_equal(got[name], values, err_msg=name)


def test_ties_rank_the_higher_doc_id_first_as_strings() -> None:
    run = Run.from_rows(["q"] * 3, ["d9", "d10", "d2"], [1.0, 1.0, 1.0])
    qrels = qrels_from_dict({"q": {"d9": 1, "d10": 2, "d2": 3}})
    ranked = rank_judgments(run, qrels, None)
    np.testing.assert_array_equal(ranked.grades, [[1.0, 3.0, 2.0]])  # d9 > d2 > d10


def test_a_doc_judged_for_another_query_is_unjudged_here() -> None:
    run = Run.from_rows(["a", "a", "b"], ["d1", "d3", "d1"], [2.0, 1.0, 1.0])
    qrels = qrels_from_dict({"a": {"d1": 2}, "b": {"d2": 1}})
    ranked = rank_judgments(run, qrels, 5)
    assert ranked.grades[0, 0] == 2.0
    assert np.isnan(ranked.grades[1, 0])
    assert np.isneginf(ranked.grades[1, 1])  # past the end of b's results


@pytest.mark.parametrize("seed", range(20))
def test_mappings_are_scored_exactly_like_runs(seed: int) -> None:
    run, qrels = random_case(seed)
    results = run.to_dict()
    results["unlabelled"] = {"d1": 1.0}
    from_mapping = evaluate(results, qrels, METRICS)
    from_run = evaluate(run_from_dict(results), qrels, METRICS)
    assert from_mapping.ignored_queries == from_run.ignored_queries == ("unlabelled",)
    assert from_mapping.missing_queries == from_run.missing_queries
    for name, values in from_run.values.items():
        np.testing.assert_array_equal(from_mapping.values[name], values, err_msg=name)


def test_bad_scores_in_a_mapping_are_reported_like_a_file_error() -> None:
    with pytest.raises(InputError, match="'q', doc 'b': score 'x' is not a finite number"):
        evaluate({"q": {"a": 1.0, "b": "x"}}, {"q": {"a": 1}}, ["rr"])
