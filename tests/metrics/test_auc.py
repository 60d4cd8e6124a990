"""auc and gauc: scikit-learn's roc_auc_score query by query on random cases with ties, the
worked examples by hand, and one-class queries left undefined rather than scored 0."""

from __future__ import annotations

import math

import numpy as np
import pytest

from retrieval_gate.errors import MetricError
from retrieval_gate.metrics import evaluate, parse_metric
from retrieval_gate.metrics.ranking import rank_judgments
from retrieval_gate.readers.dicts import qrels_from_dict

N_CASES = 1_000

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]


def _case(rng: np.random.Generator) -> tuple[Run, Qrels]:
    """A few queries whose scores come from a handful of values (many ties), with graded or
    binary judgments, unjudged retrieved docs and judged docs never retrieved."""
    run: Run = {}
    qrels: Qrels = {}
    levels = rng.choice([0.1, 0.25, 0.5, 1.0, 2.0, 3.0], size=int(rng.integers(1, 5)))
    top_grade = int(rng.choice([1, 3]))
    for q in range(int(rng.integers(1, 6))):
        qid = f"q{q}"
        docs = [f"d{d}" for d in range(int(rng.integers(0, 12)))]
        run[qid] = {d: float(rng.choice(levels)) for d in docs}
        judged = {d: int(rng.integers(0, top_grade + 1)) for d in docs if rng.random() < 0.8}
        for extra in range(int(rng.integers(0, 3))):
            judged[f"x{extra}"] = int(rng.integers(0, top_grade + 1))
        if judged:
            qrels[qid] = judged
        else:
            qrels[qid] = {"never": 1}
    return run, qrels


def _ranked(results: dict[str, float]) -> list[tuple[str, float]]:
    """trec_eval's order: score descending, doc id descending on ties."""
    return sorted(sorted(results.items(), reverse=True), key=lambda item: -item[1])


def _sklearn_auc(
    results: dict[str, float], judged: dict[str, int], rel: int, unjudged: str, k: int | None
) -> float:
    """scikit-learn's AUC of one query's scored docs, NaN for one class."""
    from sklearn.metrics import roc_auc_score

    kept = _ranked(results)[: k if k is not None else len(results)]
    labels, scores = [], []
    for doc, score in kept:
        grade = judged.get(doc)
        if grade is None and unjudged == "skip":
            continue
        labels.append(int(grade is not None and grade >= rel))
        scores.append(score)
    if len(set(labels)) < 2:
        return math.nan
    return float(roc_auc_score(labels, scores))


