"""Measures the oracle files do not reach, by hand: the counts with and without a cutoff,
plain DCG, and the example each registered measure shows."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from retrieval_gate.errors import MetricError
from retrieval_gate.metrics import evaluate, parse_metric
from retrieval_gate.metrics.spec import REGISTRY

QRELS = {"long": {"d1": 1, "d4": 2, "d9": 0}, "short": {"d1": 1, "x": 1}, "none": {"d1": 1}}
RUN = {
    "long": {f"d{i}": 10.0 - i for i in range(10)},  # d0 first ... d9 last
    "short": {"d1": 2.0, "d2": 1.0},
}


@pytest.mark.parametrize(
    ("metric", "expected"),
    [
        ("num_ret", [10, 0, 2]),
        ("num_ret@5", [5, 0, 2]),
        ("num_ret@20", [10, 0, 2]),  # a cutoff past the list counts what was returned
        ("num_rel_ret", [2, 0, 1]),
        ("num_rel_ret@3", [1, 0, 1]),
        ("num_rel_ret(rel=2)@10", [1, 0, 0]),
        ("num_rel", [2, 1, 2]),
    ],
)
def test_counts_per_query(metric: str, expected: list[int]) -> None:
    scores = evaluate(RUN, QRELS, [metric])
    assert scores.query_ids == ("long", "none", "short")
    assert scores.values[metric].tolist() == expected


@pytest.mark.parametrize(
    ("metric", "gain"),
    [("dcg@5", lambda g: 2**g - 1), ("dcg(gain=linear)@5", lambda g: g)],
)
def test_dcg_sums_gain_over_log2_of_rank_plus_1(metric: str, gain: Callable[[int], float]) -> None:
    # "long" ranks d0 ... d9: d1 (grade 1) at rank 2, d4 (grade 2) at rank 5, d9 past 5.
    expected = gain(1) / math.log2(3) + gain(2) / math.log2(6)
    scores = evaluate(RUN, QRELS, [metric])
    assert scores.values[metric][0] == pytest.approx(expected, rel=1e-12)
    assert scores.values[metric][1] == 0.0  # nothing retrieved


def test_a_measure_shows_its_example_or_else_its_name() -> None:
    assert REGISTRY["ndcg"].example == "ndcg@10"
    assert REGISTRY["err"].example == "err(g_max=3)@20"
    assert REGISTRY["num_ret"].example == "num_ret"


def test_rr_of_queries_that_retrieved_nothing_is_0_each() -> None:
    scores = evaluate({"elsewhere": {"d1": 1.0}}, QRELS, ["rr@10", "rr"])
    assert {m: v.tolist() for m, v in scores.values.items()} == {
        "rr@10": [0.0, 0.0, 0.0],
        "rr": [0.0, 0.0, 0.0],
    }


@pytest.mark.parametrize("p", ["0", "1", "1.5", "-0.2"])
def test_rbp_persistence_must_be_strictly_between_0_and_1(p: str) -> None:
    with pytest.raises(MetricError, match="rbp"):
        parse_metric(f"rbp(p={p})")
    assert str(parse_metric("rbp(p=0.95)")) == "rbp(p=0.95)"


def test_a_grade_past_1023_under_exp_gain_is_refused_by_name() -> None:
    """2^2000 is past the largest float: nDCG's exp gain made NaN (and a CLI exit 3); it is
    refused, naming the metric and the grade, while the linear gain scores it."""
    qrels = {"q": {"a": 2000, "b": 1}}
    run = {"q": {"a": 2.0, "b": 1.0}}
    with pytest.raises(MetricError, match=r"^ndcg@10: a grade of 2000 under gain=exp"):
        evaluate(run, qrels, ["ndcg@10"])
    assert evaluate(run, qrels, ["ndcg(gain=linear)@10"]).values["ndcg(gain=linear)@10"][0] == 1
    assert evaluate(run, {"q": {"a": 1023, "b": 1}}, ["ndcg@10"]).values["ndcg@10"][0] == 1


@pytest.mark.parametrize("g_max", [1.0, 3.0, 4.5, 60.0, 2000.0])
def test_err_satisfaction_needs_no_power_past_the_largest_float(g_max: float) -> None:
    """R = (2^g - 1) / 2^g_max as 2^(g - g_max) - 2^-g_max: the same values where 2^g_max is
    a float, and a user satisfied at rank 1 (ERR 1) by a grade of g_max = 2000."""
    grades = [0.0, 0.5, 1.0, 2.0, 3.0, g_max]
    qrels = {f"q{i}": {"a": g, "b": 0} for i, g in enumerate(grades)}
    run = {f"q{i}": {"a": 2.0, "b": 1.0} for i in range(len(grades))}
    metric = f"err(g_max={g_max:g})@5"
    found = evaluate(run, qrels, [metric]).values[metric]
    for grade, value in zip(grades, found, strict=True):
        capped = min(grade, g_max)
        expected = (2.0**capped - 1.0) / 2.0**g_max if g_max < 1000 else 2.0 ** (capped - g_max)
        assert value == pytest.approx(expected, rel=1e-12, abs=1e-300)
    assert found[-1] == pytest.approx(1.0 - 2.0**-g_max)
