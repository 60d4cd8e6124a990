"""Metrics undefined for some queries (auc, gauc) in the gate: compared on the queries defined
on both sides, per check and per slice, counted and said; NaN still refused for the others."""

from __future__ import annotations

import math

import numpy as np
import pytest

from retrieval_gate.core.top_k_ids import TopKIds
from retrieval_gate.errors import GateError
from retrieval_gate.gate.baseline.document import baseline_document, from_document
from retrieval_gate.gate.baseline.record import Baseline, Fingerprints
from retrieval_gate.gate.baseline.repeats import averaged, mean_of_runs
from retrieval_gate.gate.checks.compare import ComparisonSettings, Threshold, compare
from retrieval_gate.gate.checks.undefined import defined_mean, excluded_warnings

N = 80
SETTINGS = ComparisonSettings(min_size=10, resamples=2_000)


def _sides(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    base = rng.uniform(0.4, 0.9, N)
    current = base - 0.03 + rng.normal(0, 0.05, N)
    return base, current


def test_a_check_compares_the_queries_defined_on_both_sides() -> None:
    base, current = _sides(np.random.default_rng(1))
    base_nan, current_nan = base.copy(), current.copy()
    base_nan[[0, 1, 2]] = np.nan
    current_nan[[2, 3]] = np.nan  # query 2 is undefined on both sides: counted once
    slices = {"all": np.arange(N), "first": np.arange(20)}
    thresholds = {"auc": Threshold(max_drop=0.02)}
    found = compare({"auc": base_nan}, {"auc": current_nan}, slices, thresholds, {}, SETTINGS)
    kept = np.arange(4, N)
    by_slice = {c.slice: c for c in found}
    overall = by_slice["all"]
    assert (overall.n, overall.excluded) == (N - 4, 4)
    assert overall.baseline_mean == pytest.approx(base[kept].mean())
    assert overall.delta == pytest.approx((current[kept] - base[kept]).mean())
    # The same check on the defined queries alone, as a metric that is never undefined.
    alone = compare(
        {"ndcg": base[kept]},
        {"ndcg": current[kept]},
        {"all": np.arange(len(kept))},
        {"ndcg": Threshold(max_drop=0.02)},
        {},
        SETTINGS,
    )[0]
    assert overall.p_value == pytest.approx(alone.p_value, rel=1e-9)
    assert overall.ci_low == pytest.approx(alone.ci_low, rel=1e-12)
    assert overall.detectable_drop == pytest.approx(alone.detectable_drop, rel=1e-9)
    assert overall.verdict == alone.verdict == "regressed"
    assert alone.excluded == 0  # a metric that is never undefined leaves no query out
    assert excluded_warnings([alone]) == []
    first = by_slice["first"]
    assert (first.n, first.excluded) == (16, 4)
    (warning,) = excluded_warnings(found)
    assert warning.startswith("auc: 4 of 80 queries undefined on a side")
    assert warning.endswith("compare the other 76")


def test_min_size_counts_the_defined_queries() -> None:
    base, current = _sides(np.random.default_rng(2))
    base[:15] = np.nan  # the slice of 20 keeps 5 defined queries
    slices = {"all": np.arange(N), "first": np.arange(20)}
    found = compare(
        {"gauc": base}, {"gauc": current}, slices, {"gauc": Threshold(max_drop=0.02)}, {}, SETTINGS
    )
    first = next(c for c in found if c.slice == "first")
    assert not first.gated
    assert first.reason == "5 defined queries, below min_size 10"
    assert first.excluded == 15


def test_a_slice_of_exactly_min_size_defined_queries_is_gated() -> None:
    base, current = _sides(np.random.default_rng(2))
    base[:10] = np.nan  # the slice of 20 keeps 10 defined queries, min_size 10
    slices = {"all": np.arange(N), "first": np.arange(20)}
    found = compare(
        {"gauc": base}, {"gauc": current}, slices, {"gauc": Threshold(max_drop=0.02)}, {}, SETTINGS
    )
    first = next(c for c in found if c.slice == "first")
    assert (first.n, first.excluded, first.reason, first.gated) == (10, 10, "", True)


def test_a_slice_with_no_defined_query_is_not_gated() -> None:
    base, current = _sides(np.random.default_rng(3))
    base[:20] = np.nan
    slices = {"all": np.arange(N), "first": np.arange(20)}
    found = compare(
        {"auc": base}, {"auc": current}, slices, {"auc": Threshold(max_drop=0.02)}, {}, SETTINGS
    )
    first = next(c for c in found if c.slice == "first")
    assert (first.n, first.gated, first.reason) == (0, False, "no queries defined on both sides")


@pytest.mark.parametrize("metric", ["ndcg@10", "recall@100", "latency_p95", "ragas:auc_like"])
def test_nan_is_still_refused_for_a_metric_that_cannot_be_undefined(metric: str) -> None:
    base, current = _sides(np.random.default_rng(4))
    current[5] = np.nan
    with pytest.raises(GateError, match="contain NaN or infinite values"):
        compare(
            {metric: base},
            {metric: current},
            {"all": np.arange(N)},
            {metric: Threshold(max_drop=0.02)},
            {},
            SETTINGS,
        )


def test_infinity_is_refused_even_for_auc() -> None:
    base, current = _sides(np.random.default_rng(5))
    current[5] = np.inf
    with pytest.raises(GateError, match="contain NaN or infinite values"):
        compare(
            {"auc": base},
            {"auc": current},
            {"all": np.arange(N)},
            {"auc": Threshold(max_drop=0.02)},
            {},
            SETTINGS,
        )


def _record(scores: dict[str, np.ndarray], ids: tuple[str, ...]) -> Baseline:
    return Baseline(
        schema_version=1,
        tool_version="0",
        created_at="",
        git_commit=None,
        git_dirty=None,
        fingerprints=Fingerprints(
            dataset="d", k=10, metrics=tuple(scores), slices="s", retriever="r"
        ),
        retriever={},
        slice_definition={},
        query_ids=ids,
        scores=scores,
        top_k=TopKIds.of({}),
    )


def test_a_baseline_stores_undefined_as_null_and_reads_it_back_as_nan() -> None:
    ids = ("a", "b", "c")
    record = _record(
        {"auc": np.array([0.5, np.nan, 1.0]), "ndcg@10": np.array([0.1, 0.2, 0.3])}, ids
    )
    document = baseline_document(record, clock=False)
    assert document["scores"]["auc"] == [0.5, None, 1.0]
    read = from_document(document, "b.json", "", clock=False)
    assert read.scores["auc"][0] == 0.5
    assert math.isnan(read.scores["auc"][1])
    assert read.scores["ndcg@10"].tolist() == [0.1, 0.2, 0.3]


def test_a_baseline_refuses_nan_and_null_for_other_metrics() -> None:
    ids = ("a", "b")
    with pytest.raises(ValueError, match="finite scores only"):
        baseline_document(_record({"ndcg@10": np.array([0.1, np.nan])}, ids), clock=False)
    document = baseline_document(_record({"ndcg@10": np.array([0.1, 0.2])}, ids), clock=False)
    document["scores"]["ndcg@10"][1] = None
    with pytest.raises(Exception, match=r"scores\.ndcg@10\[1\]: null, but ndcg@10 is defined"):
        from_document(document, "b.json", "", clock=False)


def test_repeats_average_over_the_runs_that_define_a_query() -> None:
    ids = ("a", "b", "c")
    runs = [
        _record({"auc": np.array([0.2, np.nan, np.nan])}, ids),
        _record({"auc": np.array([0.4, 0.6, np.nan])}, ids),
    ]
    mean = averaged(runs)
    assert mean.scores["auc"][:2].tolist() == pytest.approx([0.3, 0.6])
    assert math.isnan(mean.scores["auc"][2])
    # The file keeps the runs and the mean; reading checks one is the other's mean.
    read = from_document(baseline_document(mean, clock=False), "b.json", "", clock=False)
    assert read.scores["auc"][:2].tolist() == pytest.approx([0.3, 0.6])
    assert read.repeats is not None
    assert math.isnan(read.repeats.runs[0]["auc"][1])


def test_means_of_defined_values() -> None:
    assert defined_mean(np.array([np.nan, 1.0, 0.0])) == 0.5
    assert defined_mean(np.array([np.nan])) == 0.0
    assert mean_of_runs([np.array([1.0, np.nan]), np.array([3.0, np.nan])]).tolist()[0] == 2.0
