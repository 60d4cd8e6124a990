"""What compare refuses before any test runs, through the command line."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval_gate.core.reported import MAX_MEASURE
from retrieval_gate.errors import GateError
from retrieval_gate.gate.checks.compare_inputs import checked_slices, scores_of
from tests.helpers.cli import run_cli
from tests.helpers.paths import CONFIGS


def test_a_metric_computed_past_any_real_value_is_refused_naming_it(tmp_path: Path) -> None:
    # Gains of 1e300 make a dcg whose squares overflow a float: refused, not tested.
    tiny = Path(shutil.copytree(CONFIGS / "tiny", tmp_path / "tiny"))
    config = tiny / "retrieval-gate.yaml"
    text = config.read_text(encoding="utf-8")
    config.write_text(
        text.replace("  ap@10: {}\n", "  ap@10: {}\n  dcg(gains=1:1e300;2:1e300;3:1e300)@10: {}\n"),
        encoding="utf-8",
    )
    assert run_cli("baseline", "-c", config, "--force").ret == 0
    code, _, err = run_cli("check", "-c", config, "--no-reports")
    assert code == 2, err
    assert "error: baseline scores of dcg(gains=1:1" in err
    assert (
        "e+300, past 1e+15 either way, where the gate's statistics would overflow; give the "
        "metric smaller gains or grades"
    ) in err


def test_a_value_of_max_measure_either_way_is_compared_and_one_past_it_refused() -> None:
    edge = np.array([0.5, MAX_MEASURE, -MAX_MEASURE])
    assert scores_of("current", {"latency_p50": edge}, "latency_p50").tolist() == edge.tolist()
    for sign in (1.0, -1.0):
        past = np.array([0.5, 0.5, sign * np.nextafter(MAX_MEASURE, np.inf)])
        with pytest.raises(GateError, match="current scores of latency_p50: the query at index 2"):
            scores_of("current", {"latency_p50": past}, "latency_p50")


def test_scores_are_one_finite_value_per_query_or_nan_where_undefined() -> None:
    with pytest.raises(GateError, match=r"baseline has no scores for metric mrr@10 \(it has: "):
        scores_of("baseline", {"ndcg@10": np.zeros(3)}, "mrr@10")
    with pytest.raises(GateError, match="must be one value per query"):
        scores_of("baseline", {"ndcg@10": np.zeros((3, 1))}, "ndcg@10")
    with pytest.raises(GateError, match="contain NaN or infinite values"):
        scores_of("baseline", {"ndcg@10": np.array([0.1, np.nan])}, "ndcg@10")
    with pytest.raises(GateError, match="contain NaN or infinite values"):
        scores_of("baseline", {"auc": np.array([0.1, np.inf])}, "auc")
    kept = scores_of("baseline", {"auc": np.array([0.1, np.nan])}, "auc")  # a one-class query
    assert kept[0] == 0.1
    assert np.isnan(kept[1])


def test_a_slice_s_indices_are_within_the_queries_scored() -> None:
    arrays = {"ndcg@10": (np.zeros(4), np.zeros(4))}
    thresholds = {"ndcg@10": object()}

    def slices(index: list[int]) -> dict[str, Any]:
        return checked_slices(arrays, {"all": np.arange(4), "s": np.array(index)}, thresholds, {})

    assert slices([0, 3])["s"].tolist() == [0, 3]
    assert slices([])["s"].tolist() == []
    for index in ([-1, 2], [0, 4], [-2]):
        with pytest.raises(GateError, match=r"slice s: query indices must be within \[0, 4\)"):
            slices(index)
    with pytest.raises(GateError, match="slice s: a query is listed more than once"):
        slices([1, 1])


def test_an_override_of_a_metric_without_a_threshold_lists_those_with_one() -> None:
    arrays = {"ndcg@10": (np.zeros(4), np.zeros(4))}
    slices = {"all": np.arange(4)}
    override = {"intent=a": {"mrr@10": object()}}
    message = "threshold override for slice intent=a names metric mrr@10, which has no threshold"
    with pytest.raises(GateError, match=message + r" \(metrics: ndcg@10, recall@10\)"):
        checked_slices(arrays, slices, {"ndcg@10": object(), "recall@10": object()}, override)
    with pytest.raises(GateError, match=message + r" \(metrics: none\)"):
        checked_slices(arrays, slices, {}, override)


def test_a_missing_metric_names_the_metrics_the_side_has_or_none() -> None:
    scores = {"recall@10": np.zeros(2), "mrr@10": np.zeros(2)}
    with pytest.raises(GateError) as raised:
        scores_of("baseline", scores, "ndcg@10")
    assert str(raised.value) == (
        "baseline has no scores for metric ndcg@10 (it has: mrr@10, recall@10)"
    )
    with pytest.raises(GateError, match=r"^current has no scores for metric m \(it has: none\)$"):
        scores_of("current", {}, "m")