@pytest.mark.parametrize("seed", range(4))
def test_auc_equals_sklearn_per_query_on_random_cases_with_ties(seed: int) -> None:
    rng = np.random.default_rng([30, seed])
    checked = defined = 0
    for _ in range(N_CASES // 4):
        run, qrels = _case(rng)
        rel = int(rng.choice([1, 2]))
        unjudged = str(rng.choice(["skip", "nonrel"]))
        k = None if rng.random() < 0.5 else int(rng.integers(1, 8))
        name = f"auc(rel={rel},unjudged={unjudged})" + ("" if k is None else f"@{k}")
        scores = evaluate(run, qrels, [name])
        got = scores.values[str(parse_metric(name))]
        for i, qid in enumerate(scores.query_ids):
            expected = _sklearn_auc(run.get(qid, {}), qrels[qid], rel, unjudged, k)
            checked += 1
            if math.isnan(expected):
                assert math.isnan(got[i]), (name, qid, run.get(qid), qrels[qid])
            else:
                defined += 1
                assert got[i] == pytest.approx(expected, abs=1e-12), (name, qid)
    # The cases reach both kinds of query, in number.
    assert defined > 200
    assert checked - defined > 50


def test_gauc_equals_a_hand_loop_on_random_cases() -> None:
    rng = np.random.default_rng(31)
    for _ in range(300):
        run, qrels = _case(rng)
        weight = str(rng.choice(["docs", "uniform"]))
        scores = evaluate(run, qrels, [f"gauc(weight={weight})", "auc"])
        total = weights = 0.0
        for qid in scores.query_ids:
            value = _sklearn_auc(run.get(qid, {}), qrels[qid], 1, "skip", None)
            if math.isnan(value):
                continue
            w = 1.0 if weight == "uniform" else sum(d in qrels[qid] for d in run.get(qid, {}))
            total += w * value
            weights += w
        name = "gauc" if weight == "docs" else "gauc(weight=uniform)"
        column = scores.values[name]
        assert np.array_equal(np.isnan(column), np.isnan(scores.values["auc"]))
        if weights:
            assert scores.mean()[name] == pytest.approx(total / weights, abs=1e-12)
        else:
            assert scores.mean()[name] == 0.0
            assert scores.undefined()[name] == len(scores.query_ids)


def test_the_worked_example_is_five_pairs_of_six() -> None:
    # Positives scored 0.9 and 0.4, negatives 0.7, 0.3, 0.1: only (0.4, 0.7) is misordered.
    run = {"q": {"p1": 0.9, "n1": 0.7, "p2": 0.4, "n2": 0.3, "n3": 0.1}}
    qrels = {"q": {"p1": 1, "p2": 1, "n1": 0, "n2": 0, "n3": 0}}
    assert evaluate(run, qrels, ["auc"]).values["auc"][0] == pytest.approx(5 / 6)
    assert f"{5 / 6:.3f}" == "0.833"


def test_gauc_of_two_users_by_hand() -> None:
    # User a: 5 scored docs, AUC 5/6. User b: 3 scored docs, one tie between a positive and
    # a negative (half a pair) and one clear pair: AUC 1.5 / 2 = 0.75.
    # GAUC = (5 * 5/6 + 3 * 0.75) / (5 + 3) = 0.8020833...
    run = {
        "a": {"p1": 0.9, "n1": 0.7, "p2": 0.4, "n2": 0.3, "n3": 0.1},
        "b": {"p": 0.5, "n1": 0.5, "n2": 0.2},
    }
    qrels = {"a": {"p1": 1, "p2": 1, "n1": 0, "n2": 0, "n3": 0}, "b": {"p": 1, "n1": 0, "n2": 0}}
    scores = evaluate(run, qrels, ["gauc", "gauc(weight=uniform)", "auc"])
    assert scores.values["auc"].tolist() == pytest.approx([5 / 6, 0.75])
    assert scores.mean()["gauc"] == pytest.approx((5 * 5 / 6 + 3 * 0.75) / 8)
    assert scores.mean()["gauc"] == pytest.approx(0.8020833333)
    # Each query's column value is auc * weight / mean weight (mean weight 4).
    assert scores.values["gauc"].tolist() == pytest.approx([5 / 6 * 5 / 4, 0.75 * 3 / 4])
    assert scores.mean()["gauc(weight=uniform)"] == pytest.approx((5 / 6 + 0.75) / 2)


def test_one_class_queries_are_undefined_and_left_out_of_the_mean() -> None:
    run = {
        "both": {"p": 2.0, "n": 1.0},
        "only_relevant": {"p": 1.0},
        "only_nonrelevant": {"n": 1.0},
        "unjudged_only": {"u": 1.0},
    }
    qrels = {
        "both": {"p": 1, "n": 0},
        "only_relevant": {"p": 1, "n": 0},  # n judged but not retrieved: not scored
        "only_nonrelevant": {"n": 0},
        "unjudged_only": {"p": 1},
        "nothing_retrieved": {"p": 1},
    }
    scores = evaluate(run, qrels, ["auc", "auc(unjudged=nonrel)", "ndcg"])
    per_query = scores.per_query()
    assert per_query["both"]["auc"] == 1.0
    for qid in ("only_relevant", "only_nonrelevant", "unjudged_only", "nothing_retrieved"):
        assert math.isnan(per_query[qid]["auc"]), qid
    # Counting unjudged docs as non-relevant makes "only_relevant" nothing new (n is not
    # retrieved) but leaves "unjudged_only" one-class too (no relevant doc retrieved).
    assert math.isnan(per_query["unjudged_only"]["auc(unjudged=nonrel)"])
    assert scores.mean()["auc"] == 1.0  # not (1 + 0 + 0 + 0 + 0) / 5
    assert scores.undefined() == {"auc": 4, "auc(unjudged=nonrel)": 4}
    assert "ndcg" not in scores.undefined()


def test_unjudged_nonrel_counts_unjudged_docs_as_negatives() -> None:
    run = {"q": {"p": 3.0, "u": 2.0, "n": 1.0}}
    qrels = {"q": {"p": 0, "n": 1}}  # the relevant doc is scored lowest
    scores = evaluate(run, qrels, ["auc", "auc(unjudged=nonrel)"])
    assert scores.values["auc"][0] == 0.0
    assert scores.values["auc(unjudged=nonrel)"][0] == 0.0
    qrels = {"q": {"p": 1, "n": 0}}
    scores = evaluate(run, qrels, ["auc(unjudged=nonrel)", "auc"])
    assert scores.values["auc(unjudged=nonrel)"][0] == 1.0  # p above both u and n
    assert scores.values["auc"][0] == 1.0


def test_without_held_scores_rank_order_stands_in() -> None:
    run = {"q": {"a": 1.0, "b": 1.0, "c": 0.5}}
    qrels = qrels_from_dict({"q": {"a": 1, "b": 0, "c": 0}})
    spec = parse_metric("auc")
    with_scores = rank_judgments(run, qrels, None, scores=True)
    ranks_only = rank_judgments(run, qrels, None)
    assert spec.measure.compute(spec, with_scores)[0] == pytest.approx(0.75)  # a ties b
    # Ranked b (doc id descending), a, c: a is above c only.
    assert spec.measure.compute(spec, ranks_only)[0] == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("auc(unjudged=zero)", "bad value 'zero'"),
        ("gauc(weight=clicks)", "bad value 'clicks'"),
        ("auc(p=0.8)", "has no parameter 'p'"),
        ("auc@0", "positive integer"),
    ],
)
def test_bad_parameters_say_what_is_allowed(text: str, message: str) -> None:
    with pytest.raises(MetricError, match=message):
        parse_metric(text)


def test_canonical_names_leave_defaults_out() -> None:
    assert str(parse_metric("AUC(rel=1,unjudged=skip)")) == "auc"
    assert str(parse_metric("gauc(weight=docs)@20")) == "gauc@20"
    assert str(parse_metric("gauc(unjudged=nonrel,weight=uniform)")) == (
        "gauc(unjudged=nonrel,weight=uniform)"
    )
