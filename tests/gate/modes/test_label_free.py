"""The label-free columns (overlap, RBO, lost, ANN recall) and their comparison."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval_gate.config.unlabelled import UnlabelledConfig
from retrieval_gate.errors import GateError
from retrieval_gate.gate.checks.compare import ComparisonSettings, Threshold
from retrieval_gate.gate.modes.label_free import (
    LabelFreeCheck,
    ann_columns,
    checks_of,
    label_free_comparisons,
    overlap_columns,
    pairs,
)

OVERLAP = LabelFreeCheck(
    name="overlap@4", measure="overlap", k=4, threshold=Threshold(max_drop=0.05)
)
LOST = LabelFreeCheck(
    name="lost@4>1",
    measure="lost",
    k=4,
    threshold=Threshold(max_drop=0.05, direction="lower"),
    more_than=1,
)
RBO = LabelFreeCheck(name="rbo@4", measure="rbo", k=4, threshold=Threshold(max_drop=0.05), p=0.9)
ANN = LabelFreeCheck(name="ann_recall@4", measure="ann_recall", k=4, threshold=Threshold(floor=0.9))


def test_checks_are_named_and_thresholded_from_the_config() -> None:
    config = UnlabelledConfig.model_validate(
        {
            "queries": "q.jsonl",
            "checks": {
                "overlap@10": {"max_drop": "5pt", "min": 0.5},
                "lost@10": {"more_than": 3, "max_share": "5%", "max": 0.2},
                "rbo@20": {"p": 0.8},
            },
        }
    )
    overlap, lost, rbo = checks_of(config)
    assert (overlap.name, overlap.k, overlap.threshold) == (
        "unlabelled:overlap@10",
        10,
        Threshold(max_drop=0.05, floor=0.5),
    )
    assert (lost.name, lost.more_than) == ("unlabelled:lost@10>3", 3)
    assert lost.threshold == Threshold(max_drop=0.05, floor=0.2, direction="lower")
    assert (rbo.name, rbo.p, rbo.threshold.report_only) == ("unlabelled:rbo@20", 0.8, True)


def test_pairs_match_the_reference_own_runs() -> None:
    assert pairs(1, 1) == 1
    assert pairs(2, 2) == 1
    assert pairs(3, 3) == 2
    assert pairs(3, 1) == 1
    for reference, current in ((0, 1), (2, 0)):
        with pytest.raises(GateError, match="the label-free checks need a run of each side"):
            pairs(reference, current)


def test_overlap_columns_pair_reference_self_agreement_with_cross_agreement() -> None:
    ids = ["q1", "q2"]
    r1 = {"q1": list("abcd"), "q2": list("wxyz")}
    r2 = {"q1": list("abce"), "q2": list("wxyz")}
    c1 = {"q1": list("abcd"), "q2": list("wxab")}
    before, after = overlap_columns([OVERLAP, LOST, RBO, ANN], ids, [r1, r2], [c1, c1])
    assert set(before) == {"overlap@4", "lost@4>1", "rbo@4"}  # ANN needs an exact run
    assert before["overlap@4"].tolist() == [0.75, 1.0]
    assert after["overlap@4"].tolist() == [1.0, 0.5]
    assert before["lost@4>1"].tolist() == [0.0, 0.0]
    assert after["lost@4>1"].tolist() == [0.0, 1.0]
    assert after["rbo@4"][0] == pytest.approx(1.0)
    # One reference run: its agreement with itself is the reference side.
    before, _ = overlap_columns([OVERLAP], ids, [r1], [c1])
    assert before["overlap@4"].tolist() == [1.0, 1.0]
    # A query the current side answered with nothing lost every document.
    _, after = overlap_columns([OVERLAP], ids, [r1], [{"q1": list("abcd")}])
    assert after["overlap@4"].tolist() == [1.0, 0.0]


def test_ann_recall_is_the_share_of_the_exact_top_k_found() -> None:
    exact = {"q1": list("abcd"), "q2": list("wxyz")}
    approximate = [{"q1": list("abcq"), "q2": list("wxyz")}]
    before, after = ann_columns([OVERLAP, ANN], ["q1", "q2"], exact, approximate)
    assert list(before) == ["ann_recall@4"]
    assert before["ann_recall@4"].tolist() == [1.0, 1.0]
    assert after["ann_recall@4"].tolist() == [0.75, 1.0]


def _index(n: int) -> dict[str, np.ndarray]:
    return {"all": np.arange(n, dtype=np.int64)}


def test_a_lossy_index_fails_its_floor_and_a_faithful_one_passes() -> None:
    ids = [f"q{i}" for i in range(60)]
    exact = {q: [f"{q}-{j}" for j in range(4)] for q in ids}
    lossy = [{q: [*exact[q][:2], "x", "y"] for q in ids}]
    settings = ComparisonSettings(resamples=500)
    found = label_free_comparisons(
        [ANN], ann_columns([ANN], ids, exact, lossy), _index(60), settings
    )
    assert [(c.metric, c.failed, round(c.current_mean, 2)) for c in found] == [
        ("ann_recall@4", True, 0.5)
    ]
    found = label_free_comparisons(
        [ANN], ann_columns([ANN], ids, exact, [exact]), _index(60), settings
    )
    assert not found[0].failed
    assert found[0].current_mean == 1.0


def test_queries_that_lose_their_top_k_fail_the_overlap_checks() -> None:
    ids = [f"q{i}" for i in range(80)]
    reference = {q: [f"{q}-{j}" for j in range(4)] for q in ids}
    current = {
        q: (reference[q] if i % 4 else ["n1", "n2", *reference[q][:2]]) for i, q in enumerate(ids)
    }
    columns = overlap_columns([OVERLAP, LOST], ids, [reference], [current])
    found = label_free_comparisons(
        [OVERLAP, LOST], columns, _index(80), ComparisonSettings(resamples=500)
    )
    assert {c.metric: c.failed for c in found} == {"overlap@4": True, "lost@4>1": True}
    same = overlap_columns([OVERLAP, LOST], ids, [reference], [reference])
    found = label_free_comparisons(
        [OVERLAP, LOST], same, _index(80), ComparisonSettings(resamples=500)
    )
    assert not any(c.failed for c in found)


def test_no_columns_no_comparisons() -> None:
    assert label_free_comparisons([ANN], ({}, {}), _index(3), ComparisonSettings()) == ()
