"""A record read back holds only values its metrics can take; the file, field and query named."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from retrieval_gate.datasets.anchors import Anchor
from retrieval_gate.errors import InputError
from retrieval_gate.gate.baseline.document import baseline_document
from retrieval_gate.gate.baseline.file import read_baseline, write_baseline
from tests.helpers.baselines import FINGERPRINTS, make
from tests.helpers.builders import EXAMPLE_BASELINE, checked_tiny
from tests.helpers.cli import run_cli
from tests.helpers.paths import CONFIGS


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return checked_tiny(tmp_path_factory.mktemp("checked") / "tiny")


@pytest.fixture
def tiny(checked: Path, tmp_path: Path) -> Path:
    """A fresh copy of the checked project, for a test to spoil."""
    return Path(shutil.copytree(checked, tmp_path / "tiny"))


def compare(tiny: Path, baseline: Path, result: Path) -> tuple[int, str]:
    code, _, err = run_cli(
        "compare", baseline, result, "-c", tiny / "retrieval-gate.yaml", "--no-reports"
    )
    return code, err


@pytest.mark.parametrize(("metric", "value"), [("ndcg@10", 7.0), ("recall@10", -0.5)])
def test_compare_refuses_a_result_scored_outside_its_metric(
    tiny: Path, metric: str, value: float
) -> None:
    result = tiny / ".retrieval-gate" / "tiny" / "result.json"
    document = json.loads(result.read_text(encoding="utf-8"))
    document["current"]["scores"][metric][1] = value
    result.write_text(json.dumps(document), encoding="utf-8")
    code, err = compare(tiny, tiny / ".retrieval-gate" / "baseline.json", result)
    assert code == 2, err
    query = document["current"]["query_ids"][1]
    assert f"{result}: invalid baseline:" in err
    assert (
        f"current.scores.{metric}[1] (query {query!r}): {value!r} is outside [0, 1], the "
        f"values {metric} takes"
    ) in err


def test_compare_refuses_a_baseline_scored_outside_its_metric(tiny: Path) -> None:
    baseline = tiny / ".retrieval-gate" / "baseline.json"
    document = json.loads(baseline.read_text(encoding="utf-8"))
    document["scores"]["rr@10"][0] = 1.5
    baseline.write_text(json.dumps(document), encoding="utf-8")
    code, err = compare(tiny, baseline, tiny / ".retrieval-gate" / "tiny" / "result.json")
    assert code == 2, err
    query = document["query_ids"][0]
    assert f"{baseline}: invalid baseline:" in err
    assert f"scores.rr@10[0] (query {query!r}): 1.5 is outside [0, 1]" in err


def test_compare_refuses_a_baseline_cost_past_any_real_one(tiny: Path) -> None:
    # A cost of 1e300 overflowed the statistics, and the result then held no finite interval.
    config = tiny / "retrieval-gate.yaml"
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace("  ap@10: {}\n", "  ap@10: {}\n  cost_mean: {max: 5}\n"))
    baseline = tiny / ".retrieval-gate" / "baseline.json"
    result = tiny / ".retrieval-gate" / "tiny" / "result.json"
    for path, costs in ((baseline, [1e300, 1.0]), (result, [1.0, 1.0])):
        document = json.loads(path.read_text(encoding="utf-8"))
        record = document.get("current", document)
        record["fingerprints"]["metrics"].append("cost_mean")
        record["scores"]["cost_mean"] = costs + [1.0] * (len(record["query_ids"]) - 2)
        path.write_text(json.dumps(document), encoding="utf-8")
    code, err = compare(tiny, baseline, result)
    assert code == 2, err
    query = json.loads(baseline.read_text(encoding="utf-8"))["query_ids"][0]
    assert f"{baseline}: invalid baseline:" in err
    assert f"scores.cost_mean[0] (query {query!r}): 1e+300 is outside [0, 1e+15]" in err


CHUNKED = CONFIGS / ".retrieval-gate" / "example-chunked" / "baseline.json"


def test_chunk_anchors_read_back_as_written(tmp_path: Path) -> None:
    record = read_baseline(CHUNKED)
    assert record.chunk_anchors is not None
    assert record.chunk_anchors["kb-1101#0"] == Anchor("kb-1101", 0, 291, "bc50cfdb96369431")
    path = tmp_path / "baseline.json"
    write_baseline(record, path)
    assert read_baseline(path) == record


@pytest.mark.parametrize(
    ("span", "said"),
    [
        (["kb-1101", True, 291, "bc50cfdb96369431"], "chunk_anchors.kb-1101#0[1]"),
        (["kb-1101", -1, 291, "bc50cfdb96369431"], "chunk_anchors.kb-1101#0[1]"),
        (["kb-1101", 0, 291.5, "bc50cfdb96369431"], "chunk_anchors.kb-1101#0[2]"),
        (["kb-1101", 9, 3, "bc50cfdb96369431"], "end is before its start"),
        (["kb-1101", 0, 291, "::error::x"], "hash is 16 lowercase hex digits"),
        (["", 0, 291, "bc50cfdb96369431"], "chunk_anchors.kb-1101#0[0]"),
        (["x" * 1001, 0, 291, "bc50cfdb96369431"], "chunk_anchors.kb-1101#0[0]"),
        (["kb-1101", 0, 291], "chunk_anchors.kb-1101#0"),
        ({"source": "kb-1101"}, "chunk_anchors.kb-1101#0"),
        ([[[["kb-1101"]]], 0, 291, "bc50cfdb96369431"], "chunk_anchors.kb-1101#0[0]"),
    ],
)
def test_a_broken_chunk_anchor_is_an_input_error_naming_it(
    tmp_path: Path, span: object, said: str
) -> None:
    document = json.loads(CHUNKED.read_text(encoding="utf-8"))
    document["chunk_anchors"]["kb-1101#0"] = span
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(InputError, match="invalid baseline") as raised:
        read_baseline(path)
    assert said in str(raised.value)


def test_a_result_of_a_sequential_check_that_stopped_early_is_no_record() -> None:
    from retrieval_gate.gate.baseline.document import record_of

    current = json.loads((CONFIGS / EXAMPLE_BASELINE).read_text(encoding="utf-8"))
    stopped = {"stopped": True, "queries_run": 40, "queries_total": 400}
    with pytest.raises(InputError) as refused:
        record_of({"current": current, "sequential": stopped}, "result.json")
    assert "sequential: the check stopped early after 40 of 400 queries, so its record" in str(
        refused.value
    )
    # A check that ran every query (or a count that is no count) is read, or named plainly.
    ran = record_of({"current": current, "sequential": {**stopped, "stopped": False}}, "r.json")
    assert ran.query_ids == tuple(current["query_ids"])
    odd = {**stopped, "queries_run": True}
    with pytest.raises(InputError, match="stopped early, so its record"):
        record_of({"current": current, "sequential": odd}, "result.json")


def test_a_wrong_value_is_quoted_unless_it_is_a_whole_object_or_list(tmp_path: Path) -> None:
    document = json.loads((CONFIGS / EXAMPLE_BASELINE).read_text(encoding="utf-8"))
    path = tmp_path / "baseline.json"
    messages = []
    for k in ("3", [3], {"k": 3}):
        document["fingerprints"]["k"] = k
        path.write_text(json.dumps(document), encoding="utf-8")
        with pytest.raises(InputError) as refused:
            read_baseline(path)
        (line,) = [x for x in str(refused.value).splitlines() if "fingerprints.k:" in x]
        messages.append(line)
    assert messages[0].endswith("fingerprints.k: Input should be a valid integer (got '3')")
    assert messages[1].endswith("fingerprints.k: Input should be a valid integer")
    assert messages[2].endswith("fingerprints.k: Input should be a valid integer")


def test_the_scores_are_written_in_the_config_s_metric_order_then_any_other_sorted() -> None:
    reordered = dataclasses.replace(FINGERPRINTS, metrics=("recall@10", "ndcg@10"))
    record = make(fingerprints=reordered)
    assert list(baseline_document(record)["scores"]) == ["recall@10", "ndcg@10"]
    # A record holding a metric its fingerprints do not name writes it after theirs.
    extra = dict(record.scores) | {"mrr@10": np.array([1.0, 0.5, 0.0])}
    document = baseline_document(dataclasses.replace(record, scores=extra))
    assert list(document["scores"]) == ["recall@10", "ndcg@10", "mrr@10"]


def test_null_is_written_only_where_a_metric_may_be_undefined_or_unmeasured(
    tmp_path: Path,
) -> None:
    nan = float("nan")
    metrics = ("auc", "latency_p95", "ndcg@10")
    scores = {"auc": [nan, 0.5, 1.0], "latency_p95": [12.5, nan, 3.0], "ndcg@10": [0.1, 0.2, 0.3]}
    record = make(fingerprints=dataclasses.replace(FINGERPRINTS, metrics=metrics), scores=scores)
    document = baseline_document(record)
    assert document["scores"] == {
        "auc": [None, 0.5, 1.0],
        "latency_p95": [12.5, None, 3.0],
        "ndcg@10": [0.1, 0.2, 0.3],
    }
    write_baseline(record, tmp_path / "baseline.json")
    assert read_baseline(tmp_path / "baseline.json") == record
    undefined = dataclasses.replace(
        record, scores=dict(record.scores) | {"ndcg@10": np.array(scores["auc"])}
    )
    with pytest.raises(ValueError, match=r"scores\['ndcg@10'\] of query 'q1' is nan; a baseline"):
        baseline_document(undefined)
